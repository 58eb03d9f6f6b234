package sqlite

import (
	"context"
	"fmt"
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
