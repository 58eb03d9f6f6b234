package postgres_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/postgres/pgtest"
	"github.com/ingestd/ingestd/store/storetest"
)

// A store holding no more than ExactChunks chunks answers vector
// searches exactly, however poorly its HNSW graph is searched: with
// ef_search 1 the graph finds few of the true nearest neighbours, and
// every answer is still the brute-force top k. Above the threshold the
// same store walks the graph (its recall is logged, not asserted).
func TestSearchVectorExactBelowThreshold(t *testing.T) {
	srv := serverURL(t)
	db := pgtest.MustCreateDB(t, srv)
	// Random vectors of many dimensions have no neighbourhoods for a
	// graph to follow.
	const dims = 128
	exact := pgtest.MustOpenURL(t, db, &postgres.Options{Dims: dims, EfSearch: 1, FenceCheck: firewall.Check})
	graph := pgtest.MustOpenURL(t, db, &postgres.Options{Dims: dims, EfSearch: 1, ExactChunks: -1})

	r := rand.New(rand.NewPCG(11, 26))
	vec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
		return v
	}
	type row struct {
		id, doc string
		v       []float32
	}
	var rows []row
	var puts []ingestd.DocumentPut
	for i := range 500 {
		d := storetest.Doc("kb", fmt.Sprintf("%d.md", i), ingestd.TierTrustedInternal, fmt.Sprint(i))
		texts := make([]string, 10)
		for j := range texts {
			texts[j] = fmt.Sprintf("chunk %d of %d", j, i)
		}
		chunks := storetest.Chunks(d, 0, texts...)
		for j := range chunks {
			chunks[j].Embedding = vec()
			rows = append(rows, row{chunks[j].ID, d.ID, chunks[j].Embedding})
		}
		puts = append(puts, ingestd.DocumentPut{Doc: d, Chunks: chunks})
	}
	for _, res := range exact.PutDocuments(ctx(), puts) {
		if res.Err != nil {
			t.Fatal(res.Err)
		}
	}
	cosine := func(a, b []float32) float64 {
		var dot, na, nb float64
		for i := range a {
			dot += float64(a[i]) * float64(b[i])
			na += float64(a[i]) * float64(a[i])
			nb += float64(b[i]) * float64(b[i])
		}
		return dot / math.Sqrt(na*nb)
	}
	found, all := 0, 0
	for qi := range 40 {
		q := vec()
		limit := []int{1, 5, 10, 40}[qi%4]
		ranked := slices.Clone(rows)
		slices.SortFunc(ranked, func(a, b row) int { return cmp.Compare(cosine(q, b.v), cosine(q, a.v)) })
		var want []string
		for _, x := range ranked[:limit] {
			want = append(want, x.id)
		}
		f := ingestd.Filter{EmbedderID: "storetest/8"}
		hits, err := exact.SearchVector(ctx(), q, f, limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range hits {
			got = append(got, h.ChunkID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("query %d, limit %d: SearchVector = %q, want the exact top %d %q", qi, limit, got, limit, want)
		}
		ghits, err := graph.SearchVector(ctx(), q, f, limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range ghits {
			if slices.Contains(want, h.ChunkID) {
				found++
			}
		}
		all += limit
	}
	t.Logf("the graph alone (ef_search 1) found %d of %d exact neighbours", found, all)
}
