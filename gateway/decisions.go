package gateway

import (
	"context"
	"sync"

	"github.com/ingestd/ingestd"
)

// maxDecisions is how many decisions a gateway keeps (the newest).
const maxDecisions = 500

var _ ingestd.GatewayLog = (*Gateway)(nil)

// decisions is a ring of the last maxDecisions decisions.
type decisions struct {
	mu   sync.Mutex
	ring []ingestd.GatewayDecision
	next int // where the next one goes once the ring is full
}

func (d *decisions) add(x ingestd.GatewayDecision) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ring) < maxDecisions {
		d.ring = append(d.ring, x)
		return
	}
	d.ring[d.next] = x
	d.next = (d.next + 1) % maxDecisions
}

// newest returns up to limit decisions, newest first.
func (d *decisions) newest(limit int) []ingestd.GatewayDecision {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.ring)
	if limit <= 0 || limit > n {
		limit = n
	}
	out := make([]ingestd.GatewayDecision, 0, limit)
	for i := 0; i < limit; i++ {
		// The newest is just before next (or the last appended).
		out = append(out, d.ring[(d.next-1-i+2*n)%n])
	}
	return out
}

// GatewayDecisions returns the gateway's last decisions (refused, asked,
// confirmed, declined calls), newest first, at most limit.
func (g *Gateway) GatewayDecisions(_ context.Context, limit int) ([]ingestd.GatewayDecision, error) {
	return g.decisions.newest(limit), nil
}

// decide records what the gateway decided of c in a turn tainted by why.
func (c *call) decide(outcome string, why *taint, hash, detail string) {
	scope := "turn"
	if c.turn == "" {
		scope = "session"
	}
	c.g.decisions.add(ingestd.GatewayDecision{
		At: c.g.o.Now(), Upstream: c.u.cfg.ID, Tool: c.tool, Class: c.decl.Class, Outcome: outcome,
		TaintedBy: why.String(), Scope: scope, CallHash: hash, Detail: detail,
	})
}
