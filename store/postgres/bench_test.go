package postgres_test

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"
	pgxvec "github.com/pgvector/pgvector-go/pgx"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/postgres/pgtest"
)

// The benchmarks run against a corpus of -pgbench.chunks chunks (default
// 100,000) of benchDims dimensions (10 per document), loaded once with COPY
// into a database named after its size and vector index graph and kept
// between runs (drop ingestd_bench_* to rebuild). Vectors are clustered
// (like real embeddings: topics), text is drawn from a Zipf-distributed
// vocabulary.
//
//	go test ./store/postgres -run '^$' -bench . -benchtime 200x
//	go test ./store/postgres -run '^$' -bench . -benchtime 200x -args -pgbench.chunks 1000000
//	go test ./store/postgres -run '^$' -bench 'Recall|SearchVector$|Retrieve$' -benchtime 200x \
//		-args -pgbench.chunks 1000000 -pgbench.m 32 -pgbench.efc 200 -pgbench.ef 800 -pgbench.shm-mb 8192
var (
	benchChunks = flag.Int("pgbench.chunks", 100_000, "chunks in the Postgres benchmark corpus (a multiple of 10,000)")
	benchM      = flag.Int("pgbench.m", 0, "HNSW m of the corpus's vector index (0: the store's default)")
	benchEfc    = flag.Int("pgbench.efc", 0, "HNSW ef_construction of the corpus's vector index (0: the store's default)")
	benchEf     = flag.Int("pgbench.ef", 400, "hnsw.ef_search of the searches in SearchVector and Retrieve (400 is the store's default)")
	benchShm    = flag.Int("pgbench.shm-mb", 1024, "dynamic shared memory the server can give a parallel index build, in MB")
)

const (
	benchDims      = 384
	chunksPerDoc   = 10
	benchQueries   = 200
	benchTopK      = 10
	benchClusters  = 500
	benchVocabSize = 20_000
	benchAxes      = 24
	// benchStopwords is how many of the most frequent words never appear:
	// in real text they are stopwords, which the 'english' configuration
	// drops, so the most common indexed word is in a few % of chunks,
	// not in nearly all of them.
	benchStopwords = 100
)

type corpus struct {
	r       *rand.Rand
	centers [][]float32
	axes    [][]float32 // the directions points of a topic vary along
	vocab   []string
	zipf    *rand.Zipf
}

func newCorpus(seed uint64) *corpus {
	r := rand.New(rand.NewPCG(seed, 42))
	c := &corpus{r: r}
	for range benchClusters {
		c.centers = append(c.centers, normalize(gauss(r, benchDims, 1)))
	}
	for range benchAxes {
		c.axes = append(c.axes, normalize(gauss(r, benchDims, 1)))
	}
	for i := range benchVocabSize {
		c.vocab = append(c.vocab, word(i))
	}
	c.zipf = rand.NewZipf(r, 1.1, 2+benchStopwords, benchVocabSize-1-benchStopwords)
	return c
}

// word is a pronounceable, stemming-stable token for index i.
func word(i int) string {
	const cons, vows = "bdfgklmnprstvz", "aeiou"
	var b strings.Builder
	for n := i + 1; n > 0; n /= len(cons) * len(vows) {
		b.WriteByte(cons[n%len(cons)])
		b.WriteByte(vows[(n/len(cons))%len(vows)])
	}
	b.WriteString("x")
	return b.String()
}

func gauss(r *rand.Rand, n int, sd float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * sd)
	}
	return v
}

func normalize(v []float32) []float32 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	n := float32(math.Sqrt(s))
	for i := range v {
		v[i] /= n
	}
	return v
}

