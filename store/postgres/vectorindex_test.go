package postgres_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/postgres/pgtest"
	"github.com/ingestd/ingestd/store/storetest"
)

// TestHNSWOptionsRefused needs no server: a graph pgvector would refuse is
// refused before connecting, naming the bound.
func TestHNSWOptionsRefused(t *testing.T) {
	for _, tt := range []struct {
		o    postgres.Options
		want string
	}{
		{postgres.Options{Dims: 8, HNSWM: 1}, "m 1"},
		{postgres.Options{Dims: 8, HNSWM: 101}, "m 101"},
		{postgres.Options{Dims: 8, HNSWEfConstruction: 3}, "ef_construction 3"},
		{postgres.Options{Dims: 8, HNSWEfConstruction: 1001}, "ef_construction 1001"},
		{postgres.Options{Dims: 8, HNSWM: 40, HNSWEfConstruction: 64}, "at least 2 * m (80)"},
	} {
		_, err := postgres.Open(ctx(), "postgres://127.0.0.1:1/x", &tt.o)
		if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(m %d, ef_construction %d): %v, want EINVALID naming %q", tt.o.HNSWM, tt.o.HNSWEfConstruction, err, tt.want)
		}
	}
}

// TestHNSWNewDatabase: a new database's vector index gets the graph the
// options ask for; an unset option takes the default, and an m whose
// double exceeds the default ef_construction raises it.
func TestHNSWNewDatabase(t *testing.T) {
	srv := serverURL(t)
	for _, tt := range []struct {
		o    postgres.Options
		want postgres.HNSW
	}{
		{postgres.Options{Dims: 8}, postgres.DefaultHNSW},
		{postgres.Options{Dims: 8, HNSWM: 8, HNSWEfConstruction: 40}, postgres.HNSW{M: 8, EfConstruction: 40}},
		{postgres.Options{Dims: 8, HNSWM: 60}, postgres.HNSW{M: 60, EfConstruction: max(postgres.DefaultHNSW.EfConstruction, 120)}},
	} {
		s := pgtest.MustOpen(t, srv, &tt.o)
		have, want, err := s.VectorIndex(ctx())
		if err != nil {
			t.Fatal(err)
		}
		if have != tt.want || want != tt.want {
			t.Errorf("options m %d ef_construction %d: index %v, configured %v; want %v for both",
				tt.o.HNSWM, tt.o.HNSWEfConstruction, have, want, tt.want)
		}
	}
}

