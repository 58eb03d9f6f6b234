package gateway

// LaneCalls is how many calls the gateway took on the lane (FastCall).
func LaneCalls(g *Gateway) int64 { return g.laneCalls.Load() }

// LanePassed is how many lane calls' results passed as the upstream wrote
// them.
func LanePassed(g *Gateway) int64 { return g.lanePassed.Load() }
