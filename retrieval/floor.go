// Floor: the relevance floor, under which a query matches nothing and
// the answer serves nothing.

package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/ingestd/ingestd"
)

// The relevance floor. Reciprocal rank fusion ranks whatever the rankers
// return, and the vector ranker returns the chunks nearest the query
// however far they are: a query none of whose words the corpus holds
// ("zzzqqq nonexistentword") used to be answered with the top_k chunks
// least unlike it, and their expansion, as if they were evidence — and
// the untrusted ones among them blocked tools for nothing.
//
// The floor applies when the full-text ranking is empty: no word of the
// query (as the text index holds words: stemmed, synonyms folded) occurs
// in any chunk the request may see. A query with one such word is ranked
// as before, so the floor never changes an answer that has lexical
// evidence. Without it, a vector hit must show similarity of its own:
//
//   - With the lexical embedder (an embedder whose ID starts "lexical-")
//     it cannot: its vectors are the hashed features of the same words
//     the text index holds, plus word pairs and character 3-grams, so
//     with no word in common all a vector can share is spelling
//     fragments ("nonexistentword" and "word"). No vector hit is kept.
//   - With a model's embeddings (dense), a chunk is kept when it is more
//     similar to the query than to a probe of nonsense (floorProbe).
//     Models put every text in one region of the space, so unrelated
//     texts have a cosine well above 0, how far above depending on the
//     model and the chunk; the chunk's similarity to nonsense is that
//     level, measured for this model and this chunk, so the floor holds
//     for whatever model is configured without a constant per model and
//     a chunk that is itself near nonsense (a table of ids) cannot raise
//     it for the others. Options.MinSimilarity, when set, is a floor
//     under every chunk as well.
//
// When nothing is left primary and expanded are empty. The rejected
// block keeps its own floor (RejectedMinScore), which the lexical
// embedder's noise does not reach: a query for a dismissed approach alone
// is still shown it. With a model's embeddings, whose unrelated texts may
// be that similar, its chunks must clear the calibrated floor too. An answer with every block empty
// says so, grounding ingestd.GroundedNothing, and its verdict, over no
// document, allows tools.

// floorProbe is the nonsense the dense floor measures noise with: letter
// runs that are no word of any language the models are trained on.
const floorProbe = "qzxv jkwq vbxz pfqj xqkz wvjq"

// floorEpsilon absorbs the rounding between a store's similarity and
// ours (float32 vectors, summed in another order): a chunk exactly as near
// the query as nonsense does not clear the floor by a rounding error.
const floorEpsilon = 1e-6

// isLexical reports whether the embedder id names the lexical embedder.
func isLexical(embedderID string) bool { return strings.HasPrefix(embedderID, "lexical-") }

// floor applies the relevance floor to rankings of sc (see above).
func (a *answer) floor(ctx context.Context, sc scope, r rankings) (rankings, error) {
	if len(r.text) > 0 || len(r.vec) == 0 {
		return r, nil
	}
	if isLexical(a.s.embedder.ID()) {
		r.vec = nil
		return r, nil
	}
	ids := make([]string, len(r.vec))
	for i, h := range r.vec {
		ids[i] = h.ChunkID
	}
	views, err := a.s.store.Chunks(ctx, ids)
	if err != nil {
		return r, fmt.Errorf("read chunks: %w", err)
	}
	noise := make(map[string]float64, len(views))
	for _, v := range views {
		n, err := a.s.noise(ctx, v.Chunk)
		if err != nil {
			return r, err
		}
		noise[v.ID] = n
	}
	r.vec = slices.DeleteFunc(r.vec, func(h ingestd.Hit) bool {
		n, ok := noise[h.ChunkID]
		return !ok || h.Score <= n+floorEpsilon || h.Score < a.s.minSim
	})
	return r, nil
}

// floorRejected holds the rejected block of an answer under the floor to
// the same per-chunk floor, for a model's embeddings (see above).
func (a *answer) floorRejected(ctx context.Context) error {
	if len(a.rejected) == 0 || isLexical(a.s.embedder.ID()) {
		return nil
	}
	kept := a.rejected[:0]
	for _, c := range a.rejected {
		n, err := a.s.noise(ctx, c.view.Chunk)
		if err != nil {
			return err
		}
		if c.score > n+floorEpsilon && c.score >= a.s.minSim {
			kept = append(kept, c)
		}
	}
	a.rejected = kept
	return nil
}

// probe is the embedded floorProbe, made once per service.
type probe struct {
	once sync.Once
	vec  []float32
	err  error
}

// noise is the similarity of c to floorProbe: 1 (never cleared) for a
// chunk without a vector of this embedder's.
func (s *Service) noise(ctx context.Context, c ingestd.Chunk) (float64, error) {
	s.probe.once.Do(func() {
		vecs, err := s.embedder.Embed(context.WithoutCancel(ctx), []string{floorProbe})
		switch {
		case err != nil:
			s.probe.err = fmt.Errorf("embed the floor's probe: %w", err)
		case len(vecs) != 1:
			s.probe.err = fmt.Errorf("embed the floor's probe: embedder returned %d vectors for 1 text", len(vecs))
		default:
			s.probe.vec = vecs[0]
		}
	})
	if s.probe.err != nil {
		return 0, s.probe.err
	}
	if len(c.Embedding) != len(s.probe.vec) || c.EmbedderID != "" && c.EmbedderID != s.embedder.ID() {
		return 1, nil
	}
	return float64(ingestd.Dot(s.probe.vec, c.Embedding)), nil
}