// vector is a point near a random topic: the topic's center, moved along a
// few shared directions (real embeddings have a low intrinsic dimension),
// plus a little isotropic noise.
func (c *corpus) vector() []float32 {
	center := c.centers[c.r.IntN(len(c.centers))]
	v := gauss(c.r, benchDims, 0.01)
	for i := range v {
		v[i] += center[i]
	}
	for _, a := range c.axes {
		w := float32(c.r.NormFloat64() * 0.25)
		for i := range v {
			v[i] += w * a[i]
		}
	}
	return normalize(v)
}

func (c *corpus) text(words int) string {
	ws := make([]string, words)
	for i := range ws {
		ws[i] = c.vocab[benchStopwords+c.zipf.Uint64()]
	}
	return strings.Join(ws, " ")
}

var tiers = []ingestd.Tier{ingestd.TierTrustedInternal, ingestd.TierUntrustedExternal, ingestd.TierMachineGenerated, ""}

// document returns document i of the corpus with its chunks and links.
func (c *corpus) document(i int) (*ingestd.Document, []ingestd.Chunk, []ingestd.Link) {
	inst := fmt.Sprintf("inst%d", i%5)
	ext := fmt.Sprintf("doc-%d", i)
	d := &ingestd.Document{
		ID: ingestd.DocumentID(inst, ext), Installation: inst, ExternalID: ext, SourceKind: "files", ItemKind: "file",
		URI: "file:///" + ext, Title: c.text(5), ContentHash: ingestd.ContentHash(ext), Tier: tiers[i%len(tiers)],
		Status: ingestd.StatusActive, CreatedAt: time.Unix(int64(i), 0), UpdatedAt: time.Unix(int64(i), 0), IngestedAt: time.Unix(int64(i), 0),
	}
	cs := make([]ingestd.Chunk, chunksPerDoc)
	for j := range cs {
		text := c.text(60)
		cs[j] = ingestd.Chunk{ID: ingestd.ChunkID(d.ID, text, j), DocumentID: d.ID, Ordinal: j, HeadingPath: []string{d.Title},
			Text: text, Fenced: "<<" + text + ">>", Tokens: 60, Embedding: c.vector(), EmbedderID: "bench/384", Tier: d.Tier}
	}
	links := []ingestd.Link{
		{From: d.ID, To: ingestd.DocumentID(fmt.Sprintf("inst%d", (i+1)%5), fmt.Sprintf("doc-%d", i+1)), Relation: "xref"},
		{From: d.ID, To: ingestd.DocumentID(fmt.Sprintf("inst%d", (i+7)%5), fmt.Sprintf("doc-%d", i+7)), Relation: "thread"},
	}
	return d, cs, links
}

// queries are fresh points of the corpus's distribution and 3 words: one
// of the most common, one common, one rarer.
func (c *corpus) queries() ([][]float32, []string) {
	vs := make([][]float32, benchQueries)
	ts := make([]string, benchQueries)
	for i := range vs {
		vs[i] = c.vector()
		ts[i] = fmt.Sprintf("%s %s %s", c.vocab[120+c.r.IntN(200)], c.vocab[300+c.r.IntN(2000)], c.vocab[100+c.r.IntN(50)])
	}
	return vs, ts
}

// docRow and chunkRow are the COPY rows of the documents and chunks tables.
func docRow(d *ingestd.Document) []any {
	return []any{d.ID, d.Installation, d.ExternalID, d.SourceKind, d.ItemKind, d.URI, d.Title, d.Author,
		d.CreatedAt, d.UpdatedAt, d.ContentHash, nullTier(d.Tier), string(d.Status), nil, map[string]string{}, d.IngestedAt}
}

var docCopyColumns = []string{"id", "installation", "external_id", "source_kind", "item_kind", "uri", "title", "author",
	"created_at", "updated_at", "content_hash", "tier", "status", "parent_id", "meta", "ingested_at"}

var chunkCopyColumns = []string{"id", "document_id", "ordinal", "heading_path", "text", "fenced", "tokens",
	"embedding", "embedder_id", "tier", "installation", "source_kind", "status", "title"}

