package provenance_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

const (
	trusted   = ingestd.TierTrustedInternal
	machine   = ingestd.TierMachineGenerated
	untrusted = ingestd.TierUntrustedExternal
)

var (
	handbook = ingestd.Installation{ID: "handbook", Kind: "files", Tier: trusted}
	bots     = ingestd.Installation{ID: "bots", Kind: "webhook", Tier: machine}
	// A public repository whose maintainers the owner trusts.
	repo = ingestd.Installation{ID: "repo", Kind: "github", Tier: untrusted,
		TierByMeta: map[string]map[string]ingestd.Tier{"author_association": {"OWNER": trusted, "MEMBER": trusted}}}
	// An internal mailbox that distrusts one sender domain.
	mail = ingestd.Installation{ID: "mail", Kind: "imap", Tier: trusted,
		TierByMeta: map[string]map[string]ingestd.Tier{"sender_domain": {"gmail.com": untrusted}, "mailbox": {"Bots": machine}}}
)

func facts(inst, kind string, tier ingestd.Tier, meta map[string]string) ingestd.TierFacts {
	return ingestd.TierFacts{Installation: inst, SourceKind: kind, Tier: tier, Meta: meta}
}

func withParent(f, p ingestd.TierFacts) ingestd.TierFacts {
	f.Parent = &p
	return f
}

