package chromem

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	chromem "github.com/philippgille/chromem-go"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

const (
	dims  = 384 // the lexical embedder's default, as in the chromem-go figure
	limit = 50  // what retrieval over-fetches per ranker
)

// corpus makes n chunk texts and 128 queries from a Zipf distribution over
// a made-up vocabulary, deterministically.
func corpus(n int) (chunks, queries []string) {
	r := rand.New(rand.NewPCG(7, 11))
	vocab := make([]string, 0, 8000)
	seen := map[string]bool{}
	for len(vocab) < cap(vocab) {
		var b strings.Builder
		for range 1 + r.IntN(3) {
			b.WriteByte("bcdfghjklmnprstvwz"[r.IntN(18)])
			b.WriteByte("aeiou"[r.IntN(5)])
		}
		if w := b.String() + string("nrst"[r.IntN(4)]); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	z := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.07, 2, uint64(len(vocab)-1))
	words := func(k int) string {
		w := make([]string, k)
		for i := range w {
			w[i] = vocab[z.Uint64()]
		}
		return strings.Join(w, " ")
	}
	for range n {
		chunks = append(chunks, words(40+r.IntN(60)))
	}
	for range 128 {
		queries = append(queries, words(2+r.IntN(3)))
	}
	return chunks, queries
}

type fixture struct {
	search func(ctx context.Context, q []float32) (int, error)
}

// BenchmarkVectorSearch runs the same query vectors against ingestd's
// SQLite store (SearchVector, no filter) and chromem-go (QueryEmbedding)
// holding the same chunk vectors, top 50, and reports p50/p99.
func BenchmarkVectorSearch(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		ctx := context.Background()
		texts, queries := corpus(n)
		e := embedder.NewLexical(dims)
		vecs, err := e.Embed(ctx, texts)
		if err != nil {
			b.Fatal(err)
		}
		qvecs, err := e.Embed(ctx, queries)
		if err != nil {
			b.Fatal(err)
		}

		store := sqlitetest.MustOpenPath(b, filepath.Join(b.TempDir(), "bench.db"), nil)
		const perDoc = 4
		for d := 0; d < n; d += perDoc {
			id := ingestd.DocumentID("bench", fmt.Sprint(d))
			doc := &ingestd.Document{ID: id, Installation: "bench", ExternalID: fmt.Sprint(d), SourceKind: "files",
				ContentHash: ingestd.ContentHash(fmt.Sprint(d)), Tier: ingestd.TierTrustedInternal, Status: ingestd.StatusActive}
			var cs []ingestd.Chunk
			for i := d; i < min(d+perDoc, n); i++ {
				cs = append(cs, ingestd.Chunk{ID: ingestd.ChunkID(id, texts[i], i), DocumentID: id, Ordinal: i - d, Text: texts[i],
					Fenced: firewall.Fence(texts[i], firewall.Origin{Installation: "bench"}), Embedding: vecs[i], EmbedderID: e.ID(),
					Tier: ingestd.TierTrustedInternal})
			}
			if _, err := store.PutDocument(ctx, doc, cs, nil); err != nil {
				b.Fatal(err)
			}
		}

		db := chromem.NewDB()
		col, err := db.CreateCollection("bench", nil, func(context.Context, string) ([]float32, error) {
			return nil, fmt.Errorf("no embedding function: vectors are given")
		})
		if err != nil {
			b.Fatal(err)
		}
		docs := make([]chromem.Document, 0, n)
		for i, v := range vecs {
			if slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) { // chromem refuses zero vectors
				docs = append(docs, chromem.Document{ID: fmt.Sprint(i), Embedding: v, Content: texts[i]})
			}
		}
		if err := col.AddDocuments(ctx, docs, 2); err != nil {
			b.Fatal(err)
		}

		fixtures := []struct {
			name   string
			search func(q []float32) (int, error)
		}{
			{"ingestd", func(q []float32) (int, error) {
				hits, err := store.SearchVector(ctx, q, ingestd.Filter{}, limit)
				return len(hits), err
			}},
			{"chromem-go", func(q []float32) (int, error) {
				res, err := col.QueryEmbedding(ctx, q, limit, nil, nil)
				return len(res), err
			}},
		}
		for _, f := range fixtures {
			b.Run(fmt.Sprintf("%s/chunks=%d", f.name, n), func(b *testing.B) {
				if _, err := f.search(qvecs[0]); err != nil { // warm
					b.Fatal(err)
				}
				durs := make([]time.Duration, 0, b.N)
				for i := 0; b.Loop(); i++ {
					start := time.Now()
					got, err := f.search(qvecs[i%len(qvecs)])
					durs = append(durs, time.Since(start))
					if err != nil || got != limit {
						b.Fatalf("search: %d hits, %v", got, err)
					}
				}
				slices.Sort(durs)
				b.ReportMetric(float64(durs[len(durs)/2])/1e6, "p50-ms")
				b.ReportMetric(float64(durs[min(len(durs)-1, len(durs)*99/100)])/1e6, "p99-ms")
			})
		}
	}
}
