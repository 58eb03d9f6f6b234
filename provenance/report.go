package provenance

import (
	"math"
	"sort"

	"github.com/ingestd/ingestd"
)

// Report is the corpus report over not-deleted documents: how much of the
// corpus was written outside the organisation, beside whether that can
// drive a tool call (the firewall mode). Tiers, ExternallyAuthored and each
// installation's breakdown count tiers in force (Declarations.InForce);
// Declared and Undeclared count the stored stamps, since "100% trusted
// with 0 declared" has not been assessed. Orphaned counts the documents
// whose installation is no longer configured (or is configured with
// another connector kind): they count as untrusted-external.
type Report struct {
	Total                 int                  `json:"total"`
	Declared              int                  `json:"declared"`
	Undeclared            int                  `json:"undeclared"`
	Orphaned              int                  `json:"orphaned"`
	ExternallyAuthored    int                  `json:"externally_authored"`
	ExternallyAuthoredPct float64              `json:"externally_authored_pct"`
	Tiers                 []TierShare          `json:"tiers"`
	Installations         []InstallationReport `json:"installations"`
	Policy                ReportPolicy         `json:"policy"`
}

// TierShare is one tier's count and share of the total.
type TierShare struct {
	Tier  string  `json:"tier"`
	Count int     `json:"count"`
	Pct   float64 `json:"pct"`
}

// InstallationReport is one installation's line of the report. Tiers breaks
// its documents down by tier in force: an installation whose connector
// restricts some items (a public repo's strangers), or whose tier_by rules
// trust some (its maintainers), shows both.
type InstallationReport struct {
	ID        string      `json:"id"`
	Kind      string      `json:"kind"`
	Tier      string      `json:"tier"`
	Documents int         `json:"documents"`
	Tiers     []TierShare `json:"tiers"`
}

// ReportPolicy is the firewall setting the counts are to be read beside.
type ReportPolicy struct {
	FirewallMode string `json:"firewall_mode"`
}

// Report folds the store's counts (Store.CountDocuments with MetaKeys)
// into the report. Configured installations are listed in the order they
// were declared, with zero when they hold no documents; installations that
// hold documents but are no longer configured follow, with kind "" and
// tier "". Stored tiers this build does not know count as
// untrusted-external.
func (d *Declarations) Report(counts []ingestd.DocumentCount, firewallMode string) Report {
	r := Report{Policy: ReportPolicy{FirewallMode: firewallMode}, Tiers: []TierShare{}, Installations: []InstallationReport{}}
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

func instReport(id, kind, tier string, counts map[string]int) InstallationReport {
	n := 0
	for _, c := range counts {
		n += c
	}
	ir := InstallationReport{ID: id, Kind: kind, Tier: tier, Documents: n, Tiers: []TierShare{}}
	for _, s := range shares(counts, n) {
		if s.Count > 0 {
			ir.Tiers = append(ir.Tiers, s)
		}
	}
	return ir
}

// shares lists the three declared tiers always, then undeclared when present.
func shares(counts map[string]int, total int) []TierShare {
	out := make([]TierShare, 0, len(Tiers)+1)
	for _, t := range Tiers {
		out = append(out, TierShare{Tier: string(t), Count: counts[string(t)], Pct: pct(counts[string(t)], total)})
	}
	if n := counts[Undeclared]; n > 0 {
		out = append(out, TierShare{Tier: Undeclared, Count: n, Pct: pct(n, total)})
	}
	return out
}

func pct(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return math.Round(float64(n)*1000/float64(total)) / 10
}
