package ingestd

import (
	"context"
	"time"
)

// GatewayDecision is one call of a gateway upstream tool that a tainted
// turn held: refused, asked about (a person's confirmation requested),
// confirmed or declined. It names the call by its hash, never by its
// arguments, which may carry what the turn read.
type GatewayDecision struct {
	At       time.Time `json:"at"`
	Upstream string    `json:"upstream"`
	Tool     string    `json:"tool"`
	Class    ToolClass `json:"class"`
	// Outcome is one of GatewayRefused, GatewayAsked, GatewayConfirmed,
	// GatewayDeclined.
	Outcome string `json:"outcome"`
	// TaintedBy names what tainted the turn: the untrusted documents a
	// retrieve served (by id), the untrusted tool outputs it read.
	TaintedBy string `json:"tainted_by"`
	// Scope is "turn" when the host named its turn, "session" when not.
	Scope    string `json:"scope"`
	CallHash string `json:"call_hash"`
	// Detail says why a refused call was refused.
	Detail string `json:"detail,omitempty"`
}

// Gateway decision outcomes.
const (
	GatewayRefused   = "refused"
	GatewayAsked     = "asked"
	GatewayConfirmed = "confirmed"
	GatewayDeclined  = "declined"
)

// GatewayLog serves the gateway's last decisions, newest first, at most
// limit of them (every one kept when limit <= 0).
type GatewayLog interface {
	GatewayDecisions(ctx context.Context, limit int) ([]GatewayDecision, error)
}
