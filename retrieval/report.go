package retrieval

import (
	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/provenance"
)

// report folds counts into the corpus report under d, with the policy
// line the firewall's mode makes: the mode and what a turn that served
// untrusted text may use under it (firewall.UntrustedTurnClasses).
func (s *Service) report(d *provenance.Declarations, counts []ingestd.DocumentCount) ingestd.ProvenanceReport {
	r := d.Report(counts, s.mode)
	byInst := map[string]int{}
	for _, c := range counts {
		if c.ReadersState == ingestd.ReadersUnmapped {
			r.Unmapped += c.Count
			byInst[c.Installation] += c.Count
		}
	}
	for i := range r.Installations {
		r.Installations[i].Unmapped = byInst[r.Installations[i].ID]
	}
	r.Policy.UntrustedTurnToolClasses = firewall.UntrustedTurnClasses(s.mode)
	return r
}
