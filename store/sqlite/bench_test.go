package sqlite

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/internal/corpus"
	"github.com/ingestd/ingestd/store/sqlite/internal/textindex"
)

const benchDims = 384

// benchFixture is a store of n chunks (10 per document, about 80 Zipf
// words each, lexical-like 384-d vectors) with queries drawn from it.
type benchFixture struct {
	s         *Store
	texts     []string
	textQs    []string
	vecQs     [][]float32
	vecs      [][]float32 // every chunk vector, for the brute-force baseline
	buildTime time.Duration
}

var (
	fixturesMu sync.Mutex
	fixtures   = map[int]*benchFixture{}
	benchDir   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// mustFixture builds (once per process) the fixture of n chunks.
func mustFixture(tb testing.TB, n int) *benchFixture {
	tb.Helper()
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if f := fixtures[n]; f != nil {
		return f
	}
	if benchDir == "" {
		d, err := os.MkdirTemp("", "ingestd-sqlite-bench")
		if err != nil {
			tb.Fatal(err)
		}
		benchDir = d
	}
	s, err := Open(context.Background(), filepath.Join(benchDir, fmt.Sprintf("bench-%d.db", n)), nil)
	if err != nil {
		tb.Fatal(err)
	}
	f := &benchFixture{s: s}
	c := corpus.New(uint64(n), 30000)
	ctx := context.Background()
	start := time.Now()
	for d := 0; d < n/10; d++ {
		doc := &ingestd.Document{
			Installation: []string{"handbook", "support", "public-repo"}[d%3],
			ExternalID:   fmt.Sprintf("doc-%d", d),
			SourceKind:   []string{"files", "imap", "github"}[d%3],
			Title:        strings.Join(c.Words(4), " "),
			ContentHash:  fmt.Sprint(d),
			Tier:         []ingestd.Tier{ingestd.TierTrustedInternal, ingestd.TierUntrustedExternal, ""}[d%3],
		}
		doc.ID = ingestd.DocumentID(doc.Installation, doc.ExternalID)
		chunks := make([]ingestd.Chunk, 10)
		for i := range chunks {
			text := c.Text(60 + c.Intn(40))
			v := corpus.Vector(text, benchDims)
			f.texts = append(f.texts, text)
			f.vecs = append(f.vecs, v)
			chunks[i] = ingestd.Chunk{ID: ingestd.ChunkID(doc.ID, text, 0), Ordinal: i, Text: text, Fenced: text,
				Embedding: v, EmbedderID: "lexical-v1/384"}
		}
		if _, err := s.PutDocument(ctx, doc, chunks, nil); err != nil {
			tb.Fatal(err)
		}
	}
	f.buildTime = time.Since(start)
	for range 64 {
		words := c.Query(f.texts[c.Intn(len(f.texts))], 2+c.Intn(3))
		f.textQs = append(f.textQs, strings.Join(words, " "))
		f.vecQs = append(f.vecQs, corpus.Vector(strings.Join(words, " "), benchDims))
	}
	fixtures[n] = f
	return f
}

var benchSizes = []int{10000, 100000}

func BenchmarkSearchVector(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes {
		f := mustFixture(b, n)
		// The first search loads the index; time it apart.
		f.s.vec.close(context.Background())
		f.s.vec = newVectors(f.s, nil)
		start := time.Now()
		if err := f.s.Warm(ctx); err != nil {
			b.Fatal(err)
		}
		b.Logf("rows=%d: index load %v (fixture build %v)", n, time.Since(start), f.buildTime)
		// How often the first candidates do not settle the exact top 10
		// and SearchVector asks the index again.
		again := 0
		for _, q := range f.vecQs {
			cands, unseen := f.s.vec.search(q, ingestd.Filter{}, rescoreCandidates(10))
			hits, err := f.s.rescore(ctx, q, cands, 10)
			if err != nil {
				b.Fatal(err)
			}
			if !(len(hits) >= 10 && unseen < hits[9].Score || math.IsInf(unseen, -1)) {
				again++
			}
		}
		b.Logf("rows=%d: %d of %d queries asked the index again", n, again, len(f.vecQs))
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, err := f.s.SearchVector(ctx, f.vecQs[i%len(f.vecQs)], ingestd.Filter{}, 10); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("rows=%d/filtered", n), func(b *testing.B) {
			flt := ingestd.Filter{Installations: []string{"support"}}
			i := 0
			for b.Loop() {
				if _, err := f.s.SearchVector(ctx, f.vecQs[i%len(f.vecQs)], flt, 10); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkBruteForceCosine is the baseline: cosine of the query with every
// vector in plain Go (what chromem-go does), then the top 10.
func BenchmarkBruteForceCosine(b *testing.B) {
	for _, n := range benchSizes {
		f := mustFixture(b, n)
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				bruteForce(f.vecs, f.vecQs[i%len(f.vecQs)], 10)
				i++
			}
		})
	}
}

func bruteForce(vecs [][]float32, q []float32, k int) []int {
	type hit struct {
		i int
		s float32
	}
	top := make([]hit, 0, k+1)
	for i, v := range vecs {
		var dot, nv, nq float32
		for j := range q {
			dot += q[j] * v[j]
			nv += v[j] * v[j]
			nq += q[j] * q[j]
		}
		s := dot / float32(sqrt(float64(nv))*sqrt(float64(nq)))
		if len(top) < k || s > top[len(top)-1].s {
			j := len(top)
			if len(top) < k {
				top = append(top, hit{})
			} else {
				j = k - 1
			}
			for j > 0 && top[j-1].s < s {
				top[j] = top[j-1]
				j--
			}
			top[j] = hit{i, s}
		}
	}
	out := make([]int, len(top))
	for i, h := range top {
		out[i] = h.i
	}
	return out
}

func BenchmarkSearchText(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes {
		f := mustFixture(b, n)
		start := time.Now()
		if err := f.s.Warm(ctx); err != nil {
			b.Fatal(err)
		}
		f.s.vec.mu.RLock()
		b.Logf("rows=%d: index load %v; text index %d terms, %.0f bytes/chunk", n, time.Since(start), f.s.vec.text.Terms(), float64(f.s.vec.text.Bytes())/float64(f.s.vec.text.Len()))
		f.s.vec.mu.RUnlock()
		start = time.Now()
		tx := textindex.New()
		for i, t := range f.texts {
			tx.Add(int64(i), 0, t, "", "")
		}
		b.Logf("rows=%d: text index build alone (texts only) %v", n, time.Since(start))
		paths := []struct {
			name   string
			search func(context.Context, string, ingestd.Filter, int) ([]ingestd.Hit, error)
		}{{"in-memory", f.s.SearchText}}
		for _, p := range paths {
			b.Run(fmt.Sprintf("rows=%d/%s", n, p.name), func(b *testing.B) {
				i := 0
				for b.Loop() {
					if _, err := p.search(ctx, f.textQs[i%len(f.textQs)], ingestd.Filter{}, 10); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
			b.Run(fmt.Sprintf("rows=%d/%s/filtered", n, p.name), func(b *testing.B) {
				flt := ingestd.Filter{Installations: []string{"support"}}
				i := 0
				for b.Loop() {
					if _, err := p.search(ctx, f.textQs[i%len(f.textQs)], flt, 10); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

func sqrt(x float64) float64 { return math.Sqrt(x) }

// ingestDocs precomputes n documents of about 2 KB in 10 chunks, with
// vectors.
func ingestDocs(n int) ([]*ingestd.Document, [][]ingestd.Chunk) {
	c := corpus.New(99, 30000)
	docs := make([]*ingestd.Document, n)
	chunks := make([][]ingestd.Chunk, n)
	for d := range docs {
		doc := &ingestd.Document{Installation: "bench", ExternalID: fmt.Sprintf("doc-%d", d), SourceKind: "files",
			Title: strings.Join(c.Words(4), " "), ContentHash: fmt.Sprint(d), Tier: ingestd.TierTrustedInternal,
			Status: ingestd.StatusActive, IngestedAt: time.Unix(0, 0)}
		doc.ID = ingestd.DocumentID(doc.Installation, doc.ExternalID)
		cs := make([]ingestd.Chunk, 10)
		for i := range cs {
			text := c.Text(30)
			cs[i] = ingestd.Chunk{ID: ingestd.ChunkID(doc.ID, text, 0), DocumentID: doc.ID, Ordinal: i, Text: text,
				Fenced: text, Embedding: corpus.Vector(text, benchDims), EmbedderID: "lexical-v1/384", HeadingPath: []string{"A"}}
		}
		docs[d], chunks[d] = doc, cs
	}
	return docs, chunks
}

var (
	ingestOnce   sync.Once
	ingestDocsV  []*ingestd.Document
	ingestChunks [][]ingestd.Chunk
)

func benchIngestData() ([]*ingestd.Document, [][]ingestd.Chunk) {
	ingestOnce.Do(func() { ingestDocsV, ingestChunks = ingestDocs(10000) })
	return ingestDocsV, ingestChunks
}

// BenchmarkPutDocument writes new documents of 10 chunks (about 2 KB) one
// by one through PutDocument.
func BenchmarkPutDocument(b *testing.B) {
	docs, chunks := benchIngestData()
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "put.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	ctx := context.Background()
	i := 0
	for b.Loop() {
		d, cs := benchDocument(docs, chunks, i)
		if _, err := s.PutDocument(ctx, &d, cs, nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkInsertChunksDirect is PutDocument's baseline: the same rows
// inserted with plain prepared INSERTs in one transaction per document,
// with no existence check and nothing replaced.
func BenchmarkInsertChunksDirect(b *testing.B) {
	docs, chunks := benchIngestData()
	s, err := Open(context.Background(), filepath.Join(b.TempDir(), "direct.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(context.Background())
	i := 0
	for b.Loop() {
		d := docs[i%len(docs)]
		cs := chunks[i%len(docs)]
		id, ext := d.ID, d.ExternalID
		if i >= len(docs) {
			ext = fmt.Sprintf("%s-%d", d.ExternalID, i)
			id = ingestd.DocumentID(d.Installation, ext)
		}
		tx, err := s.write.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO documents (id, installation, external_id, source_kind, title, content_hash, tier, status, ingested_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, d.Installation, ext, d.SourceKind, d.Title, d.ContentHash, string(d.Tier), "active", ts(d.IngestedAt)); err != nil {
			b.Fatal(err)
		}
		st, err := tx.Prepare(`INSERT INTO chunks (id, document_id, ordinal, heading_path, text, fenced, tokens, embedding, embedder_id, tier)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		for _, c := range cs {
			cid := c.ID
			if i >= len(docs) {
				cid = ingestd.ChunkID(id, c.Text, 0)
			}
			if _, err := st.Exec(cid, id, c.Ordinal, `["A"]`, c.Text, c.Fenced, c.Tokens, encodeVector(c.Embedding), c.EmbedderID, string(d.Tier)); err != nil {
				b.Fatal(err)
			}
		}
		st.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkPutDocumentConcurrent writes new documents of 10 chunks from 8
// goroutines, as serve's workers do, with group commit and with one
// transaction a document (the baseline).
func BenchmarkPutDocumentConcurrent(b *testing.B) {
	docs, chunks := benchIngestData()
	for _, mode := range []struct {
		name  string
		batch int
	}{{"group-commit", maxPutBatch}, {"one-per-transaction", 1}} {
		b.Run(mode.name, func(b *testing.B) {
			s, err := Open(context.Background(), filepath.Join(b.TempDir(), "put.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close(context.Background())
			s.putBatchMax = mode.batch
			ctx := context.Background()
			var next atomic.Int64
			b.SetParallelism(4) // 8 goroutines on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := int(next.Add(1) - 1)
					d, cs := benchDocument(docs, chunks, i)
					if _, err := s.PutDocument(ctx, &d, cs, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "docs/s")
		})
	}
}

// benchDocument is the ith document of a benchmark's loop over docs: the
// document itself in the first round, then under a new identity (its
// chunks renamed with it) in each round after.
func benchDocument(docs []*ingestd.Document, chunks [][]ingestd.Chunk, i int) (ingestd.Document, []ingestd.Chunk) {
	d := *docs[i%len(docs)]
	cs := chunks[i%len(docs)]
	if i >= len(docs) {
		d.ExternalID = fmt.Sprintf("%s-%d", d.ExternalID, i)
		d.ID = ingestd.DocumentID(d.Installation, d.ExternalID)
		cs = append([]ingestd.Chunk(nil), cs...)
		for j := range cs {
			cs[j].ID = ingestd.ChunkID(d.ID, cs[j].Text, 0)
			cs[j].DocumentID = d.ID
		}
	}
	return d, cs
}
