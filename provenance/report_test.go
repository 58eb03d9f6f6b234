package provenance_test

import (
	"reflect"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

// TestReport: the corpus report's totals, shares and per-installation
// lines, by tier in force, for corpora that exercise each rule.
func TestReport(t *testing.T) {
	count := func(f ingestd.TierFacts, n int) ingestd.DocumentCount {
		return ingestd.DocumentCount{TierFacts: f, Count: n}
	}
	share := func(tier ingestd.Tier, n int, pct float64) ingestd.TierShare {
		name := string(tier)
		if tier == "" {
			name = provenance.Undeclared
		}
		return ingestd.TierShare{Tier: name, Count: n, Pct: pct}
	}
	none := []ingestd.TierShare{share(trusted, 0, 0), share(machine, 0, 0), share(untrusted, 0, 0)}
	legacy := ingestd.Installation{ID: "legacy", Kind: "files"} // declared nothing: its documents stay undeclared
	tests := []struct {
		name   string
		insts  []ingestd.Installation
		counts []ingestd.DocumentCount
		mode   string
		want   ingestd.ProvenanceReport
	}{
		{
			name: "empty corpus", insts: []ingestd.Installation{handbook}, mode: ingestd.ModeShadow,
			want: ingestd.ProvenanceReport{Tiers: none, Policy: ingestd.ReportPolicy{FirewallMode: ingestd.ModeShadow},
				Installations: []ingestd.InstallationReport{{ID: "handbook", Kind: "files", Tier: "trusted-internal", Tiers: []ingestd.TierShare{}}}},
		},
		{
			name: "shares are rounded to a tenth", insts: []ingestd.Installation{handbook, bots, repo}, mode: ingestd.ModeEnforce,
			counts: []ingestd.DocumentCount{
				count(facts("handbook", "files", trusted, nil), 1),
				count(facts("bots", "webhook", machine, nil), 1),
				count(facts("repo", "github", untrusted, nil), 1),
			},
			want: ingestd.ProvenanceReport{Total: 3, Declared: 3, ExternallyAuthored: 1, ExternallyAuthoredPct: 33.3,
				Tiers:  []ingestd.TierShare{share(trusted, 1, 33.3), share(machine, 1, 33.3), share(untrusted, 1, 33.3)},
				Policy: ingestd.ReportPolicy{FirewallMode: ingestd.ModeEnforce},
				Installations: []ingestd.InstallationReport{
					{ID: "handbook", Kind: "files", Tier: "trusted-internal", Documents: 1, Tiers: []ingestd.TierShare{share(trusted, 1, 100)}},
					{ID: "bots", Kind: "webhook", Tier: "machine-generated", Documents: 1, Tiers: []ingestd.TierShare{share(machine, 1, 100)}},
					{ID: "repo", Kind: "github", Tier: "untrusted-external", Documents: 1, Tiers: []ingestd.TierShare{share(untrusted, 1, 100)}},
				}},
		},
		{
			name: "unknown stamps count as untrusted, undeclared is listed last", insts: []ingestd.Installation{handbook, legacy}, mode: ingestd.ModeOff,
			counts: []ingestd.DocumentCount{
				count(facts("handbook", "files", "partner-v2", nil), 2),
				count(facts("handbook", "files", trusted, nil), 1),
				count(facts("legacy", "files", "", nil), 1),
			},
			want: ingestd.ProvenanceReport{Total: 4, Declared: 3, Undeclared: 1, ExternallyAuthored: 2, ExternallyAuthoredPct: 50,
				Tiers:  []ingestd.TierShare{share(trusted, 1, 25), share(machine, 0, 0), share(untrusted, 2, 50), share("", 1, 25)},
				Policy: ingestd.ReportPolicy{FirewallMode: ingestd.ModeOff},
				Installations: []ingestd.InstallationReport{
					{ID: "handbook", Kind: "files", Tier: "trusted-internal", Documents: 3, Tiers: []ingestd.TierShare{share(trusted, 1, 33.3), share(untrusted, 2, 66.7)}},
					{ID: "legacy", Kind: "files", Tier: provenance.Undeclared, Documents: 1, Tiers: []ingestd.TierShare{share("", 1, 100)}},
				}},
		},
		{
			name: "nothing configured: everything is orphaned and untrusted", mode: ingestd.ModeEnforce,
			counts: []ingestd.DocumentCount{
				count(facts("b", "files", trusted, nil), 1),
				count(facts("a", "imap", "", nil), 1),
			},
			want: ingestd.ProvenanceReport{Total: 2, Declared: 1, Undeclared: 1, Orphaned: 2, ExternallyAuthored: 2, ExternallyAuthoredPct: 100,
				Tiers:  []ingestd.TierShare{share(trusted, 0, 0), share(machine, 0, 0), share(untrusted, 2, 100)},
				Policy: ingestd.ReportPolicy{FirewallMode: ingestd.ModeEnforce},
				Installations: []ingestd.InstallationReport{ // orphans by id
					{ID: "a", Documents: 1, Tiers: []ingestd.TierShare{share(untrusted, 1, 100)}},
					{ID: "b", Documents: 1, Tiers: []ingestd.TierShare{share(untrusted, 1, 100)}},
				}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := provenance.Declare(tt.insts).Report(tt.counts, tt.mode)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Report =\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}
