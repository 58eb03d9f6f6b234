package firewall

import (
	"slices"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

// ParseMode returns the firewall mode s names. Empty means enforce, the
// default: a security control that ships off protects nobody. Case and
// surrounding space are ignored. Returns EINVALID naming the valid modes for
// anything else.
func ParseMode(s string) (string, error) {
	switch m := strings.ToLower(strings.TrimSpace(s)); m {
	case "":
		return ingestd.ModeEnforce, nil
	case ingestd.ModeEnforce, ingestd.ModeShadow, ingestd.ModeOff:
		return m, nil
	}
	return "", ingestd.Errorf(ingestd.EINVALID, "firewall mode %q is not one of %s, %s, %s",
		s, ingestd.ModeEnforce, ingestd.ModeShadow, ingestd.ModeOff)
}

// Decide returns the turn-level verdict for an answer grounded on the
// documents docIDs, which must list the documents of all three blocks
// (primary, expanded, rejected). tiers holds each document's tier in force
// (provenance.Declarations.Tiers: its stored stamp judged by the
// declaration in force), read server-side from the store, never taken from
// the caller.
//
// A document is untrusted when provenance.Untrusted says so
// (untrusted-external or any value this build does not know; undeclared
// is not) or when tiers has no entry for it. Its provenance is unknown
// when tiers has no entry for it (gone from the store between the search
// and the verdict) or holds a value this build does not know: nothing
// says what wrote it. The untrusted ids (unknown ones included) are
// listed sorted and unique, never nil, in every mode.
//
// The verdict is graded by tool class (ingestd.ToolClass). enforce allows
// every class when no document is untrusted (ToolsAllowed); only
// closed-world reads (ingestd.ToolRead) when one is, with reason
// untrusted_grounding; and no class when one's provenance is unknown,
// with reason unknown_provenance. shadow allows every class and reports
// in WouldBlock and Reason what enforce would do; off allows every class
// with reason firewall_off. A mode ParseMode would refuse is decided, and
// reported, as enforce. Decide never reads content.
func Decide(mode string, docIDs []string, tiers map[string]ingestd.Tier) ingestd.Verdict {
	untrusted := make([]string, 0, len(docIDs))
	unknown := false
	for _, id := range docIDs {
		t, ok := tiers[id]
		switch {
		case !ok || t != "" && !provenance.Valid(t):
			unknown = true
			untrusted = append(untrusted, id)
		case provenance.Untrusted(t):
			untrusted = append(untrusted, id)
		}
	}
	slices.Sort(untrusted)
	untrusted = slices.Compact(untrusted)

	block := len(untrusted) > 0
	reason, enforced := ingestd.ReasonNoUntrusted, ingestd.AllToolClasses()
	switch {
	case unknown:
		reason, enforced = ingestd.ReasonUnknownProvenance, ingestd.ToolClasses{}
	case block:
		reason, enforced = ingestd.ReasonUntrusted, ingestd.ToolClasses{ingestd.ToolRead}
	}
	v := ingestd.Verdict{Mode: mode, Reason: reason, UntrustedDocumentIDs: untrusted, WouldBlock: block,
		ToolsAllowed: true, AllowedToolClasses: ingestd.AllToolClasses()}
	switch mode {
	case ingestd.ModeShadow:
	case ingestd.ModeOff:
		v.Reason, v.WouldBlock = ingestd.ReasonOff, false
	default:
		v.Mode = ingestd.ModeEnforce
		v.ToolsAllowed, v.AllowedToolClasses = !block, enforced
	}
	return v
}

// UntrustedTurnClasses is what a turn that served untrusted text (of
// known provenance) may use under mode: the report's policy line.
func UntrustedTurnClasses(mode string) ingestd.ToolClasses {
	if mode == ingestd.ModeShadow || mode == ingestd.ModeOff {
		return ingestd.AllToolClasses()
	}
	return ingestd.ToolClasses{ingestd.ToolRead}
}