func chunkRow(d *ingestd.Document, c ingestd.Chunk) []any {
	return []any{c.ID, d.ID, int32(c.Ordinal), c.HeadingPath, c.Text, c.Fenced, int32(c.Tokens),
		pgvector.NewVector(c.Embedding), c.EmbedderID, nullTier(d.Tier), d.Installation, d.SourceKind, string(d.Status), d.Title}
}

func nullTier(t ingestd.Tier) any {
	if t == "" {
		return nil
	}
	return string(t)
}

// benchStore opens the cached benchmark corpus, loading it first if needed.
func benchStore(b *testing.B, o *postgres.Options) (*postgres.Store, string) {
	b.Helper()
	srv := serverURL(b)
	graph := benchHNSW()
	name := fmt.Sprintf("ingestd_bench_%d_%d_v6_m%d_efc%d", *benchChunks, benchDims, graph.M, graph.EfConstruction)
	admin := mustConnect(b, srv)
	var exists bool
	if err := admin.QueryRow(ctx(), "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse(srv)
	u.Path = "/" + name
	dbURL := u.String()
	if exists {
		c := mustConnect(b, dbURL)
		var done bool
		c.QueryRow(ctx(), "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE tablename = 'bench_loaded')").Scan(&done)
		if !done {
			c.Close(ctx())
			admin.Exec(ctx(), "DROP DATABASE "+name+" WITH (FORCE)")
			exists = false
		}
	}
	if !exists {
		if _, err := admin.Exec(ctx(), "CREATE DATABASE "+name); err != nil {
			b.Fatal(err)
		}
		loadCorpus(b, dbURL)
	}
	if o == nil {
		o = &postgres.Options{}
	}
	o.Dims = benchDims
	o.HNSWM, o.HNSWEfConstruction = *benchM, *benchEfc
	return pgtest.MustOpenURL(b, dbURL, o), dbURL
}

// benchHNSW is the graph the flags ask for, with the store's defaults.
func benchHNSW() postgres.HNSW {
	g, err := (&postgres.Options{HNSWM: *benchM, HNSWEfConstruction: *benchEfc}).Graph()
	if err != nil {
		panic(err) // a flag pgvector refuses
	}
	return g
}

// loadCorpus writes the corpus with COPY, then builds the search indexes
// (faster than maintaining them row by row).
func loadCorpus(b *testing.B, dbURL string) {
	start := time.Now()
	s, err := postgres.Open(ctx(), dbURL, &postgres.Options{Dims: benchDims})
	if err != nil {
		b.Fatal(err)
	}
	s.Close(context.Background())
	c := mustConnectVec(b, dbURL)
	for _, q := range []string{"DROP INDEX chunks_embedding", "DROP INDEX chunks_search"} {
		if _, err := c.Exec(ctx(), q); err != nil {
			b.Fatal(err)
		}
	}
	cor := newCorpus(1)
	const batchDocs = 1000
	for first := 0; first < *benchChunks/chunksPerDoc; first += batchDocs {
		var docs, chunks, links [][]any
		for i := first; i < first+batchDocs; i++ {
			d, cs, ls := cor.document(i)
			readers := benchReaders(d.ID)
			docs = append(docs, append(docRow(d), readers))
			for _, ch := range cs {
				chunks = append(chunks, append(chunkRow(d, ch), readers))
			}
			for _, l := range ls {
				links = append(links, []any{l.From, l.To, l.Relation})
			}
		}
		for _, cp := range []struct {
			table string
			cols  []string
			rows  [][]any
		}{{"documents", append(docCopyColumns, "readers"), docs}, {"chunks", append(chunkCopyColumns, "readers"), chunks}, {"links", []string{"from_id", "to_id", "relation"}, links}} {
			if _, err := c.CopyFrom(ctx(), pgx.Identifier{cp.table}, cp.cols, pgx.CopyFromRows(cp.rows)); err != nil {
				b.Fatalf("copy %s: %v", cp.table, err)
			}
		}
	}
	b.Logf("copied %d chunks in %v", *benchChunks, time.Since(start).Round(time.Second))
	// A parallel HNSW build keeps its graph (about 1.8 KB + 50 bytes per
	// unit of m a chunk) in dynamic shared memory, which pgvector-up bounds
	// at 1 GB unless told otherwise (-pgbench.shm-mb): a larger graph is
	// built by one process in local memory instead.
	graph := benchHNSW()
	size := *benchChunks * (1800 + 50*graph.M)
	mem, workers := fmt.Sprintf("%dMB", size*5/4>>20), 1
	if size > (*benchShm<<20)*9/10 {
		workers = 0
	}
	index := "CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops)" +
		fmt.Sprintf(" WITH (m = %d, ef_construction = %d)", graph.M, graph.EfConstruction)
	for _, q := range []string{
		"SET maintenance_work_mem = '" + mem + "'",
		fmt.Sprintf("SET max_parallel_maintenance_workers = %d", workers),
		index,
		"CREATE INDEX chunks_search ON chunks USING gin (search)",
		"VACUUM ANALYZE",
		"CREATE TABLE bench_loaded ()",
	} {
		if _, err := c.Exec(ctx(), q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
		b.Logf("%s: done at %v", q, time.Since(start).Round(time.Second))
	}
	b.Logf("corpus ready in %v", time.Since(start).Round(time.Second))
}

// benchReaders are the readers BenchmarkRetrievePrincipal10pct gives
// document id (its UPDATE's rule: alice's when the first 32 bits of the
// id's MD5, as a signed integer, divide by 10, else bob's), written with
// the corpus: setting them afterwards rewrites every chunk and its
// entries in the vector index, longer than the load at a million chunks.
func benchReaders(id string) []string {
	h := md5.Sum([]byte(id))
	if int32(binary.BigEndian.Uint32(h[:4]))%10 == 0 {
		return []string{"user:alice@example.com"}
	}
	return []string{"user:bob@example.com"}
}

// mustConnectVec connects to a database with the vector extension and
// registers the vector type, as the store's pool does.
func mustConnectVec(b *testing.B, dbURL string) *pgx.Conn {
	c := mustConnect(b, dbURL)
	if err := pgxvec.RegisterTypes(ctx(), c); err != nil {
		b.Fatal(err)
	}
	return c
}

// latencies records per-operation durations and reports p50 and p99.
type latencies []time.Duration

func (l latencies) report(b *testing.B, prefix string) {
	if len(l) == 0 {
		return
	}
	s := slices.Clone(l)
	slices.Sort(s)
	q := func(p float64) float64 { return float64(s[int(p*float64(len(s)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.50), prefix+"p50-ms")
	b.ReportMetric(q(0.99), prefix+"p99-ms")
}

func BenchmarkSearchVector(b *testing.B) {
	s, _ := benchStore(b, &postgres.Options{EfSearch: *benchEf})
	vs, _ := newCorpus(2).queries()
	var lat latencies
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t := time.Now()
		hits, err := s.SearchVector(ctx(), vs[i%len(vs)], ingestd.Filter{}, benchTopK)
		lat = append(lat, time.Since(t))
		if err != nil || len(hits) != benchTopK {
			b.Fatalf("SearchVector: %d hits, %v", len(hits), err)
		}
	}
	lat.report(b, "")
}

func BenchmarkSearchVectorFiltered(b *testing.B) {
	s, _ := benchStore(b, &postgres.Options{EfSearch: *benchEf})
	vs, _ := newCorpus(2).queries()
	f := ingestd.Filter{Installations: []string{"inst3"}, Tiers: []ingestd.Tier{ingestd.TierUntrustedExternal, ""}}
	var lat latencies
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t := time.Now()
		hits, err := s.SearchVector(ctx(), vs[i%len(vs)], f, benchTopK)
		lat = append(lat, time.Since(t))
		if err != nil || len(hits) != benchTopK {
			b.Fatalf("SearchVector: %d hits, %v", len(hits), err)
		}
	}
	lat.report(b, "")
}

// BenchmarkSearchText measures SearchText at several TextCandidates and,
// as the baseline, rankAllSQL: the statement before candidates were
// capped, which ranks every chunk holding any query word when fewer than
// limit hold them all. "overlap@10" is the share of rankAllSQL's hits
// (computed once, untimed) that SearchText also returns.
func BenchmarkSearchText(b *testing.B) {
	_, dbURL := benchStore(b, nil)
	_, ts := newCorpus(2).queries()
	raw := mustConnectVec(b, dbURL)
	rankAll := func(q string) ([]string, error) {
		rows, _ := raw.Query(ctx(), rankAllSQL, q, benchTopK)
		return pgx.CollectRows(rows, pgx.RowTo[string])
	}
	want := make([][]string, len(ts))
	for i, q := range ts {
		var err error
		if want[i], err = rankAll(q); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("rank-all", func(b *testing.B) {
		var lat latencies
		for i := 0; b.Loop(); i++ {
			t := time.Now()
			_, err := rankAll(ts[i%len(ts)])
			lat = append(lat, time.Since(t))
			if err != nil {
				b.Fatal(err)
			}
		}
		lat.report(b, "")
	})
	for _, n := range []int{250, 500, 1000, 2000} {
		b.Run(fmt.Sprintf("candidates=%d", n), func(b *testing.B) {
			s, _ := benchStore(b, &postgres.Options{TextCandidates: n})
			var lat latencies
			var same, total int
			for i := 0; b.Loop(); i++ {
				t := time.Now()
				hits, err := s.SearchText(ctx(), ts[i%len(ts)], ingestd.Filter{}, benchTopK)
				lat = append(lat, time.Since(t))
				if err != nil {
					b.Fatal(err)
				}
				for _, h := range hits {
					if slices.Contains(want[i%len(ts)], h.ChunkID) {
						same++
					}
				}
				total += len(want[i%len(ts)])
			}
			lat.report(b, "")
			if total > 0 {
				b.ReportMetric(float64(same)/float64(total), "overlap@10")
			}
		})
	}
}

// rankAllSQL is SearchText's statement without a filter before candidates
// were capped: the baseline of BenchmarkSearchText.
const rankAllSQL = `WITH q AS MATERIALIZED (
		SELECT ingestd_tsquery_or(w) AS any_word, ingestd_tsquery_and(w) AS all_words, count(*) AS words
		FROM ingestd_query_words($1) AS w),
	every_word AS (
		SELECT c.id, ts_rank_cd(c.search, q.any_word) AS score
		FROM q, chunks c
		WHERE c.search @@ q.all_words AND c.status = 'active'
		ORDER BY score DESC, c.id
		LIMIT $2)
	SELECT id FROM (
		SELECT id, score, 0 AS pass FROM every_word
		UNION ALL
		(SELECT c.id, ts_rank(c.search, q.any_word) AS score, 1 AS pass
		FROM q, chunks c
		WHERE (SELECT count(*) FROM every_word) < $2 AND q.words > 1
			AND c.search @@ q.any_word AND NOT c.search @@ q.all_words AND c.status = 'active'
		ORDER BY score DESC, c.id
		LIMIT $2)) AS h
	ORDER BY pass, score DESC, id
	LIMIT $2`

// BenchmarkRetrieve compares the whole retrieval call — retrieval.Service
// over this store: embed, full-text and vector search at once, fusion,
// primary chunks, expansion over links, the rejected block and the verdict's
// tier lookup — with the raw pgvector nearest-neighbour SQL alone, at the
// same ef_search, alternating the two on the same queries. The query
// vector comes from a lookup "embedder", so neither side pays for a model.
func BenchmarkRetrieve(b *testing.B) {
	s, dbURL := benchStore(b, &postgres.Options{EfSearch: *benchEf})
	vs, ts := newCorpus(2).queries()
	emb := lookupEmbedder{}
	for i, q := range ts {
		emb[q] = vs[i]
	}
	var insts []ingestd.Installation // inst0..inst4 declare trusted-internal: the stamps decide
	for i := range 5 {
		insts = append(insts, ingestd.Installation{ID: fmt.Sprintf("inst%d", i), Kind: "files", Tier: ingestd.TierTrustedInternal})
	}
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: emb, Installations: insts})
	if err != nil {
		b.Fatal(err)
	}
	raw := mustConnectVec(b, dbURL)
	if _, err := raw.Exec(ctx(), fmt.Sprintf("SET hnsw.ef_search = %d", *benchEf)); err != nil {
		b.Fatal(err)
	}
	var rawLat, callLat latencies
	var blocked int
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := ts[i%len(ts)]
		t := time.Now()
		rows, _ := raw.Query(ctx(), "SELECT id FROM chunks ORDER BY embedding <=> $1 LIMIT $2", pgvector.NewVector(emb[q]), benchTopK)
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		rawLat = append(rawLat, time.Since(t))
		if err != nil || len(ids) != benchTopK {
			b.Fatalf("raw: %d rows, %v", len(ids), err)
		}
		t = time.Now()
		resp, err := svc.Retrieve(ctx(), ingestd.RetrieveRequest{Query: q, TopK: benchTopK})
		callLat = append(callLat, time.Since(t))
		if err != nil {
			b.Fatal(err)
		}
		if len(resp.Primary) == 0 || len(resp.Expanded) == 0 {
			b.Fatalf("query %q: %d primary, %d expanded chunks", q, len(resp.Primary), len(resp.Expanded))
		}
		if !resp.Verdict.ToolsAllowed {
			blocked++
		}
	}
	rawLat.report(b, "raw-")
	callLat.report(b, "retrieve-")
	var rawSum, callSum time.Duration
	for i := range rawLat {
		rawSum += rawLat[i]
		callSum += callLat[i]
	}
	b.ReportMetric(float64(callSum)/float64(rawSum), "retrieve/raw")
	// A quarter of the corpus is untrusted-external: nearly every answer
	// blocks tools, which shows the verdict looked at every block.
	b.ReportMetric(float64(blocked)/float64(b.N), "blocked")
}

// lookupEmbedder "embeds" a query by looking up its vector.
type lookupEmbedder map[string][]float32

func (lookupEmbedder) ID() string { return "bench/384" }
func (lookupEmbedder) Dims() int  { return benchDims }
func (e lookupEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := e[t]
		if !ok {
			return nil, fmt.Errorf("no vector for %q", t)
		}
		out[i] = v
	}
	return out, nil
}

