package retrieval_test

import (
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/retrieval"
)

// TestProvenanceTierInForce: the corpus report counts tiers in force, so a
// configuration change shows in it at once, with the orphaned documents
// counted and their installation listed as not configured.
func TestProvenanceTierInForce(t *testing.T) {
	tests := []struct {
		name     string
		insts    []ingestd.Installation
		external int // documents whose tier in force is untrusted-external
		orphaned int
		unlisted string // an installation listed as not configured (kind "")
	}{
		{name: "as stamped", insts: declared(), external: 1},
		{name: "installation re-declared untrusted", insts: declared(wikiUntrusted), external: 5},
		{name: "installation removed", insts: declared(wikiRemoved), external: 5, orphaned: 4, unlisted: "wiki"},
		{name: "installation renamed", insts: declared(wikiRenamed), external: 5, orphaned: 4, unlisted: "wiki"},
		{name: "installation kind changed", insts: declared(wikiKindChanged), external: 5, orphaned: 4},
		{name: "rule removed", insts: declared(repoRuleRemoved), external: 3},
		{name: "rule narrowed", insts: declared(repoRuleNarrowed), external: 2},
		{name: "re-declared trusted waits for a re-stamp", insts: declared(repoTrusted), external: 1},
		{name: "rule added to a mailbox", insts: declared(mailRuleAdded), external: 3},
		{name: "nothing configured", insts: nil, external: 11, orphaned: 11},
	}
	eachStore(t, inForceCorpus(), func(t *testing.T, s ingestd.Store, e ingestd.Embedder) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, Installations: tt.insts})
				if err != nil {
					t.Fatal(err)
				}
				rep, err := svc.Provenance(t.Context(), ingestd.ProvenanceRequest{})
				if err != nil {
					t.Fatal(err)
				}
				if rep.Total != 11 || rep.ExternallyAuthored != tt.external || rep.Orphaned != tt.orphaned || rep.Undeclared != 1 {
					t.Errorf("report: total %d, externally authored %d, orphaned %d, undeclared %d; want 11, %d, %d, 1",
						rep.Total, rep.ExternallyAuthored, rep.Orphaned, rep.Undeclared, tt.external, tt.orphaned)
				}
				var untrusted int
				for _, share := range rep.Tiers {
					if share.Tier == string(ingestd.TierUntrustedExternal) {
						untrusted = share.Count
					}
					if share.Tier == provenance.Undeclared {
						t.Errorf("a tier in force is undeclared: %+v", rep.Tiers)
					}
				}
				if untrusted != tt.external {
					t.Errorf("untrusted-external share counts %d, want %d", untrusted, tt.external)
				}
				if tt.unlisted != "" {
					var found bool
					for _, in := range rep.Installations {
						if in.ID == tt.unlisted {
							found = in.Kind == "" && in.Tier == "" && in.Documents == tt.orphaned
						}
					}
					if !found {
						t.Errorf("installations = %+v, want %s listed as not configured with %d documents", rep.Installations, tt.unlisted, tt.orphaned)
					}
				}
			})
		}
	})
}
