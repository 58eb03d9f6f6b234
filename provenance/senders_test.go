package provenance

import (
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
)

func mailbox(vs *ingestd.VerifiedSenders) ingestd.Installation {
	return ingestd.Installation{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal, VerifiedSenders: vs}
}

var boundary = &ingestd.VerifiedSenders{AuthservID: "mx.example.com", Domains: []string{"example.com"}, Tier: ingestd.TierTrustedInternal}

// TestVerifiedSenders: the rule raises exactly the mail whose reported
// facts match the declaration, and nothing else.
func TestVerifiedSenders(t *testing.T) {
	verified := map[string]string{ingestd.MetaSenderVerifiedDomain: "example.com", ingestd.MetaSenderVerifiedBy: "mx.example.com"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range verified {
			m[a] = b
		}
		if v == "" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name string
		vs   *ingestd.VerifiedSenders
		meta map[string]string
		want ingestd.Tier
	}{
		{"verified internal mail", boundary, verified, ingestd.TierTrustedInternal},
		{"domain in another case", boundary, with(ingestd.MetaSenderVerifiedDomain, "Example.COM"), ingestd.TierTrustedInternal},
		{"no declaration", nil, verified, ingestd.TierUntrustedExternal},
		{"no facts (missing header, failed check, forged From)", boundary, nil, ingestd.TierUntrustedExternal},
		{"verified for a domain not listed", boundary, with(ingestd.MetaSenderVerifiedDomain, "partner.test"), ingestd.TierUntrustedExternal},
		{"subdomain not listed", boundary, with(ingestd.MetaSenderVerifiedDomain, "eu.example.com"), ingestd.TierUntrustedExternal},
		{"verified by another authserv-id", boundary, with(ingestd.MetaSenderVerifiedBy, "mx.attacker.test"), ingestd.TierUntrustedExternal},
		{"domain without who verified it", boundary, with(ingestd.MetaSenderVerifiedBy, ""), ingestd.TierUntrustedExternal},
		{"forwards an attached message", boundary, with(ingestd.MetaDerivedContent, "attached_message"), ingestd.TierUntrustedExternal},
		{"holds a forwarded block", boundary, with(ingestd.MetaDerivedContent, "forwarded"), ingestd.TierUntrustedExternal},
	}
	for _, tt := range tests {
		if got := Declared(mailbox(tt.vs), tt.meta); got != tt.want {
			t.Errorf("%s: Declared = %q, want %q", tt.name, got, tt.want)
		}
	}
	// With a tier_by rule as well, the most restrictive match wins.
	inst := mailbox(boundary)
	inst.TierByMeta = map[string]map[string]ingestd.Tier{"mailbox": {"Bots": ingestd.TierMachineGenerated}}
	if got := Declared(inst, with("mailbox", "Bots")); got != ingestd.TierMachineGenerated {
		t.Errorf("verified mail in the Bots mailbox: %q, want machine-generated", got)
	}
}

// TestVerifiedSendersInForce: a verified stamp holds only while the
// declaration in force still says so; the stamp is never overruled
// upwards, and the store keeps the facts the rule reads.
func TestVerifiedSendersInForce(t *testing.T) {
	facts := ingestd.TierFacts{Installation: "support", SourceKind: "imap", Tier: ingestd.TierTrustedInternal,
		Meta: map[string]string{ingestd.MetaSenderVerifiedDomain: "example.com", ingestd.MetaSenderVerifiedBy: "mx.example.com"}}
	if got := Declare([]ingestd.Installation{mailbox(boundary)}).InForce(facts); got != ingestd.TierTrustedInternal {
		t.Errorf("under the declaration: %q", got)
	}
	if got := Declare([]ingestd.Installation{mailbox(nil)}).InForce(facts); got != ingestd.TierUntrustedExternal {
		t.Errorf("declaration removed: %q, want untrusted-external at once", got)
	}
	moved := *boundary
	moved.AuthservID = "mx2.example.com"
	if got := Declare([]ingestd.Installation{mailbox(&moved)}).InForce(facts); got != ingestd.TierUntrustedExternal {
		t.Errorf("another boundary declared: %q, want untrusted-external", got)
	}
	stampedLow := facts
	stampedLow.Tier = ingestd.TierUntrustedExternal
	if got := Declare([]ingestd.Installation{mailbox(boundary)}).InForce(stampedLow); got != ingestd.TierUntrustedExternal {
		t.Errorf("stamped untrusted, declaration trusts: %q, want the stamp (never raised)", got)
	}
	d := Declare([]ingestd.Installation{mailbox(boundary)})
	for _, k := range []string{ingestd.MetaSenderVerifiedDomain, ingestd.MetaSenderVerifiedBy, ingestd.MetaDerivedContent} {
		if !slices.Contains(d.MetaKeys(), k) {
			t.Errorf("MetaKeys %v lacks %s", d.MetaKeys(), k)
		}
	}
	if insts, _ := d.Reach([]ingestd.Tier{ingestd.TierTrustedInternal}); !slices.Contains(insts, "support") {
		t.Errorf("Reach(trusted-internal) = %v: a search for trusted documents must look in the mailbox", insts)
	}
}
