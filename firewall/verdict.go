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
// A document is untrusted when provenance.Untrusted says so (untrusted-external
// or any value this build does not know; undeclared is not) or when tiers has
// no entry for it (fail closed). The untrusted ids are listed sorted and
// unique, never nil, in every mode.
//
// enforce blocks tools when any document is untrusted; shadow allows them and
// reports in WouldBlock and Reason what enforce would do; off allows them with
// reason firewall_off. A mode ParseMode would refuse is decided, and reported,
// as enforce. Decide never reads content.
func Decide(mode string, docIDs []string, tiers map[string]ingestd.Tier) ingestd.Verdict {
	untrusted := make([]string, 0, len(docIDs))
	for _, id := range docIDs {
		if t, ok := tiers[id]; !ok || provenance.Untrusted(t) {
			untrusted = append(untrusted, id)
		}
	}
	slices.Sort(untrusted)
	untrusted = slices.Compact(untrusted)

	block := len(untrusted) > 0
	reason := ingestd.ReasonNoUntrusted
	if block {
		reason = ingestd.ReasonUntrusted
	}
	v := ingestd.Verdict{Mode: mode, Reason: reason, UntrustedDocumentIDs: untrusted, WouldBlock: block}
	switch mode {
	case ingestd.ModeShadow:
		v.ToolsAllowed = true
	case ingestd.ModeOff:
		v.ToolsAllowed, v.Reason, v.WouldBlock = true, ingestd.ReasonOff, false
	default:
		v.Mode = ingestd.ModeEnforce
		v.ToolsAllowed = !block
	}
	return v
}
