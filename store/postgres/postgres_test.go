package postgres_test

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/postgres/pgtest"
	"github.com/ingestd/ingestd/store/storetest"
)

// serverURL is the test server's URL, or skips the test.
func serverURL(tb testing.TB) string {
	tb.Helper()
	return pgtest.SkipUnlessServer(tb, os.Getenv(pgtest.EnvURL))
}

func ctx() context.Context { return context.Background() }

func TestConformance(t *testing.T) {
	srv := serverURL(t)
	storetest.Run(t, func(t *testing.T) ingestd.Store {
		return pgtest.MustOpen(t, srv, &postgres.Options{Dims: storetest.Dims, FenceCheck: firewall.Check})
	}, func(text string) string {
		return firewall.Fence(text, firewall.Origin{Installation: "inst", SourceKind: "files"})
	})
}

// TestOpenRefuses needs no server: bad options and an unreachable server.
func TestOpenRefuses(t *testing.T) {
	tests := []struct {
		name string
		url  string
		o    *postgres.Options
		want string
	}{
		{"nil options", "postgres://127.0.0.1:1/x", nil, ingestd.EINVALID},
		{"no dims", "postgres://127.0.0.1:1/x", &postgres.Options{}, ingestd.EINVALID},
		{"too many dims", "postgres://127.0.0.1:1/x", &postgres.Options{Dims: 20000}, ingestd.EINVALID},
		{"ef_search over pgvector's bound", "postgres://127.0.0.1:1/x", &postgres.Options{Dims: 8, EfSearch: 5000}, ingestd.EINVALID},
		{"bad url", "postgres://[::1", &postgres.Options{Dims: 8}, ingestd.EINVALID},
		{"unreachable", "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=2", &postgres.Options{Dims: 8}, ingestd.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := postgres.Open(ctx(), tt.url, tt.o)
			if err == nil {
				s.Close(context.Background())
			}
			if got := ingestd.ErrorCode(err); got != tt.want {
				t.Fatalf("Open: %v (code %q), want code %q", err, got, tt.want)
			}
		})
	}
}

func TestMigrations(t *testing.T) {
	srv := serverURL(t)
	db := pgtest.MustCreateDB(t, srv)

	// Concurrent starters on an empty database: all open, the schema is
	// applied once.
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			s, err := postgres.Open(ctx(), db, &postgres.Options{Dims: 16, MaxConns: 2})
			if err == nil {
				err = s.Migrate(ctx()) // idempotent
				s.Close(context.Background())
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Open %d: %v", i, err)
		}
	}
	c := mustConnect(t, db)
	var versions []int
	rows, _ := c.Query(ctx(), "SELECT version FROM schema_version ORDER BY version")
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int, postgres.SchemaVersion())
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(versions, want) {
		t.Fatalf("schema_version rows = %v, want %v", versions, want)
	}

	// Another embedder dimension is refused, naming both.
	_, err = postgres.Open(ctx(), db, &postgres.Options{Dims: 384})
	if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), "16") || !strings.Contains(err.Error(), "384") {
		t.Fatalf("Open with other dims: %v, want EINVALID naming 16 and 384", err)
	}

	// A schema newer than this build is refused, naming both versions.
	newer := postgres.SchemaVersion() + 1
	if _, err := c.Exec(ctx(), "INSERT INTO schema_version (version) VALUES ($1)", newer); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx(), db, &postgres.Options{Dims: 16})
	if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), fmt.Sprint(newer)) ||
		!strings.Contains(err.Error(), fmt.Sprint(postgres.SchemaVersion())) {
		t.Fatalf("Open of a newer schema: %v, want EINVALID naming versions %d and %d", err, newer, postgres.SchemaVersion())
	}
}

// TestMissingExtension opens a database where pgvector is absent and the
// user may not create it: the error tells the operator what to run.
func TestMissingExtension(t *testing.T) {
	srv := serverURL(t)
	admin := mustConnect(t, srv)
	var b [6]byte
	crand.Read(b[:])
	role := "ingestd_plain_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx(), "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mustConnect(t, srv).Exec(ctx(), "DROP ROLE IF EXISTS "+role) })
	u, _ := url.Parse(pgtest.MustCreateDB(t, srv))
	u.User = url.User(role)
	_, err := postgres.Open(ctx(), u.String(), &postgres.Options{Dims: 8})
	if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), "CREATE EXTENSION vector") {
		t.Fatalf("Open without pgvector: %v, want EINVALID with the CREATE EXTENSION vector hint", err)
	}
}

