// Rejected: the rejected block — dismissed approaches similar to the
// query, shown so the model does not propose them again.

package retrieval

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

// rejectedPicks are the rejected block's candidates: all under the
// request's own narrowing, trusted without untrusted documents (only when
// the answer may leave them out), and untrusted the untrusted documents
// all holds.
type rejectedPicks struct {
	all, trusted []served
	untrusted    []string
}

// rejectedBlock picks the rejected block: chunks of rejected documents,
// ranked like primary, one per document, whose similarity to the query
// reaches RejectedMinScore. When the answer may leave untrusted documents
// out (exclude_untrusted, grounding auto) it picks both with and without
// them; run keeps the one that matches the answer.
//
// It runs concurrently with primary and expansion, so it touches nothing
// of a but what it reads.
func (a *answer) rejectedBlock(ctx context.Context) (rejectedPicks, error) {
	pick := func(sc scope) ([]served, error) {
		if sc.empty {
			return nil, nil
		}
		sc.filter.Statuses = []ingestd.Status{ingestd.StatusRejected}
		hits, err := a.similar(ctx, sc, a.candidates(a.s.rejCap))
		if err != nil {
			return nil, err
		}
		hits = pickPrimary(hits, 4*a.s.rejCap, 1)
		views, err := a.views(ctx, hits)
		if err != nil {
			return nil, err
		}
		var out []served
		for _, h := range hits {
			v, ok := views[h.ChunkID]
			if !ok || v.DocumentStatus != ingestd.StatusRejected {
				continue
			}
			if sc := a.similarity(v.Chunk); sc >= a.s.rejMin {
				out = append(out, served{view: v, score: sc})
				if len(out) == a.s.rejCap {
					break
				}
			}
		}
		return out, nil
	}
	var (
		r          rejectedPicks
		wg         sync.WaitGroup
		trustedErr error
	)
	if a.p.exclude || a.p.auto {
		wg.Go(func() { r.trusted, trustedErr = pick(a.p.trusted) })
	}
	all, err := pick(a.p.asked)
	wg.Wait()
	if err != nil {
		return r, err
	}
	if trustedErr != nil {
		return r, trustedErr
	}
	r.all = all
	if a.p.exclude || a.p.auto {
		ids := make([]string, len(all))
		for i, c := range all {
			ids[i] = c.view.DocumentID
		}
		tiers, err := a.inForce(ctx, ids)
		if err != nil {
			return r, err
		}
		for _, id := range ids {
			if provenance.Untrusted(tiers[id]) {
				r.untrusted = append(r.untrusted, id)
			}
		}
	}
	return r, nil
}

// similar ranks chunks under sc by vector similarity alone. The rejected
// block admits a chunk only above a similarity threshold, so the nearest
// vectors are exactly its candidates and a full-text ranking would add
// none it could keep.
func (a *answer) similar(ctx context.Context, sc scope, limit int) ([]ingestd.Hit, error) {
	f := sc.filter
	f.EmbedderID = a.s.embedder.ID()
	vec, err := a.ranked(ctx, sc.tiers, limit, func(n int) ([]ingestd.Hit, error) {
		return a.s.store.SearchVector(ctx, a.qv, f, n)
	})
	if err != nil {
		return nil, fmt.Errorf("search vector: %w", err)
	}
	return slices.DeleteFunc(vec, func(h ingestd.Hit) bool { return h.Score < a.s.rejMin }), nil
}
