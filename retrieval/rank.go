// Rank: the primary block — both rankers under a scope, their fusion,
// the per-document cap, and the count of what exclude_untrusted left out.

package retrieval

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

func (a *answer) primaryAndExpanded(ctx context.Context) error {
	if a.p.auto && a.p.served.empty {
		a.trustedOnly = true // nothing to choose from, and nothing untrusted to serve
	}
	if !a.p.served.empty {
		r, err := a.rank(ctx, a.p.served, a.candidates(a.p.topK))
		if err != nil {
			return err
		}
		hits := r.fused()
		a.noMatch = len(hits) == 0 // under the floor (floor.go)
		if a.p.auto && !a.noMatch {
			if hits, err = a.ground(ctx, r, hits); err != nil {
				return err
			}
		}
		picked := pickPrimary(hits, a.p.topK, a.s.perDoc)
		views, err := a.views(ctx, picked)
		if err != nil {
			return err
		}
		for _, h := range picked {
			if v, ok := views[h.ChunkID]; ok {
				a.primary = append(a.primary, served{view: v, score: h.Score})
			}
		}
	}
	if a.p.exclude {
		if err := a.countExcludedPrimary(ctx); err != nil {
			return err
		}
	}
	if a.p.expand && len(a.primary) > 0 {
		if err := a.expand(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (a *answer) candidates(n int) int {
	return max(4*n, minCandidate)
}

// rankings are the two rankings of one search, each best first with its
// ranker's own score: text holds full-text relevance (BM25 on SQLite),
// vec the cosine similarity of chunks with any.
type rankings struct {
	text, vec []ingestd.Hit
}

// fused fuses the rankings (Fuse).
func (r rankings) fused() []ingestd.Hit { return Fuse(r.text, r.vec) }

// fused runs both rankers under sc, concurrently, and fuses their rankings.
func (a *answer) fused(ctx context.Context, sc scope, limit int) ([]ingestd.Hit, error) {
	r, err := a.rank(ctx, sc, limit)
	if err != nil {
		return nil, err
	}
	return r.fused(), nil
}

// rank runs both rankers under sc, concurrently.
func (a *answer) rank(ctx context.Context, sc scope, limit int) (rankings, error) {
	var (
		wg      sync.WaitGroup
		text    []ingestd.Hit
		textErr error
	)
	wg.Go(func() {
		text, textErr = a.ranked(ctx, sc.tiers, limit, func(n int) ([]ingestd.Hit, error) {
			return a.s.store.SearchText(ctx, a.p.query, sc.filter, n)
		})
	})
	vf := sc.filter
	vf.EmbedderID = a.s.embedder.ID() // compare only with vectors the same embedder made
	vec, err := a.ranked(ctx, sc.tiers, limit, func(n int) ([]ingestd.Hit, error) {
		return a.s.store.SearchVector(ctx, a.qv, vf, n)
	})
	wg.Wait()
	if textErr != nil {
		return rankings{}, fmt.Errorf("search text: %w", textErr)
	}
	if err != nil {
		return rankings{}, fmt.Errorf("search vector: %w", err)
	}
	// A chunk with no similarity at all is not a vector candidate.
	vec = slices.DeleteFunc(vec, func(h ingestd.Hit) bool { return h.Score <= 0 })
	return a.floor(ctx, sc, rankings{text: text, vec: vec})
}

// maxRefills bounds how often ranked asks a ranker again for more.
const maxRefills = 2

// ranked returns the best limit hits of search whose document's tier in
// force is in tiers, best first. The store filtered by what such
// documents can be stamped with; when judging its answer by tier in force
// (a declaration narrowed since the stamp) leaves fewer than limit and the
// store may hold more, it asks again for four times as many, at most
// maxRefills times. With nil tiers it is search(limit).
func (a *answer) ranked(ctx context.Context, tiers tierSet, limit int, search func(n int) ([]ingestd.Hit, error)) ([]ingestd.Hit, error) {
	for n, refills := limit, 0; ; n, refills = 4*n, refills+1 {
		hits, err := search(n)
		if err != nil || tiers == nil {
			return hits, err
		}
		kept, err := a.keep(ctx, tiers, hits)
		if err != nil {
			return nil, err
		}
		if len(kept) >= limit || len(hits) < n || refills == maxRefills {
			return kept[:min(len(kept), limit)], nil
		}
	}
}

// keep returns the hits whose document's tier in force is in tiers.
func (a *answer) keep(ctx context.Context, tiers tierSet, hits []ingestd.Hit) ([]ingestd.Hit, error) {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.DocumentID
	}
	inForce, err := a.inForce(ctx, ids)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(hits, func(h ingestd.Hit) bool { return !tiers.has(inForce[h.DocumentID]) }), nil
}

// Fuse merges rankings by reciprocal rank fusion (k = 60): a chunk scores
// the sum of 1/(60+rank) over the rankings it appears in, rank from 1.
// Ties are broken by chunk id so the order is deterministic.
func Fuse(rankings ...[]ingestd.Hit) []ingestd.Hit {
	idx := map[string]int{}
	var out []ingestd.Hit
	for _, ranking := range rankings {
		for i, h := range ranking {
			sc := 1 / float64(rrfK+i+1)
			if j, ok := idx[h.ChunkID]; ok {
				out[j].Score += sc
				continue
			}
			idx[h.ChunkID] = len(out)
			out = append(out, ingestd.Hit{ChunkID: h.ChunkID, DocumentID: h.DocumentID, Score: sc})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ChunkID < out[j].ChunkID
	})
	return out
}

// pickPrimary takes the best topK hits with at most perDoc per document.
func pickPrimary(hits []ingestd.Hit, topK, perDoc int) []ingestd.Hit {
	var out []ingestd.Hit
	per := map[string]int{}
	for _, h := range hits {
		if len(out) == topK {
			break
		}
		if per[h.DocumentID] == perDoc {
			continue
		}
		per[h.DocumentID]++
		out = append(out, h)
	}
	return out
}

func (a *answer) views(ctx context.Context, hits []ingestd.Hit) (map[string]ingestd.ChunkView, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ChunkID
	}
	vs, err := a.s.store.Chunks(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("read chunks: %w", err)
	}
	m := make(map[string]ingestd.ChunkView, len(vs))
	for _, v := range vs {
		m[v.ID] = v
	}
	return m, nil
}

// countExcludedPrimary ranks again without the exclusion and counts the
// untrusted documents that would have been in primary.
func (a *answer) countExcludedPrimary(ctx context.Context) error {
	if a.p.asked.empty {
		return nil
	}
	hits, err := a.fused(ctx, a.p.asked, a.candidates(a.p.topK))
	if err != nil {
		return err
	}
	var ids []string
	for _, h := range pickPrimary(hits, a.p.topK, a.s.perDoc) {
		ids = append(ids, h.DocumentID)
	}
	tiers, err := a.inForce(ctx, ids)
	if err != nil {
		return err
	}
	for id, t := range tiers {
		if provenance.Untrusted(t) {
			a.excluded[id] = true
		}
	}
	return nil
}
