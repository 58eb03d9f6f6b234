package gateway

// LaneCalls is how many calls the gateway took on the lane (FastCall).
func LaneCalls(g *Gateway) int64 { return g.laneCalls.Load() }