func TestInForce(t *testing.T) {
	d := provenance.Declare([]ingestd.Installation{handbook, bots, repo, mail})
	owner := map[string]string{"author_association": "OWNER"}
	tests := []struct {
		name string
		f    ingestd.TierFacts
		want ingestd.Tier
	}{
		{"stamp as declared", facts("handbook", "files", trusted, nil), trusted},
		{"stamp more restrictive than the declaration", facts("handbook", "files", untrusted, nil), untrusted},
		{"declaration more restrictive than the stamp", facts("bots", "webhook", trusted, nil), machine},
		{"undeclared stamp takes a trusted declaration", facts("handbook", "files", "", nil), trusted},
		{"undeclared stamp takes an untrusted declaration", facts("repo", "github", "", nil), untrusted},
		{"unknown stamp stays untrusted", facts("handbook", "files", "partner-v2", nil), untrusted},
		{"orphaned: installation not configured", facts("wiki", "files", trusted, nil), untrusted},
		{"orphaned: undeclared stamp", facts("wiki", "files", "", nil), untrusted},
		{"orphaned: kind changed", facts("handbook", "url", trusted, nil), untrusted},
		{"rule still trusts the owner", facts("repo", "github", trusted, owner), trusted},
		{"rule trusts, stamp does not", facts("repo", "github", untrusted, owner), untrusted},
		{"no rule matches the stored metadata", facts("repo", "github", trusted, map[string]string{"author_association": "NONE"}), untrusted},
		{"metadata without the rule's key", facts("repo", "github", trusted, map[string]string{"number": "7"}), untrusted},
		{"rule restricts a trusted installation", facts("mail", "imap", trusted, map[string]string{"sender_domain": "gmail.com"}), untrusted},
		{"several rules match: the most restrictive", facts("mail", "imap", trusted, map[string]string{"sender_domain": "gmail.com", "mailbox": "Bots"}), untrusted},
		{"one rule of two matches", facts("mail", "imap", trusted, map[string]string{"sender_domain": "example.com", "mailbox": "Bots"}), machine},
		{"parent restricted by a rule", withParent(facts("mail", "imap", trusted, nil),
			facts("mail", "imap", trusted, map[string]string{"sender_domain": "gmail.com"})), untrusted},
		{"parent stamped untrusted since", withParent(facts("mail", "imap", trusted, nil), facts("mail", "imap", untrusted, nil)), untrusted},
		{"parent orphaned", withParent(facts("handbook", "files", trusted, nil), facts("wiki", "files", trusted, nil)), untrusted},
		{"parent undeclared", withParent(facts("handbook", "files", trusted, nil), facts("handbook", "files", "", nil)), trusted},
		{"parent trusted", withParent(facts("repo", "github", trusted, owner), facts("repo", "github", trusted, owner)), trusted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := d.InForce(tt.f); got != tt.want {
				t.Errorf("InForce = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestInForceFollowsDeclaration: the same stored facts under a declaration
// that changed, one step at a time.
func TestInForceFollowsDeclaration(t *testing.T) {
	member := facts("repo", "github", trusted, map[string]string{"author_association": "MEMBER"})
	owner := facts("repo", "github", trusted, map[string]string{"author_association": "OWNER"})
	stranger := facts("repo", "github", untrusted, map[string]string{"author_association": "NONE"})
	narrowed, removed, trusting := repo, repo, repo
	narrowed.TierByMeta = map[string]map[string]ingestd.Tier{"author_association": {"OWNER": trusted}}
	removed.TierByMeta = nil
	trusting.Tier, trusting.TierByMeta = trusted, nil
	tests := []struct {
		name                    string
		insts                   []ingestd.Installation
		owner, member, stranger ingestd.Tier
	}{
		{"as stamped", []ingestd.Installation{repo}, trusted, trusted, untrusted},
		{"rule narrowed", []ingestd.Installation{narrowed}, trusted, untrusted, untrusted},
		{"rule removed", []ingestd.Installation{removed}, untrusted, untrusted, untrusted},
		{"re-declared trusted: stamps wait for a sync", []ingestd.Installation{trusting}, trusted, trusted, untrusted},
		{"installation removed", nil, untrusted, untrusted, untrusted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := provenance.Declare(tt.insts)
			for _, c := range []struct {
				who  string
				f    ingestd.TierFacts
				want ingestd.Tier
			}{{"owner", owner, tt.owner}, {"member", member, tt.member}, {"stranger", stranger, tt.stranger}} {
				if got := d.InForce(c.f); got != c.want {
					t.Errorf("%s: InForce = %q, want %q", c.who, got, c.want)
				}
			}
		})
	}
}

// TestNilDeclarationsConfigureNothing: a missing declaration fails closed.
func TestNilDeclarationsConfigureNothing(t *testing.T) {
	var d *provenance.Declarations
	if got := d.InForce(facts("handbook", "files", trusted, nil)); got != untrusted {
		t.Errorf("InForce = %q, want untrusted-external", got)
	}
	if d.Configured("handbook", "files") || d.MetaKeys() != nil {
		t.Errorf("a nil declaration configures something")
	}
}

func TestDeclaredStampsWhatInForceJudges(t *testing.T) {
	for _, tt := range []struct {
		inst ingestd.Installation
		meta map[string]string
		want ingestd.Tier
	}{
		{repo, map[string]string{"author_association": "OWNER"}, trusted},
		{repo, map[string]string{"author_association": "NONE"}, untrusted},
		{repo, nil, untrusted},
		{mail, map[string]string{"mailbox": "Bots"}, machine},
		{mail, map[string]string{"mailbox": "Bots", "sender_domain": "gmail.com"}, untrusted},
		{handbook, map[string]string{"author_association": "OWNER"}, trusted},
	} {
		if got := provenance.Declared(tt.inst, tt.meta); got != tt.want {
			t.Errorf("Declared(%s, %v) = %q, want %q", tt.inst.ID, tt.meta, got, tt.want)
		}
		// A document stamped so is judged so while the declaration holds.
		d := provenance.Declare([]ingestd.Installation{tt.inst})
		if got := d.InForce(facts(tt.inst.ID, tt.inst.Kind, tt.want, tt.meta)); got != tt.want {
			t.Errorf("InForce of what Declared stamped = %q, want %q", got, tt.want)
		}
	}
	if got, want := provenance.Declare([]ingestd.Installation{handbook, repo, mail}).MetaKeys(), []string{"author_association", "mailbox", "sender_domain"}; !slices.Equal(got, want) {
		t.Errorf("MetaKeys = %v, want %v", got, want)
	}
}

func TestReach(t *testing.T) {
	d := provenance.Declare([]ingestd.Installation{handbook, bots, repo, mail})
	tests := []struct {
		name   string
		want   []ingestd.Tier
		insts  []string // nil: no narrowing
		stored []ingestd.Tier
	}{
		{"any", nil, nil, nil},
		{"untrusted reaches every installation, orphans too", []ingestd.Tier{trusted, untrusted}, nil, nil},
		{"trusted", []ingestd.Tier{trusted}, []string{"handbook", "mail", "repo"}, []ingestd.Tier{"", trusted}},
		{"trusted or machine (exclude_untrusted)", []ingestd.Tier{"", trusted, machine},
			[]string{"bots", "handbook", "mail", "repo"}, []ingestd.Tier{"", trusted, machine}},
		{"undeclared: no declared installation", []ingestd.Tier{""}, []string{}, []ingestd.Tier{""}},
		{"nothing", []ingestd.Tier{}, []string{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			insts, stored := d.Reach(tt.want)
			if !slices.Equal(insts, tt.insts) || (insts == nil) != (tt.insts == nil) {
				t.Errorf("installations = %#v, want %#v", insts, tt.insts)
			}
			if !slices.Equal(stored, tt.stored) {
				t.Errorf("stored = %v, want %v", stored, tt.stored)
			}
		})
	}
}

// factStore is a FactReader over a map.
type factStore struct {
	facts map[string]ingestd.TierFacts
	keys  []string
	err   error
}

func (s *factStore) TierFacts(_ context.Context, ids, keys []string) (map[string]ingestd.TierFacts, error) {
	s.keys = keys
	out := map[string]ingestd.TierFacts{}
	for _, id := range ids {
		if f, ok := s.facts[id]; ok {
			out[id] = f
		}
	}
	return out, s.err
}

func TestTiers(t *testing.T) {
	d := provenance.Declare([]ingestd.Installation{handbook, repo})
	s := &factStore{facts: map[string]ingestd.TierFacts{
		"a": facts("handbook", "files", trusted, nil),
		"b": facts("repo", "github", trusted, map[string]string{"author_association": "MEMBER"}),
		"c": facts("gone", "files", trusted, nil),
	}}
	got, err := d.Tiers(t.Context(), s, []string{"a", "b", "c", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]ingestd.Tier{"a": trusted, "b": trusted, "c": untrusted}
	if len(got) != len(want) {
		t.Errorf("Tiers = %v, want %v (an id the store does not hold is absent)", got, want)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("Tiers[%s] = %q, want %q", id, got[id], w)
		}
	}
	if !slices.Equal(s.keys, []string{"author_association"}) {
		t.Errorf("asked the store for keys %v", s.keys)
	}
	s.err = errors.New("store down")
	if _, err := d.Tiers(t.Context(), s, []string{"a"}); !errors.Is(err, s.err) {
		t.Errorf("err = %v, want the store's", err)
	}
}

func TestReportCountsTiersInForce(t *testing.T) {
	d := provenance.Declare([]ingestd.Installation{handbook, repo, {ID: "empty", Kind: "files", Tier: trusted}})
	count := func(f ingestd.TierFacts, n int) ingestd.DocumentCount {
		return ingestd.DocumentCount{TierFacts: f, Count: n}
	}
	r := d.Report([]ingestd.DocumentCount{
		count(facts("handbook", "files", trusted, nil), 4),
		count(facts("handbook", "files", "", nil), 1),
		count(facts("repo", "github", trusted, map[string]string{"author_association": "OWNER"}), 2),
		count(facts("repo", "github", trusted, map[string]string{"author_association": "NONE"}), 1), // a rule narrowed since
		count(facts("wiki", "files", trusted, nil), 2),                                              // no longer configured
	}, ingestd.ModeEnforce)
	if r.Total != 10 || r.Declared != 9 || r.Undeclared != 1 || r.Orphaned != 2 || r.ExternallyAuthored != 3 || r.ExternallyAuthoredPct != 30 {
		t.Errorf("report = %+v", r)
	}
	var ids []string
	for _, in := range r.Installations {
		ids = append(ids, in.ID)
	}
	if want := []string{"handbook", "repo", "empty", "wiki"}; !slices.Equal(ids, want) {
		t.Errorf("installations = %v, want %v (configured in order, then orphans)", ids, want)
	}
	if wiki := r.Installations[3]; wiki.Kind != "" || wiki.Tier != "" || wiki.Documents != 2 ||
		len(wiki.Tiers) != 1 || wiki.Tiers[0].Tier != string(untrusted) {
		t.Errorf("orphaned installation = %+v", wiki)
	}
	if hb := r.Installations[0]; hb.Documents != 5 || len(hb.Tiers) != 1 || hb.Tiers[0].Count != 5 {
		t.Errorf("handbook = %+v, want its undeclared document counted as trusted-internal", hb)
	}
}