// BenchmarkRecall measures recall@10 of SearchVector (HNSW) against exact
// search (index scans off) on the same recallQueries queries, for three
// ef_search values. The exact answers are computed once, untimed.
func BenchmarkRecall(b *testing.B) {
	const recallQueries = 50
	_, dbURL := benchStore(b, nil)
	vs, _ := newCorpus(2).queries()
	vs = vs[:recallQueries]
	exact := mustConnectVec(b, dbURL)
	want := make([][]string, len(vs))
	for i, v := range vs {
		var err error
		if want[i], err = exactNN(exact, v, benchTopK); err != nil {
			b.Fatal(err)
		}
	}
	for _, ef := range []int{40, 100, 200, 400, 800, 1000} {
		b.Run(fmt.Sprintf("ef_search=%d", ef), func(b *testing.B) {
			s, _ := benchStore(b, &postgres.Options{EfSearch: ef})
			var found, total, poor int
			var lat latencies
			for i := 0; b.Loop(); i++ {
				v := vs[i%len(vs)]
				t := time.Now()
				hits, err := s.SearchVector(ctx(), v, ingestd.Filter{}, benchTopK)
				lat = append(lat, time.Since(t))
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for _, h := range hits {
					if slices.Contains(want[i%len(vs)], h.ChunkID) {
						n++
					}
				}
				if 2*n < len(want[i%len(vs)]) {
					poor++
				}
				found += n
				total += len(want[i%len(vs)])
			}
			b.ReportMetric(float64(found)/float64(total), "recall@10")
			// Queries that found under half their neighbours: HNSW misses
			// this way when its walk stays in another cluster of the data.
			b.ReportMetric(float64(poor)/float64(b.N), "poor-queries")
			lat.report(b, "")
		})
	}
}

