package retrieval

import (
	"context"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

// ground makes grounding auto's choice over the primary rankings r (hits
// is their fusion): when untrusted documents hold no better evidence for
// the query than the other tiers, the answer leaves them out of every
// block (a.trustedOnly), counts the ones primary would have held, and
// primary is picked from the rankings without them. It returns the hits
// to pick primary from.
//
// The choice reads the rankers' scores, never the verdict's inputs: it
// changes what is served, and the verdict is then computed over what was
// served as for any answer.
func (a *answer) ground(ctx context.Context, r rankings, hits []ingestd.Hit) ([]ingestd.Hit, error) {
	ids := make([]string, 0, len(r.text)+len(r.vec))
	for _, h := range r.text {
		ids = append(ids, h.DocumentID)
	}
	for _, h := range r.vec {
		ids = append(ids, h.DocumentID)
	}
	tiers, err := a.inForce(ctx, ids)
	if err != nil {
		return nil, err
	}
	untrusted := func(h ingestd.Hit) bool { return provenance.Untrusted(tiers[h.DocumentID]) }
	if needsExternal(r, untrusted) {
		return hits, nil
	}
	a.trustedOnly = true
	for _, h := range pickPrimary(hits, a.p.topK, a.s.perDoc) {
		if untrusted(h) {
			a.excluded[h.DocumentID] = true
		}
	}
	keep := func(hs []ingestd.Hit) []ingestd.Hit {
		out := make([]ingestd.Hit, 0, len(hs))
		for _, h := range hs {
			if !untrusted(h) {
				out = append(out, h)
			}
		}
		return out
	}
	return Fuse(keep(r.text), keep(r.vec)), nil
}

// needsExternal reports whether an untrusted chunk answers the query
// better than every other: its full-text score beats the best trusted
// one's. Full-text relevance weighs each query word by how rare it is, so
// a chunk that carries the query's names and numbers outscores one that
// shares its common words. When the full-text ranking found nothing, the
// vector ranking decides the same way.
func needsExternal(r rankings, untrusted func(ingestd.Hit) bool) bool {
	ranking := r.text
	if len(ranking) == 0 {
		ranking = r.vec
	}
	var bestT, bestU float64
	for _, h := range ranking {
		if untrusted(h) {
			bestU = max(bestU, h.Score)
		} else {
			bestT = max(bestT, h.Score)
		}
	}
	return bestU > 0 && bestU > groundingMargin*bestT
}

// groundingMargin is how many times the best trusted score an untrusted
// chunk's must exceed.
var groundingMargin = 1.0
