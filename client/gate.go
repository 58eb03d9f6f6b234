package client

import (
	"fmt"

	"github.com/ingestd/ingestd"
)

// GateOption changes how AllowedTools treats a verdict it cannot trust.
type GateOption func(*gate)

type gate struct{ failOpen bool }

// FailOpen makes AllowedTools allow every tool when the verdict is absent
// or malformed. A verdict that blocks still blocks. Use it only where a
// missing verdict is known to be harmless; the default fails closed.
func FailOpen() GateOption { return func(g *gate) { g.failOpen = true } }

// AllowedTools returns the tools the turn may use under v: all of them when
// the verdict allows tools, none when it blocks, and none when v is nil or
// malformed (see Validate) unless FailOpen is given. The input slice is
// never modified; the result is a copy or nil.
func AllowedTools[T any](v *ingestd.Verdict, tools []T, opts ...GateOption) []T {
	var g gate
	for _, o := range opts {
		o(&g)
	}
	if err := Validate(v); err != nil {
		if g.failOpen {
			return append([]T(nil), tools...)
		}
		return nil
	}
	if !v.ToolsAllowed {
		return nil
	}
	return append([]T(nil), tools...)
}

// Validate reports why a verdict cannot be trusted: nil, an unknown mode
// or reason, an empty document id, or fields that contradict each other
// (tools allowed in enforce mode with untrusted grounding, a blocking
// verdict outside enforce mode, untrusted grounding without document ids,
// would_block in off mode, ...).
func Validate(v *ingestd.Verdict) error {
	if v == nil {
		return fmt.Errorf("verdict is absent")
	}
	for _, id := range v.UntrustedDocumentIDs {
		if id == "" {
			return fmt.Errorf("an untrusted document id is empty")
		}
	}
	untrusted := len(v.UntrustedDocumentIDs) > 0
	switch v.Reason {
	case ingestd.ReasonNoUntrusted:
		if untrusted {
			return fmt.Errorf("reason %s with untrusted document ids", v.Reason)
		}
		if v.WouldBlock || !v.ToolsAllowed {
			return fmt.Errorf("reason %s but tools blocked or would block", v.Reason)
		}
	case ingestd.ReasonUntrusted:
		if !untrusted {
			return fmt.Errorf("reason %s without untrusted document ids", v.Reason)
		}
		if !v.WouldBlock {
			return fmt.Errorf("reason %s but would_block is false", v.Reason)
		}
	case ingestd.ReasonOff:
		if v.Mode != ingestd.ModeOff {
			return fmt.Errorf("reason %s in mode %q", v.Reason, v.Mode)
		}
	default:
		return fmt.Errorf("unknown reason %q", v.Reason)
	}
	switch v.Mode {
	case ingestd.ModeEnforce:
		if v.Reason == ingestd.ReasonUntrusted && v.ToolsAllowed {
			return fmt.Errorf("enforce mode allows tools over untrusted grounding")
		}
	case ingestd.ModeShadow:
		if !v.ToolsAllowed {
			return fmt.Errorf("shadow mode blocks tools")
		}
	case ingestd.ModeOff:
		if v.Reason != ingestd.ReasonOff || !v.ToolsAllowed || v.WouldBlock {
			return fmt.Errorf("off mode with reason %q, blocked tools or would_block", v.Reason)
		}
	default:
		return fmt.Errorf("unknown mode %q", v.Mode)
	}
	return nil
}

// AllowedToolsJSON is AllowedTools over a raw POST /v1/retrieve (or
// Connect JSON) response body: a body VerdictFromJSON cannot read with
// certainty, or a verdict Validate refuses, allows nothing (unless
// FailOpen).
func AllowedToolsJSON[T any](body []byte, tools []T, opts ...GateOption) []T {
	v, err := VerdictFromJSON(body)
	if err != nil {
		v = nil
	}
	return AllowedTools(v, tools, opts...)
}