func exactNN(c *pgx.Conn, v []float32, k int) ([]string, error) {
	var ids []string
	err := pgx.BeginFunc(ctx(), c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx(), "SET LOCAL enable_indexscan = off"); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx(), "SELECT id FROM chunks ORDER BY embedding <=> $1 LIMIT $2", pgvector.NewVector(v), k)
		var err error
		ids, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return ids, err
}

// BenchmarkIngest compares chunks/s of PutDocument (one document of 10
// chunks per transaction, as a worker writes them) with a plain COPY of the
// same rows in batches of 1000 documents, each into an empty database with
// the same schema and indexes.
func BenchmarkIngest(b *testing.B) {
	srv := serverURL(b)
	const docs = 1000
	cor := newCorpus(3)
	type item struct {
		d  *ingestd.Document
		cs []ingestd.Chunk
		ls []ingestd.Link
	}
	items := make([]item, docs)
	for i := range items {
		items[i].d, items[i].cs, items[i].ls = cor.document(i)
	}
	b.Run("PutDocument", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			b.StopTimer()
			s := pgtest.MustOpen(b, srv, &postgres.Options{Dims: benchDims, HNSWM: *benchM, HNSWEfConstruction: *benchEfc})
			b.StartTimer()
			t := time.Now()
			for _, it := range items {
				if _, err := s.PutDocument(ctx(), it.d, it.cs, it.ls); err != nil {
					b.Fatal(err)
				}
			}
			elapsed += time.Since(t)
		}
		b.ReportMetric(float64(b.N*docs*chunksPerDoc)/elapsed.Seconds(), "chunks/s")
	})
	b.Run("COPY", func(b *testing.B) {
		var elapsed time.Duration
		for b.Loop() {
			b.StopTimer()
			dbURL := pgtest.MustCreateDB(b, srv)
			pgtest.MustOpenURL(b, dbURL, &postgres.Options{Dims: benchDims, HNSWM: *benchM, HNSWEfConstruction: *benchEfc})
			c := mustConnectVec(b, dbURL)
			var docRows, chunkRows, linkRows [][]any
			for _, it := range items {
				docRows = append(docRows, docRow(it.d))
				for _, ch := range it.cs {
					chunkRows = append(chunkRows, chunkRow(it.d, ch))
				}
				for _, l := range it.ls {
					linkRows = append(linkRows, []any{l.From, l.To, l.Relation})
				}
			}
			b.StartTimer()
			t := time.Now()
			err := pgx.BeginFunc(ctx(), c, func(tx pgx.Tx) error {
				for _, cp := range []struct {
					table string
					cols  []string
					rows  [][]any
				}{{"documents", docCopyColumns, docRows}, {"chunks", chunkCopyColumns, chunkRows}, {"links", []string{"from_id", "to_id", "relation"}, linkRows}} {
					if _, err := tx.CopyFrom(ctx(), pgx.Identifier{cp.table}, cp.cols, pgx.CopyFromRows(cp.rows)); err != nil {
						return err
					}
				}
				return nil
			})
			elapsed += time.Since(t)
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*docs*chunksPerDoc)/elapsed.Seconds(), "chunks/s")
	})
}
