// Package provenance owns what a tier means: which values are valid, how a
// stored value resolves (anything unrecognised is untrusted-external),
// which tier derived content inherits, the policy each connector kind must
// declare, the declaration in force that judges every stored stamp
// (Declarations: a document's tier in force), and the corpus report.
//
// It never reads content. Every other package asks Resolve and
// Declarations rather than comparing tier strings itself, so an unknown
// value, a re-declared or a removed installation fails closed in every
// surface at once.
package provenance

import (
	"fmt"
	"strings"

	"github.com/ingestd/ingestd"
)

// Tiers lists the declared tiers, most trusted first.
var Tiers = []ingestd.Tier{
	ingestd.TierTrustedInternal,
	ingestd.TierMachineGenerated,
	ingestd.TierUntrustedExternal,
}

// Undeclared is how reports and displays name the empty tier.
const Undeclared = "undeclared"

// Valid reports whether t is one of the three declared tiers.
func Valid(t ingestd.Tier) bool {
	switch t {
	case ingestd.TierTrustedInternal, ingestd.TierMachineGenerated, ingestd.TierUntrustedExternal:
		return true
	}
	return false
}

// Parse turns a configured tier into a Tier. The error names the valid tiers.
func Parse(s string) (ingestd.Tier, error) {
	t := ingestd.Tier(strings.TrimSpace(s))
	if !Valid(t) {
		return "", ingestd.Errorf(ingestd.EINVALID, "tier %q is not one of %s", s, ValidList())
	}
	return t, nil
}

// ValidList is the valid tiers as a comma-separated list, for messages.
func ValidList() string {
	parts := make([]string, len(Tiers))
	for i, t := range Tiers {
		parts[i] = string(t)
	}
	return strings.Join(parts, ", ")
}

// Resolve returns what a stored tier counts as. The declared tiers count as
// themselves; undeclared ("", NULL in a store) stays undeclared and is
// allowed; any other value — written by a newer node, left by a rollback,
// corrupted — counts as untrusted-external.
func Resolve(t ingestd.Tier) ingestd.Tier {
	if t == "" || Valid(t) {
		return t
	}
	return ingestd.TierUntrustedExternal
}

// Untrusted reports whether a stored tier blocks tools: untrusted-external
// and every unknown value do; undeclared and the trusted tiers do not.
func Untrusted(t ingestd.Tier) bool {
	return Resolve(t) == ingestd.TierUntrustedExternal
}

// Name is the display name of a stored tier after resolution.
func Name(t ingestd.Tier) string {
	if r := Resolve(t); r != "" {
		return string(r)
	}
	return Undeclared
}

// rank orders resolved tiers by restrictiveness.
func rank(t ingestd.Tier) int {
	switch Resolve(t) {
	case "":
		return 0
	case ingestd.TierTrustedInternal:
		return 1
	case ingestd.TierMachineGenerated:
		return 2
	default:
		return 3
	}
}

// MostRestrictive returns the most restrictive of the tiers, resolved:
// untrusted-external (or any unknown value) over machine-generated over
// trusted-internal. Undeclared inputs count only when every input is
// undeclared, so deriving from a declared source never loses its tier.
// Content derived from several sources (an attachment of a mail, a thread,
// a summary) takes this; curation never changes it.
func MostRestrictive(tiers ...ingestd.Tier) ingestd.Tier {
	var out ingestd.Tier
	for _, t := range tiers {
		if rank(t) > rank(out) {
			out = Resolve(t)
		}
	}
	return out
}

// Policy is what a connector kind declares about who can write into a
// source of that kind. Every kind states one in code; package connectors
// refuses to register a kind without it.
type Policy struct {
	// Allowed lists the tiers an installation of this kind may declare.
	Allowed []ingestd.Tier
	// Why says, in a sentence, who can author what this kind ingests and so
	// why these tiers are the ones allowed.
	Why string
}

// Validate reports whether the policy is complete.
func (p Policy) Validate() error {
	if len(p.Allowed) == 0 {
		return fmt.Errorf("policy allows no tier")
	}
	for _, t := range p.Allowed {
		if !Valid(t) {
			return fmt.Errorf("policy allows invalid tier %q", t)
		}
	}
	if strings.TrimSpace(p.Why) == "" {
		return fmt.Errorf("policy does not say why")
	}
	return nil
}

// Allows reports whether an installation of the kind may declare t.
func (p Policy) Allows(t ingestd.Tier) bool {
	for _, a := range p.Allowed {
		if a == t {
			return true
		}
	}
	return false
}

// AnyTier is the policy of a kind whose sources can be written by anyone
// the owner lets in, so only the owner can say: every tier is allowed.
func AnyTier(why string) Policy {
	return Policy{Allowed: append([]ingestd.Tier(nil), Tiers...), Why: why}
}
