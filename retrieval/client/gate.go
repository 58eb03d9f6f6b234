package client

import (
	"bytes"
	"encoding/json"
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
// or reason, or fields that contradict each other (tools allowed in
// enforce mode with untrusted grounding, a blocking verdict outside
// enforce mode, untrusted grounding without document ids, ...).
func Validate(v *ingestd.Verdict) error {
	if v == nil {
		return fmt.Errorf("verdict is absent")
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
		if v.Reason != ingestd.ReasonOff || !v.ToolsAllowed {
			return fmt.Errorf("off mode with reason %q or blocked tools", v.Reason)
		}
	default:
		return fmt.Errorf("unknown mode %q", v.Mode)
	}
	return nil
}

// wireVerdict detects absent fields: every field of a verdict must be
// present for it to count.
type wireVerdict struct {
	ToolsAllowed         *bool     `json:"tools_allowed"`
	Mode                 *string   `json:"mode"`
	Reason               *string   `json:"reason"`
	UntrustedDocumentIDs *[]string `json:"untrusted_document_ids"`
	WouldBlock           *bool     `json:"would_block"`
}

// VerdictFromJSON extracts the verdict from a raw POST /v1/retrieve (or
// Connect JSON) response body. It fails on garbled JSON, an absent verdict
// and a verdict missing any of its fields; it does not judge the values
// (AllowedTools does).
func VerdictFromJSON(body []byte) (*ingestd.Verdict, error) {
	var resp struct {
		Verdict *json.RawMessage `json:"verdict"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("parse response: %w", err)
	}
	if resp.Verdict == nil || bytes.Equal(bytes.TrimSpace(*resp.Verdict), []byte("null")) {
		return nil, fmt.Errorf("response has no verdict")
	}
	var w wireVerdict
	if err := json.Unmarshal(*resp.Verdict, &w); err != nil {
		return nil, fmt.Errorf("parse verdict: %w", err)
	}
	if w.ToolsAllowed == nil || w.Mode == nil || w.Reason == nil || w.UntrustedDocumentIDs == nil || w.WouldBlock == nil {
		return nil, fmt.Errorf("verdict is missing a field")
	}
	return &ingestd.Verdict{ToolsAllowed: *w.ToolsAllowed, Mode: *w.Mode, Reason: *w.Reason,
		UntrustedDocumentIDs: *w.UntrustedDocumentIDs, WouldBlock: *w.WouldBlock}, nil
}

// AllowedToolsJSON is AllowedTools over a raw POST /v1/retrieve response
// body: garbled JSON or a missing or incomplete verdict allows nothing
// (unless FailOpen).
func AllowedToolsJSON[T any](body []byte, tools []T, opts ...GateOption) []T {
	v, err := VerdictFromJSON(body)
	if err != nil {
		v = nil
	}
	return AllowedTools(v, tools, opts...)
}
