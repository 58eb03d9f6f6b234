package sqlite

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/storetest"
)

// Rescoring only the candidates whose error bounds let them reach the top
// returns what rescoring every candidate returns, reading fewer rows.
func TestRescoreReadsOnlyWhatCanRank(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "db"))
	rng := rand.New(rand.NewPCG(3, 4))
	vec := func() []float32 {
		v := make([]float32, 48)
		for i := range v {
			if rng.IntN(3) == 0 {
				v[i] = float32(rng.NormFloat64())
			}
		}
		v[rng.IntN(len(v))] += 1
		return v
	}
	for i := range 400 {
		d := storetest.Doc("a", fmt.Sprintf("%d.md", i), ingestd.TierTrustedInternal, fmt.Sprint(i))
		chunks := storetest.Chunks(d, 0, fmt.Sprintf("one %d", i), fmt.Sprintf("two %d", i), fmt.Sprintf("three %d", i))
		for j := range chunks {
			chunks[j].Embedding, chunks[j].EmbedderID = vec(), "test/48"
		}
		storetest.MustPut(t, s, d, chunks, nil)
	}
	if err := s.vec.sync(ctx); err != nil {
		t.Fatal(err)
	}
	read, all := 0, 0
	for qi := range 60 {
		q := vec()
		limit := []int{1, 5, 10, 30}[qi%4]
		cands, _ := s.vec.search(q, ingestd.Filter{}, rescoreCandidates(limit))
		got, err := s.rescore(ctx, q, cands, limit)
		if err != nil {
			t.Fatal(err)
		}
		every, err := s.rescoreRows(ctx, q, cands)
		if err != nil {
			t.Fatal(err)
		}
		var want []ingestd.Hit
		for _, h := range every {
			want = append(want, h.hit)
		}
		ingestd.SortHits(want)
		want = want[:min(limit, len(want))]
		if !slices.Equal(got, want) {
			t.Fatalf("query %d, limit %d: rescored\n%v\nrescoring every candidate\n%v", qi, limit, got, want)
		}
		r, _ := rescoreSplit(cands, limit)
		read += len(r)
		all += len(cands)
	}
	t.Logf("read %d of %d candidates (%.0f%%)", read, all, 100*float64(read)/float64(all))
	if read >= all {
		t.Errorf("read every candidate (%d)", all)
	}
}

// SearchVector returns the exact top k even where the int8 estimates
// cannot tell the candidates apart: 2,000 vectors crowd around one
// direction, their cosines with a query there closer together than the
// estimates' error, so the best exact ones are often outside the first
// candidates the index ranks. The store asks for more until no row left
// out can reach the limit-th exact score.
func TestSearchVectorRechecksWhatTheIndexMisses(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, filepath.Join(t.TempDir(), "db"))
	rng := rand.New(rand.NewPCG(26, 11))
	const dims = 48
	centre := make([]float32, dims)
	for i := range centre {
		centre[i] = float32(rng.NormFloat64())
	}
	near := func(eps float64) []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = centre[i] + float32(eps*rng.NormFloat64())
		}
		return v
	}
	type row struct {
		id string
		v  []float32
	}
	var rows []row
	for i := range 500 {
		d := storetest.Doc("a", fmt.Sprintf("%d.md", i), ingestd.TierTrustedInternal, fmt.Sprint(i))
		chunks := storetest.Chunks(d, 0, fmt.Sprintf("one %d", i), fmt.Sprintf("two %d", i), fmt.Sprintf("three %d", i), fmt.Sprintf("four %d", i))
		for j := range chunks {
			chunks[j].Embedding, chunks[j].EmbedderID = near(0.05), "test/48"
			rows = append(rows, row{chunks[j].ID, chunks[j].Embedding})
		}
		storetest.MustPut(t, s, d, chunks, nil)
	}
	cos := func(a, b []float32) float64 {
		var dot, na, nb float64
		for i := range a {
			dot += float64(a[i]) * float64(b[i])
			na += float64(a[i]) * float64(a[i])
			nb += float64(b[i]) * float64(b[i])
		}
		return dot / math.Sqrt(na*nb)
	}
	for qi := range 40 {
		q := near(0.05)
		limit := []int{1, 5, 10, 30}[qi%4]
		want := make([]ingestd.Hit, len(rows))
		for i, r := range rows {
			want[i] = ingestd.Hit{ChunkID: r.id, Score: cos(q, r.v)}
		}
		ingestd.SortHits(want)
		hits, err := s.SearchVector(ctx, q, ingestd.Filter{EmbedderID: "test/48"}, limit)
		if err != nil {
			t.Fatal(err)
		}
		if got, w := chunkIDsOf(hits), chunkIDsOf(want[:limit]); !slices.Equal(got, w) {
			t.Fatalf("query %d, limit %d: SearchVector = %q, want the exact top %d %q", qi, limit, got, limit, w)
		}
	}
}

func chunkIDsOf(hits []ingestd.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ChunkID
	}
	return out
}