// TestRebuildVectorIndex: a database holding chunks keeps its graph when
// the options change (Open warns, naming both), until RebuildVectorIndex,
// which runs while another writer goes on: afterwards the index has the
// new graph and every chunk, those written during the rebuild too, is its
// own nearest neighbour through it.
func TestRebuildVectorIndex(t *testing.T) {
	db := pgtest.MustCreateDB(t, serverURL(t))
	old := postgres.HNSW{M: 8, EfConstruction: 32}
	s := pgtest.MustOpenURL(t, db, &postgres.Options{Dims: storetest.Dims, HNSWM: old.M, HNSWEfConstruction: old.EfConstruction})
	chunk := func(i int) (*ingestd.Document, []ingestd.Chunk) {
		d := storetest.Doc("rebuild", fmt.Sprintf("%d.md", i), "", fmt.Sprint(i))
		cs := storetest.Chunks(d, 0, fmt.Sprintf("chunk %d", i))
		cs[0].Embedding = spread(i)
		return d, cs
	}
	put := func(i int) error {
		d, cs := chunk(i)
		_, err := s.PutDocument(ctx(), d, cs, nil)
		return err
	}
	for i := range 300 {
		if err := put(i); err != nil {
			t.Fatal(err)
		}
	}

	var logs bytes.Buffer
	next := postgres.HNSW{M: 12, EfConstruction: 48}
	s2 := pgtest.MustOpenURL(t, db, &postgres.Options{Dims: storetest.Dims, HNSWM: next.M, HNSWEfConstruction: next.EfConstruction,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	have, want, err := s2.VectorIndex(ctx())
	if err != nil {
		t.Fatal(err)
	}
	if have != old || want != next {
		t.Fatalf("after reopening with %v: index %v, configured %v", next, have, want)
	}
	if !strings.Contains(logs.String(), "--rebuild-vector-index") || !strings.Contains(logs.String(), old.String()) ||
		!strings.Contains(logs.String(), next.String()) {
		t.Fatalf("Open logged %q, want a warning naming both graphs and the command", logs.String())
	}

	// A writer goes on during the rebuild.
	var wg sync.WaitGroup
	var stop atomic.Bool
	written := 300
	var putErr error
	wg.Go(func() {
		for !stop.Load() && written < 600 && putErr == nil {
			putErr = put(written)
			written++
		}
	})
	var reports int
	got, err := s2.RebuildVectorIndex(ctx(), postgres.RebuildOptions{
		MaintenanceWorkMem: "64MB",
		Every:              time.Millisecond,
		Progress:           func(postgres.RebuildProgress) { reports++ },
	})
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if putErr != nil {
		t.Fatalf("write during the rebuild: %v", putErr)
	}
	if got != next {
		t.Fatalf("rebuilt index %v, want %v", got, next)
	}
	if have, _, _ := s.VectorIndex(ctx()); have != next {
		t.Fatalf("index read back as %v, want %v", have, next)
	}
	t.Logf("%d chunks written during the rebuild, %d progress reports", written-300, reports)
	// Every chunk is found through the new index: a table this small is
	// otherwise sorted whole, so sequential scans are off, and EXPLAIN
	// shows the index is used.
	c := mustConnect(t, db)
	if _, err := c.Exec(ctx(), "SET enable_seqscan = off"); err != nil {
		t.Fatal(err)
	}
	const nearest = "SELECT id FROM chunks ORDER BY embedding <=> $1::vector LIMIT 1"
	var plan []string
	rows, _ := c.Query(ctx(), "EXPLAIN "+nearest, vectorText(spread(0)))
	plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(plan, "\n"), "Index Scan using chunks_embedding ") {
		t.Fatalf("the nearest-neighbour query does not read chunks_embedding:\n%s", strings.Join(plan, "\n"))
	}
	for i := range written {
		var id string
		if err := c.QueryRow(ctx(), nearest, vectorText(spread(i))).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if _, cs := chunk(i); id != cs[0].ID {
			t.Fatalf("chunk %d (written %s the rebuild): nearest is %s, want itself", i, map[bool]string{true: "before", false: "during"}[i < 300], id)
		}
	}
	if hits, err := s2.SearchVector(ctx(), spread(0), ingestd.Filter{}, 3); err != nil || len(hits) != 3 {
		t.Fatalf("SearchVector after the rebuild: %v, %v", hits, err)
	}
}

// vectorText is v in pgvector's text form.
func vectorText(v []float32) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// TestRebuildVectorIndexExclusive: a rebuild while another holds the
// rebuild lock returns ECONFLICT; a half-built index, or an old one not yet
// dropped, left by a rebuild cut short is dropped by the next one.
func TestRebuildVectorIndexExclusive(t *testing.T) {
	db := pgtest.MustCreateDB(t, serverURL(t))
	s := pgtest.MustOpenURL(t, db, &postgres.Options{Dims: storetest.Dims})
	c := mustConnect(t, db)
	if _, err := c.Exec(ctx(), "SELECT pg_advisory_lock($1)", int64(0x696e6765737464+1)); err != nil {
		t.Fatal(err)
	}
	_, err := s.RebuildVectorIndex(ctx(), postgres.RebuildOptions{})
	if ingestd.ErrorCode(err) != ingestd.ECONFLICT {
		t.Fatalf("rebuild while another runs: %v, want ECONFLICT", err)
	}
	if _, err := c.Exec(ctx(), "SELECT pg_advisory_unlock($1)", int64(0x696e6765737464+1)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE INDEX chunks_embedding_rebuild ON chunks (id)", "CREATE INDEX chunks_embedding_old ON chunks (ordinal)"} {
		if _, err := c.Exec(ctx(), q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.RebuildVectorIndex(ctx(), postgres.RebuildOptions{}); err != nil {
		t.Fatalf("rebuild over a leftover index: %v", err)
	}
	var n int
	c.QueryRow(ctx(), "SELECT count(*) FROM pg_indexes WHERE tablename = 'chunks' AND indexname LIKE 'chunks_embedding%'").Scan(&n)
	if n != 1 {
		t.Fatalf("%d chunks_embedding* indexes after the rebuild, want 1", n)
	}
}

// spread is a random vector for each i, the same every call: its own
// nearest neighbour.
func spread(i int) []float32 {
	r := rand.New(rand.NewPCG(uint64(i), 99))
	v := make([]float32, storetest.Dims)
	for j := range v {
		v[j] = float32(r.NormFloat64())
	}
	return v
}
