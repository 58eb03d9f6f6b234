package provenance

import (
	"math"
	"sort"

	"github.com/ingestd/ingestd"
)

// Report folds the store's counts (Store.CountDocuments with MetaKeys)
// into the corpus report. Configured installations are listed in the order they
// were declared, with zero when they hold no documents; installations that
// hold documents but are no longer configured follow, with kind "" and
// tier "". Stored tiers this build does not know count as
// untrusted-external.
func (d *Declarations) Report(counts []ingestd.DocumentCount, firewallMode string) ingestd.ProvenanceReport {
	r := ingestd.ProvenanceReport{Policy: ingestd.ReportPolicy{FirewallMode: firewallMode}, Tiers: []ingestd.TierShare{}, Installations: []ingestd.InstallationReport{}}
	byTier := map[string]int{}
	byInst := map[string]map[string]int{}
	for _, c := range counts {
		t := d.InForce(c.TierFacts)
		name := Name(t)
		r.Total += c.Count
		byTier[name] += c.Count
		if c.Tier == "" {
			r.Undeclared += c.Count
		} else {
			r.Declared += c.Count
		}
		if !d.Configured(c.Installation, c.SourceKind) {
			r.Orphaned += c.Count
		}
		if Untrusted(t) {
			r.ExternallyAuthored += c.Count
		}
		if byInst[c.Installation] == nil {
			byInst[c.Installation] = map[string]int{}
		}
		byInst[c.Installation][name] += c.Count
	}
	r.ExternallyAuthoredPct = pct(r.ExternallyAuthored, r.Total)
	r.Tiers = shares(byTier, r.Total)

	seen := map[string]bool{}
	if d != nil {
		for _, id := range d.order {
			in := d.insts[id]
			seen[id] = true
			r.Installations = append(r.Installations, instReport(in.ID, in.Kind, Name(in.Tier), byInst[id]))
		}
	}
	var orphans []string
	for id := range byInst {
		if !seen[id] {
			orphans = append(orphans, id)
		}
	}
	sort.Strings(orphans)
	for _, id := range orphans {
		r.Installations = append(r.Installations, instReport(id, "", "", byInst[id]))
	}
	return r
}

func instReport(id, kind, tier string, counts map[string]int) ingestd.InstallationReport {
	n := 0
	for _, c := range counts {
		n += c
	}
	ir := ingestd.InstallationReport{ID: id, Kind: kind, Tier: tier, Documents: n, Tiers: []ingestd.TierShare{}}
	for _, s := range shares(counts, n) {
		if s.Count > 0 {
			ir.Tiers = append(ir.Tiers, s)
		}
	}
	return ir
}

// shares lists the three declared tiers always, then undeclared when present.
func shares(counts map[string]int, total int) []ingestd.TierShare {
	out := make([]ingestd.TierShare, 0, len(Tiers)+1)
	for _, t := range Tiers {
		out = append(out, ingestd.TierShare{Tier: string(t), Count: counts[string(t)], Pct: pct(counts[string(t)], total)})
	}
	if n := counts[Undeclared]; n > 0 {
		out = append(out, ingestd.TierShare{Tier: Undeclared, Count: n, Pct: pct(n, total)})
	}
	return out
}

func pct(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return math.Round(float64(n)*1000/float64(total)) / 10
}
