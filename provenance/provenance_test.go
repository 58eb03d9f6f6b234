package provenance_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

// What a stored tier means: the three declared tiers mean themselves,
// undeclared stays undeclared and allowed, anything else is
// untrusted-external.
func TestResolve(t *testing.T) {
	tests := []struct {
		name      string
		stored    ingestd.Tier
		valid     bool
		resolved  ingestd.Tier
		untrusted bool
		display   string
	}{
		{"trusted-internal", trusted, true, trusted, false, "trusted-internal"},
		{"machine-generated", machine, true, machine, false, "machine-generated"},
		{"untrusted-external", untrusted, true, untrusted, true, "untrusted-external"},
		{"undeclared", "", false, "", false, "undeclared"},
		{"unknown value", "partner-v2", false, untrusted, true, "untrusted-external"},
		{"another case", "Trusted-Internal", false, untrusted, true, "untrusted-external"},
		{"padded", " trusted-internal", false, untrusted, true, "untrusted-external"},
		{"the display name of undeclared", provenance.Undeclared, false, untrusted, true, "untrusted-external"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := provenance.Valid(tt.stored); got != tt.valid {
				t.Errorf("Valid(%q) = %v, want %v", tt.stored, got, tt.valid)
			}
			if got := provenance.Resolve(tt.stored); got != tt.resolved {
				t.Errorf("Resolve(%q) = %q, want %q", tt.stored, got, tt.resolved)
			}
			if got := provenance.Untrusted(tt.stored); got != tt.untrusted {
				t.Errorf("Untrusted(%q) = %v, want %v", tt.stored, got, tt.untrusted)
			}
			if got := provenance.Name(tt.stored); got != tt.display {
				t.Errorf("Name(%q) = %q, want %q", tt.stored, got, tt.display)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		want    ingestd.Tier
		wantErr bool
	}{
		{"trusted-internal", trusted, false},
		{"  machine-generated\n", machine, false},
		{"untrusted-external", untrusted, false},
		{"", "", true},
		{"undeclared", "", true},
		{"TRUSTED-INTERNAL", "", true},
		{"partner", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := provenance.Parse(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("Parse(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
			if err == nil {
				return
			}
			if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), provenance.ValidList()) {
				t.Errorf("error %v: want EINVALID naming the valid tiers", err)
			}
		})
	}
}

// Derived content takes the most restrictive of its sources; undeclared
// counts only when nothing is declared; unknown values count as
// untrusted-external.
func TestMostRestrictive(t *testing.T) {
	tests := []struct {
		name string
		in   []ingestd.Tier
		want ingestd.Tier
	}{
		{"none", nil, ""},
		{"one", []ingestd.Tier{trusted}, trusted},
		{"machine over trusted", []ingestd.Tier{trusted, machine}, machine},
		{"untrusted over all", []ingestd.Tier{machine, untrusted, trusted}, untrusted},
		{"order does not matter", []ingestd.Tier{untrusted, trusted}, untrusted},
		{"undeclared never loses a declared tier", []ingestd.Tier{"", trusted, ""}, trusted},
		{"only undeclared", []ingestd.Tier{"", ""}, ""},
		{"unknown is untrusted", []ingestd.Tier{trusted, "partner-v2"}, untrusted},
		{"unknown alone resolves", []ingestd.Tier{"partner-v2"}, untrusted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := provenance.MostRestrictive(tt.in...); got != tt.want {
				t.Errorf("MostRestrictive(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		name    string
		p       provenance.Policy
		wantErr string
	}{
		{"complete", provenance.Policy{Allowed: []ingestd.Tier{untrusted}, Why: "strangers write here"}, ""},
		{"any tier", provenance.AnyTier("the owner decides who writes"), ""},
		{"no tier", provenance.Policy{Why: "strangers write here"}, "allows no tier"},
		{"invalid tier", provenance.Policy{Allowed: []ingestd.Tier{"partner"}, Why: "x"}, `invalid tier "partner"`},
		{"undeclared is not a tier to allow", provenance.Policy{Allowed: []ingestd.Tier{""}, Why: "x"}, "invalid tier"},
		{"no reason", provenance.Policy{Allowed: []ingestd.Tier{untrusted}, Why: "  "}, "does not say why"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	external := provenance.Policy{Allowed: []ingestd.Tier{untrusted, machine}, Why: "x"}
	for _, tt := range []struct {
		t    ingestd.Tier
		want bool
	}{{untrusted, true}, {machine, true}, {trusted, false}, {"", false}} {
		if got := external.Allows(tt.t); got != tt.want {
			t.Errorf("Allows(%q) = %v, want %v", tt.t, got, tt.want)
		}
	}
	anyTier := provenance.AnyTier("x")
	for _, tier := range provenance.Tiers {
		if !anyTier.Allows(tier) {
			t.Errorf("AnyTier does not allow %q", tier)
		}
	}
	// AnyTier's list is its own: changing it leaves Tiers alone.
	anyTier.Allowed[0] = "changed"
	if provenance.Tiers[0] != trusted {
		t.Fatal("AnyTier shares its slice with Tiers")
	}
	if got, want := provenance.ValidList(), "trusted-internal, machine-generated, untrusted-external"; got != want {
		t.Errorf("ValidList = %q, want %q", got, want)
	}
}
