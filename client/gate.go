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

// AllowedTools returns the tools the turn may use under v when every tool
// is a write (no class declared): all of them when the verdict allows
// tools, none when it blocks, and none when v is nil or malformed (see
// Validate) unless FailOpen is given. AllowedToolsByClass keeps a
// host's closed-world reads over untrusted grounding. The input slice is
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
// or reason, an empty document id, an allowed_tool_classes that is not a
// set written in order (an unknown class, a repeat), or fields that
// contradict each other (tools allowed in enforce mode with untrusted
// grounding, a blocking verdict outside enforce mode, untrusted grounding
// without document ids, would_block in off mode, tools_allowed without
// every class or every class without tools_allowed, more than read over
// untrusted grounding, any class over unknown provenance, ...).
//
// A verdict whose AllowedToolClasses is nil (from a server older than
// the graded verdict, which sent none) is judged as its tools_allowed
// says: every class or none.
func Validate(v *ingestd.Verdict) error {
	if v == nil {
		return fmt.Errorf("verdict is absent")
	}
	for _, id := range v.UntrustedDocumentIDs {
		if id == "" {
			return fmt.Errorf("an untrusted document id is empty")
		}
	}
	classes := classesOf(v)
	if !classes.Canonical() {
		return fmt.Errorf("allowed_tool_classes %v is not a set of read, read_open, write in that order", classes)
	}
	if all := classes.Equal(ingestd.AllToolClasses()); all != v.ToolsAllowed {
		return fmt.Errorf("tools_allowed %v with allowed_tool_classes %v", v.ToolsAllowed, classes)
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
	case ingestd.ReasonUntrusted, ingestd.ReasonUnknownProvenance:
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
		switch {
		case v.Reason == ingestd.ReasonUntrusted && (classes.Has(ingestd.ToolReadOpen) || classes.Has(ingestd.ToolWrite)):
			return fmt.Errorf("enforce mode allows more than read over untrusted grounding")
		case v.Reason == ingestd.ReasonUnknownProvenance && len(classes) > 0:
			return fmt.Errorf("enforce mode allows tools over unknown provenance")
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

// classesOf is the verdict's classes, those its tools_allowed means when
// it carries none (a server older than the graded verdict).
func classesOf(v *ingestd.Verdict) ingestd.ToolClasses {
	switch {
	case v.AllowedToolClasses != nil:
		return v.AllowedToolClasses
	case v.ToolsAllowed:
		return ingestd.AllToolClasses()
	}
	return ingestd.ToolClasses{}
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