// TestConcurrentPuts has 8 workers write the same documents, in different
// orders and alternating between two versions of each, as redelivered jobs
// do: no error, no duplicate, and each document's chunks are those of the
// version it holds.
func TestConcurrentPuts(t *testing.T) {
	s := pgtest.MustOpen(t, serverURL(t), &postgres.Options{Dims: storetest.Dims, MaxConns: 8})
	const docs, workers = 40, 8
	version := func(i, v int) (*ingestd.Document, []ingestd.Chunk, []ingestd.Link) {
		d := storetest.Doc("inst", fmt.Sprintf("%d.md", i), ingestd.TierUntrustedExternal, fmt.Sprintf("%d-v%d", i, v))
		var texts []string
		for j := range 3 + v {
			texts = append(texts, fmt.Sprintf("document %d version %d paragraph %d", i, v, j))
		}
		texts = append(texts, fmt.Sprintf("document %d paragraph kept in every version", i))
		links := []ingestd.Link{{From: d.ID, To: ingestd.DocumentID("inst", fmt.Sprintf("%d.md", (i+1)%docs)), Relation: "xref"}}
		return d, storetest.Chunks(d, v, texts...), links
	}
	var wg sync.WaitGroup
	errs := make(chan error, docs*workers)
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for _, i := range r.Perm(docs) {
				d, cs, ls := version(i, (i+w)%2)
				if _, err := s.PutDocument(ctx(), d, cs, ls); err != nil {
					errs <- fmt.Errorf("worker %d document %d: %w", w, i, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	refs, err := s.DocumentRefs(ctx(), "inst")
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != docs {
		t.Fatalf("%d documents stored, want %d", len(refs), docs)
	}
	for i := range docs {
		d, err := s.Document(ctx(), ingestd.DocumentID("inst", fmt.Sprintf("%d.md", i)))
		if err != nil {
			t.Fatal(err)
		}
		var want []ingestd.Chunk
		for v := range 2 {
			if vd, cs, _ := version(i, v); vd.ContentHash == d.ContentHash {
				want = cs
			}
		}
		if want == nil {
			t.Fatalf("document %d holds hash %s of no version", i, d.ContentHash)
		}
		views, err := s.DocumentChunks(ctx(), []string{d.ID})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]string, len(views))
		for j, v := range views {
			got[j] = v.ID
		}
		wantIDs := make([]string, len(want))
		for j, c := range want {
			wantIDs[j] = c.ID
		}
		if !slices.Equal(got, wantIDs) {
			t.Fatalf("document %d chunks = %v, want %v", i, got, wantIDs)
		}
		links, err := s.Links(ctx(), []string{d.ID})
		if err != nil {
			t.Fatal(err)
		}
		if len(links) != 2 { // one out, one in
			t.Fatalf("document %d links = %v, want one out and one in", i, links)
		}
	}
	hits, err := s.SearchText(ctx(), "kept", ingestd.Filter{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != docs {
		t.Fatalf("SearchText finds %d copies of the shared paragraph, want %d (one per document)", len(hits), docs)
	}
}

// TestSearchTextHostileQueries feeds queries with quotes, backslashes and
// tsquery operators: none is an error, none is read as syntax.
func TestSearchTextHostileQueries(t *testing.T) {
	s := pgtest.MustOpen(t, serverURL(t), &postgres.Options{Dims: storetest.Dims})
	d := storetest.Doc("inst", "a.md", "", "a")
	storetest.MustPut(t, s, d, storetest.Chunks(d, 0, `O'Neil said C:\temp\x is the path & <-> | ! : * the end`), nil)
	for _, q := range []string{
		`O'Neil`, `'`, `''`, `\`, `\\'`, `C:\temp\x`, `!neil`, `neil & !`, `neil <-> said`, `neil:*`, `neil:A`,
		`(neil | said)`, `'neil' & 'said'`, "neil\x00", "a\u200bneil", strings.Repeat("word ", 500) + "neil",
	} {
		hits, err := s.SearchText(ctx(), q, ingestd.Filter{}, 10)
		if err != nil {
			t.Fatalf("SearchText(%q): %v", q, err)
		}
		if strings.Contains(q, "neil") && !strings.Contains(q, "\u200b") && len(hits) != 1 {
			t.Fatalf("SearchText(%q) = %v, want the one chunk", q, hits)
		}
	}
}

// TestTextPostgresCannotHold: a NUL byte in chunk text is refused as
// EINVALID (Postgres text cannot hold it), not as an internal error, and
// leaves nothing behind.
func TestTextPostgresCannotHold(t *testing.T) {
	s := pgtest.MustOpen(t, serverURL(t), &postgres.Options{Dims: storetest.Dims})
	d := storetest.Doc("inst", "nul.md", "", "nul")
	_, err := s.PutDocument(ctx(), d, storetest.Chunks(d, 0, "before\x00after"), nil)
	if code := ingestd.ErrorCode(err); code != ingestd.EINVALID {
		t.Fatalf("PutDocument with NUL: %v (code %q), want invalid", err, code)
	}
	if _, err := s.Document(ctx(), d.ID); ingestd.ErrorCode(err) != ingestd.ENOTFOUND {
		t.Fatalf("refused put left a document behind: %v", err)
	}
}

// TestSearchVectorFilteredFillsLimit: a filter that only far-away chunks
// pass still returns limit rows, although the HNSW candidate list (10) is
// full of chunks the filter drops.
func TestSearchVectorFilteredFillsLimit(t *testing.T) {
	s := pgtest.MustOpen(t, serverURL(t), &postgres.Options{Dims: storetest.Dims, EfSearch: 10})
	r := rand.New(rand.NewPCG(7, 7))
	near := func(axis int, spread float32) []float32 {
		v := storetest.Axis(axis)
		for i := range v {
			v[i] += spread * float32(r.NormFloat64())
		}
		return v
	}
	for i := range 400 {
		d := storetest.Doc("crowd", fmt.Sprintf("%d.md", i), "", fmt.Sprint(i))
		cs := storetest.Chunks(d, 0, fmt.Sprintf("crowd %d a", i), fmt.Sprintf("crowd %d b", i))
		for j := range cs {
			cs[j].Embedding = near(0, 0.05)
		}
		storetest.MustPut(t, s, d, cs, nil)
	}
	var few []string
	for i := range 15 {
		d := storetest.Doc("few", fmt.Sprintf("%d.md", i), "", fmt.Sprint(i))
		cs := storetest.Chunks(d, 0, fmt.Sprintf("few %d", i))
		cs[0].Embedding = near(3, 0.3)
		storetest.MustPut(t, s, d, cs, nil)
		few = append(few, cs[0].ID)
	}
	hits, err := s.SearchVector(ctx(), storetest.Axis(0), ingestd.Filter{Installations: []string{"few"}}, 12)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 12 {
		t.Fatalf("filtered search: %d hits, want 12", len(hits))
	}
	for i, h := range hits {
		if !slices.Contains(few, h.ChunkID) {
			t.Fatalf("hit %s passes no filter", h.ChunkID)
		}
		if i > 0 && h.Score > hits[i-1].Score {
			t.Fatalf("hits not in score order: %v", hits)
		}
	}
}

func mustConnect(tb testing.TB, u string) *pgx.Conn {
	tb.Helper()
	c, err := pgx.Connect(ctx(), u)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(func() { c.Close(ctx()) })
	return c
}

// TestSearchTextRarestWordFirst: when no chunk holds every word, chunks
// holding the query's rarest word (by the statistics ANALYZE keeps) rank
// above chunks that hold a common word many times, and the common word's
// chunks fill the rest.
func TestSearchTextRarestWordFirst(t *testing.T) {
	db := pgtest.MustCreateDB(t, serverURL(t))
	s := pgtest.MustOpenURL(t, db, &postgres.Options{Dims: storetest.Dims})
	var common []string
	for i := range 40 {
		d := storetest.Doc("inst", fmt.Sprintf("common-%d.md", i), "", fmt.Sprint(i))
		storetest.MustPut(t, s, d, storetest.Chunks(d, 0, fmt.Sprintf("alpha alpha alpha beta note %d", i)), nil)
		common = append(common, d.ID)
	}
	rare := storetest.Doc("inst", "rare.md", "", "rare")
	storetest.MustPut(t, s, rare, storetest.Chunks(rare, 0, "zircon found once in a long paragraph of other words"), nil)
	if _, err := mustConnect(t, db).Exec(ctx(), "ANALYZE chunks"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"alpha zircon", "zircon alpha"} {
		hits, err := s.SearchText(ctx(), q, ingestd.Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 10 || hits[0].DocumentID != rare.ID {
			t.Fatalf("SearchText(%q) = %v, want 10 hits, %s first", q, hits, rare.ID)
		}
		for _, h := range hits[1:] {
			if !slices.Contains(common, h.DocumentID) {
				t.Fatalf("SearchText(%q): hit %v holds no query word", q, h)
			}
		}
	}
}

// TestSearchTextCandidates: a pass ranks at most TextCandidates chunks,
// but a larger limit raises the cap, so a query still gets limit hits.
func TestSearchTextCandidates(t *testing.T) {
	s := pgtest.MustOpen(t, serverURL(t), &postgres.Options{Dims: storetest.Dims, TextCandidates: 3})
	for i := range 20 {
		d := storetest.Doc("inst", fmt.Sprintf("%d.md", i), "", fmt.Sprint(i))
		storetest.MustPut(t, s, d, storetest.Chunks(d, 0, fmt.Sprintf("needle %d", i), fmt.Sprintf("needle and thread %d", i)), nil)
	}
	tests := []struct {
		name  string
		query string
		limit int
		want  int
	}{
		{"limit under the cap", "needle", 2, 2},
		{"limit over the cap", "needle", 30, 30},
		{"every match", "needle", 100, 40},
		{"every word then any word", "needle thread", 25, 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits, err := s.SearchText(ctx(), tt.query, ingestd.Filter{}, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != tt.want {
				t.Fatalf("SearchText(%q, limit %d): %d hits, want %d", tt.query, tt.limit, len(hits), tt.want)
			}
			seen := map[string]bool{}
			for _, h := range hits {
				if seen[h.ChunkID] {
					t.Fatalf("chunk %s returned twice", h.ChunkID)
				}
				seen[h.ChunkID] = true
			}
		})
	}
}
