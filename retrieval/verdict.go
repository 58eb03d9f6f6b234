// Verdict: the firewall's verdict over the three blocks, and the
// response that serves them.

package retrieval

import (
	"context"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/provenance"
)

// response computes the verdict over the three blocks from their tiers
// in force, read through the answer's tier view (only the documents no
// earlier stage asked about are read now), and builds the answer. Served
// tiers come from that same view, so what a chunk shows, what the stages
// filtered by and what the verdict counted agree.
func (a *answer) response(ctx context.Context) (*ingestd.RetrieveResponse, error) {
	var ids []string
	for _, block := range [][]served{a.primary, a.expanded, a.rejected} {
		for _, c := range block {
			ids = append(ids, c.view.DocumentID)
		}
	}
	ids = uniq(ids)
	tiers, err := a.inForce(ctx, ids)
	if err != nil {
		return nil, err
	}
	v := firewall.Decide(a.s.mode, ids, tiers)
	if v.UntrustedDocumentIDs == nil {
		v.UntrustedDocumentIDs = []string{}
	}
	resp := &ingestd.RetrieveResponse{
		Primary:  a.chunks(a.primary, tiers),
		Expanded: a.chunks(a.expanded, tiers),
		Rejected: a.chunks(a.rejected, tiers),
		Verdict:  &v,
	}
	if a.trustedOnly {
		resp.ExcludedUntrustedDocuments = len(a.excluded)
	}
	resp.Grounding = a.grounded
	return resp, nil
}

// chunks serves a block. A score below 0 (a neighbour whose vector
// points away from the query's) is shown as 0, no similarity: expanded
// chunks come by their relation, and a negative number would read as a
// rank below nothing.
func (a *answer) chunks(block []served, tiers map[string]ingestd.Tier) []ingestd.ServedChunk {
	out := make([]ingestd.ServedChunk, 0, len(block))
	for _, c := range block {
		t, ok := tiers[c.view.DocumentID]
		if !ok {
			t = ingestd.TierUntrustedExternal // gone from the store: firewall.Decide counts it so too
		}
		out = append(out, ingestd.ServedChunk{
			ChunkID: c.view.ID, DocumentID: c.view.DocumentID,
			Installation: c.view.Installation, SourceKind: c.view.SourceKind,
			URI: c.view.URI, Title: c.view.Title, Tier: provenance.Name(t),
			Score: max(c.score, 0), Fenced: c.view.Fenced, Text: c.view.Text, Via: c.via,
			HeadingPath: c.view.HeadingPath, Locator: c.view.Locator,
		})
	}
	return out
}
