package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd"
)

// mustOpen opens a store in a database of its own (pgtest cannot be
// imported here: it imports this package).
func mustOpen(t *testing.T, o *Options) *Store {
	t.Helper()
	srv := os.Getenv("INGESTD_TEST_POSTGRES_URL")
	if srv == "" {
		t.Skip("no PostgreSQL server: set INGESTD_TEST_POSTGRES_URL to a PostgreSQL ≥ 15 with pgvector ≥ 0.8, e.g. the compose.yaml postgres service")
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	name := fmt.Sprintf("ingestd_test_internal_%d", time.Now().UnixNano())
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, srv); err == nil {
			c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	u, _ := url.Parse(srv)
	u.Path = "/" + name
	s, err := Open(ctx, u.String(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// TestSessionSettings: every pooled connection carries the options'
// ef_search, the iterative scan and the statement timeout, and a statement
// that runs out of time is EUNAVAILABLE.
func TestSessionSettings(t *testing.T) {
	s := mustOpen(t, &Options{Dims: 4, EfSearch: 77, StatementTimeout: 300 * time.Millisecond, MaxConns: 3})
	ctx := context.Background()
	for _, tc := range []struct{ setting, want string }{
		{"hnsw.ef_search", "77"},
		{"hnsw.iterative_scan", "relaxed_order"},
		{"statement_timeout", "300ms"},
	} {
		var got string
		if err := s.pool.QueryRow(ctx, "SELECT current_setting($1)", tc.setting).Scan(&got); err != nil {
			t.Fatalf("%s: %v", tc.setting, err)
		}
		if got != tc.want {
			t.Fatalf("%s = %q, want %q", tc.setting, got, tc.want)
		}
	}
	if got := s.pool.Config().MaxConns; got != 3 {
		t.Fatalf("MaxConns = %d, want 3", got)
	}
	_, err := s.pool.Exec(ctx, "SELECT pg_sleep(5)")
	if err == nil {
		t.Fatal("pg_sleep(5) with a 300ms statement timeout: no error")
	}
	if got := ingestd.ErrorCode(classify("sleep", err)); got != ingestd.EUNAVAILABLE {
		t.Fatalf("statement timeout: code %q (%v), want unavailable", got, err)
	}
}

func TestMigrationsNumbered(t *testing.T) {
	ms := migrations() // panics on a gap or a misnamed file
	if len(ms) == 0 || SchemaVersion() != len(ms) {
		t.Fatalf("%d migrations, SchemaVersion %d", len(ms), SchemaVersion())
	}
	for _, m := range ms {
		if m.SQL == "" {
			t.Fatalf("migration %s is empty", m.Name)
		}
	}
}

// TestRebuildVectorIndexNeverStallsQueries: when the swap meets a
// transaction that still holds the chunks table (here an idle one that
// read it), searches and writes go on; the rebuild ends once that
// transaction does. A swap by DROP INDEX would queue every query behind its
// lock request until the reader finished.
func TestRebuildVectorIndexNeverStallsQueries(t *testing.T) {
	s := mustOpen(t, &Options{Dims: 4, HNSWM: 8, HNSWEfConstruction: 32})
	ctx := context.Background()
	put := func(i int) error {
		d := &ingestd.Document{Installation: "stall", ExternalID: fmt.Sprintf("%d.md", i), SourceKind: "files",
			ContentHash: fmt.Sprint(i), Status: ingestd.StatusActive}
		d.ID = ingestd.DocumentID(d.Installation, d.ExternalID)
		text := fmt.Sprintf("chunk %d", i)
		_, err := s.PutDocument(ctx, d, []ingestd.Chunk{{ID: ingestd.ChunkID(d.ID, text, 0), DocumentID: d.ID, Text: text,
			Fenced: text, Embedding: []float32{float32(i), 1, float32(i % 3), 0.5}, EmbedderID: "test/4"}}, nil)
		return err
	}
	for i := range 50 {
		if err := put(i); err != nil {
			t.Fatal(err)
		}
	}
	s.hnsw = HNSW{M: 12, EfConstruction: 48} // as if reopened with other options

	var reader pgx.Tx
	s.beforeSwap = func() {
		var err error
		if reader, err = s.pool.Begin(ctx); err == nil {
			_, err = reader.Exec(ctx, "SELECT count(*) FROM chunks")
		}
		if err != nil {
			panic(err)
		}
	}
	var rebuildErr error
	done := make(chan struct{})
	t.Cleanup(func() {
		if reader != nil {
			reader.Rollback(ctx) // lets a stuck rebuild finish before the store closes
		}
		<-done
	})
	go func() {
		defer close(done)
		_, rebuildErr = s.RebuildVectorIndex(ctx, RebuildOptions{})
	}()
	// Wait until the rebuild is blocked on the reader.
	for waiting := false; !waiting; {
		select {
		case <-done:
			t.Fatalf("rebuild ended (%v) while a transaction still held the table", rebuildErr)
		case <-time.After(20 * time.Millisecond):
		}
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'DROP INDEX%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
	// Queries are not queued behind it. The deadline only keeps a queued
	// query from hanging the test: it would wait for the reader.
	qctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if hits, err := s.SearchVector(qctx, []float32{3, 1, 0, 0.5}, ingestd.Filter{}, 1); err != nil || len(hits) != 1 {
		t.Fatalf("search while the rebuild waits: %v, %v", hits, err)
	}
	if err := put(50); err != nil {
		t.Fatalf("write while the rebuild waits: %v", err)
	}
	if err := reader.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if rebuildErr != nil {
		t.Fatal(rebuildErr)
	}
	if have, _, _ := s.VectorIndex(ctx); have != (HNSW{M: 12, EfConstruction: 48}) {
		t.Fatalf("index after the rebuild: %v", have)
	}
}

// TestSearchesAreNeverPrepared: searches run as unnamed statements, so
// Postgres plans each with its values and never falls back to a generic
// plan (which cannot see the query's words or the filter). Another
// statement, run as often, is prepared: the check can tell them apart.
func TestSearchesAreNeverPrepared(t *testing.T) {
	s := mustOpen(t, &Options{Dims: 4, MaxConns: 1}) // one connection: its prepared statements are all of them
	ctx := context.Background()
	d := &ingestd.Document{Installation: "p", ExternalID: "a.md", SourceKind: "files", ContentHash: "a", Status: ingestd.StatusActive}
	d.ID = ingestd.DocumentID(d.Installation, d.ExternalID)
	if _, err := s.PutDocument(ctx, d, []ingestd.Chunk{{ID: ingestd.ChunkID(d.ID, "deploy runbook", 0), DocumentID: d.ID,
		Text: "deploy runbook", Fenced: "deploy runbook", Embedding: []float32{1, 0, 0, 0}, EmbedderID: "t/4"}}, nil); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if _, err := s.SearchText(ctx, "deploy runbook", ingestd.Filter{}, 5); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SearchVector(ctx, []float32{1, 0, 0, 0}, ingestd.Filter{Statuses: []ingestd.Status{ingestd.StatusRejected}}, 5); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TierFacts(ctx, []string{d.ID}, nil); err != nil {
			t.Fatal(err)
		}
	}
	rows, _ := s.pool.Query(ctx, "SELECT statement FROM pg_prepared_statements")
	prepared, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var tiers bool
	for _, p := range prepared {
		if strings.Contains(p, "ts_rank") || strings.Contains(p, "<=>") {
			t.Errorf("a search is a prepared statement: %.80s…", p)
		}
		tiers = tiers || strings.Contains(p, "tier")
	}
	if !tiers {
		t.Fatalf("the TierFacts lookup is not among the prepared statements %q: the check cannot see what is prepared", prepared)
	}
}

// TestChunkRowsStayWhole: a chunk row of about 3.5 KB (a 384-d vector, its
// text, fenced text and tsvector) stays in the table, so reading its
// vector costs no TOAST fetch. Under Postgres's default target the vector
// would move to the TOAST table.
func TestChunkRowsStayWhole(t *testing.T) {
	s := mustOpen(t, &Options{Dims: 384})
	ctx := context.Background()
	var words []string
	for i := range 60 {
		words = append(words, fmt.Sprintf("w%dx%d", i, i*7919%1000))
	}
	text := strings.Join(words, " ")
	v := make([]float32, 384)
	for i := range v {
		v[i] = float32(i%17) / 17
	}
	for i := range 20 {
		d := &ingestd.Document{Installation: "w", ExternalID: fmt.Sprintf("%d.md", i), SourceKind: "files", ContentHash: "h", Status: ingestd.StatusActive}
		d.ID = ingestd.DocumentID(d.Installation, d.ExternalID)
		body := fmt.Sprint(i) + " " + text
		if _, err := s.PutDocument(ctx, d, []ingestd.Chunk{{ID: ingestd.ChunkID(d.ID, body, 0), DocumentID: d.ID,
			Text: body, Fenced: "<<" + body + ">>", Embedding: v, EmbedderID: "t/384"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var row, toast int64
	if err := s.pool.QueryRow(ctx, `SELECT (SELECT max(pg_column_size(c.*)) FROM chunks c),
		pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = 'chunks'::regclass`).Scan(&row, &toast); err != nil {
		t.Fatal(err)
	}
	if row < 2500 {
		t.Fatalf("rows of %d bytes: too small to show anything", row)
	}
	if toast != 0 {
		t.Fatalf("rows of %d bytes: %d bytes went to the TOAST table", row, toast)
	}
}

// TestCloseBoundedByContext: Close waits for a connection in use no longer
// than its context, and the pool still closes once it is released.
func TestCloseBoundedByContext(t *testing.T) {
	s := mustOpen(t, &Options{Dims: 4})
	ctx := context.Background()
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Close(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("Close with a connection in use and an ended context = %v, want context.Canceled", err)
	}
	conn.Release()
	if err := s.Close(ctx); err != nil {
		t.Fatalf("Close after the release = %v", err)
	}
}
