package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd"
)

// HNSW is the shape of the vector index's graph: M links per node (2*M on
// the bottom layer) and the candidate list EfConstruction of the search
// that places each new vector. A denser graph finds more of the true
// nearest neighbours at the same ef_search, and costs build time, index
// size and insert time. See docs/BENCHMARKS.md for what each shape measured.
type HNSW struct {
	M              int
	EfConstruction int
}

// pgvector's own defaults: what an index built without options has.
var pgvectorDefault = HNSW{M: 16, EfConstruction: 64}

// DefaultHNSW is the graph a new database gets when Options leave it
// unset.
var DefaultHNSW = HNSW{M: 16, EfConstruction: 64}

func (h HNSW) String() string {
	return fmt.Sprintf("m=%d ef_construction=%d", h.M, h.EfConstruction)
}

// with is the index's WITH clause.
func (h HNSW) with() string {
	return fmt.Sprintf("WITH (m = %d, ef_construction = %d)", h.M, h.EfConstruction)
}

// Graph is the vector index graph o asks for: HNSWM and HNSWEfConstruction
// with DefaultHNSW's values where they are zero (ef_construction raised to
// 2 * m when only m is set), checked against pgvector's limits (EINVALID).
func (o *Options) Graph() (HNSW, error) {
	h := HNSW{M: o.HNSWM, EfConstruction: o.HNSWEfConstruction}
	if h.M == 0 {
		h.M = DefaultHNSW.M
	}
	if h.EfConstruction == 0 {
		h.EfConstruction = max(DefaultHNSW.EfConstruction, 2*h.M)
	}
	switch {
	case h.M < 2 || h.M > 100:
		return h, ingestd.Errorf(ingestd.EINVALID, "postgres store: hnsw m %d: pgvector allows 2 to 100", h.M)
	case h.EfConstruction < 4 || h.EfConstruction > 1000:
		return h, ingestd.Errorf(ingestd.EINVALID, "postgres store: hnsw ef_construction %d: pgvector allows 4 to 1000", h.EfConstruction)
	case h.EfConstruction < 2*h.M:
		return h, ingestd.Errorf(ingestd.EINVALID, "postgres store: hnsw ef_construction %d: must be at least 2 * m (%d)", h.EfConstruction, 2*h.M)
	}
	return h, nil
}

// vectorIndexSQL creates the vector index name with graph h.
func vectorIndexSQL(name string, h HNSW, concurrently bool) string {
	c := ""
	if concurrently {
		c = "CONCURRENTLY "
	}
	return fmt.Sprintf("CREATE INDEX %s%s ON chunks USING hnsw (embedding vector_cosine_ops) %s", c, name, h.with())
}

// readHNSW returns the graph the index chunks_embedding was built with
// (pgvector's defaults for an option it was not given).
func readHNSW(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) (HNSW, error) {
	var opts []string
	err := q.QueryRow(ctx, "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'chunks_embedding'::regclass").Scan(&opts)
	if err != nil {
		return HNSW{}, classify("read the vector index's options", err)
	}
	h := pgvectorDefault
	for _, o := range opts {
		k, v, _ := strings.Cut(o, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		switch k {
		case "m":
			h.M = n
		case "ef_construction":
			h.EfConstruction = n
		}
	}
	return h, nil
}

// reshapeEmpty rebuilds the vector index with graph want when it has
// another and no chunk is stored (a new database: instant). It runs inside
// the migration's transaction, under its lock. With chunks stored it
// leaves the index alone (a rebuild can take an hour at a million chunks:
// RebuildVectorIndex does it online) and returns the graph the index has.
func reshapeEmpty(ctx context.Context, tx pgx.Tx, want HNSW) (HNSW, error) {
	have, err := readHNSW(ctx, tx)
	if err != nil || have == want {
		return have, err
	}
	var empty bool
	if err := tx.QueryRow(ctx, "SELECT NOT EXISTS (SELECT 1 FROM chunks)").Scan(&empty); err != nil {
		return have, classify("count chunks", err)
	}
	if !empty {
		return have, nil
	}
	for _, q := range []string{"DROP INDEX chunks_embedding", vectorIndexSQL("chunks_embedding", want, false)} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return have, classify("reshape the vector index", err)
		}
	}
	return want, nil
}

// VectorIndex returns the graph the vector index has and the one the
// store's options ask for. They differ when the options changed after
// chunks were stored, until RebuildVectorIndex.
func (s *Store) VectorIndex(ctx context.Context) (have, want HNSW, err error) {
	have, err = readHNSW(ctx, s.pool)
	return have, s.hnsw, err
}

// RebuildProgress is a report of a running rebuild, from Postgres's
// pg_stat_progress_create_index. pgvector reports the table blocks read
// while it loads vectors into the graph; totals are 0 when unknown.
type RebuildProgress struct {
	Phase                   string
	TuplesDone, TuplesTotal int64
	BlocksDone, BlocksTotal int64
	Elapsed                 time.Duration
}

// RebuildOptions tune RebuildVectorIndex.
type RebuildOptions struct {
	// MaintenanceWorkMem is the memory the build may keep its graph in
	// (Postgres's maintenance_work_mem, e.g. "4GB"); empty keeps the
	// server's. A graph that does not fit is finished on disk, much slower:
	// about 1.8 KB + 50 bytes per unit of m per chunk at 384 dimensions.
	MaintenanceWorkMem string
	// Progress, when set, is called every Every (default 10s) while the
	// index builds.
	Progress func(RebuildProgress)
	Every    time.Duration
}

// rebuildLock is the session advisory lock a rebuild holds, so that two
// operators do not build two new indexes at once.
const rebuildLock int64 = migrationLock + 1

// RebuildVectorIndex builds the vector index anew with the store's graph
// (Options.HNSWM, HNSWEfConstruction) next to the old one, with CREATE
// INDEX CONCURRENTLY, so that writes and searches go on meanwhile
// (searches use the old index), then renames the two in one short
// transaction that neither reads nor writes wait for, and drops the old
// one concurrently. A rebuild cut short leaves the old index in place; the
// next one drops the half-built (or left-over old) index first. Returns ECONFLICT when another
// rebuild is running, and the graph the index has at the end.
func (s *Store) RebuildVectorIndex(ctx context.Context, o RebuildOptions) (HNSW, error) {
	pc, err := s.pool.Acquire(ctx)
	if err != nil {
		return HNSW{}, unavailable("connect to "+s.url, err)
	}
	// The connection leaves the pool: its session settings (no statement
	// timeout, the lock) must not reach other callers.
	c := pc.Hijack()
	defer c.Close(context.WithoutCancel(ctx))
	var locked bool
	if err := c.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", rebuildLock).Scan(&locked); err != nil {
		return HNSW{}, classify("lock the vector index", err)
	}
	if !locked {
		return HNSW{}, ingestd.Errorf(ingestd.ECONFLICT, "another rebuild of the vector index of %s is running", s.url)
	}
	settings := []string{"SET statement_timeout = 0"}
	if o.MaintenanceWorkMem != "" {
		settings = append(settings, "SET maintenance_work_mem = "+quoteLiteral(o.MaintenanceWorkMem))
	}
	for _, q := range append(settings,
		"DROP INDEX CONCURRENTLY IF EXISTS chunks_embedding_rebuild",
		"DROP INDEX CONCURRENTLY IF EXISTS chunks_embedding_old") {
		if _, err := c.Exec(ctx, q); err != nil {
			return HNSW{}, classify("prepare the rebuild ("+q+")", err)
		}
	}
	var pid uint32 = c.PgConn().PID()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if o.Progress != nil {
			s.reportRebuild(ctx, pid, o, stop)
		}
	}()
	_, err = c.Exec(ctx, vectorIndexSQL("chunks_embedding_rebuild", s.hnsw, true))
	close(stop)
	<-done
	if err != nil {
		c.Exec(context.WithoutCancel(ctx), "DROP INDEX CONCURRENTLY IF EXISTS chunks_embedding_rebuild")
		return HNSW{}, classify("build the new vector index", err)
	}
	if s.beforeSwap != nil {
		s.beforeSwap()
	}
	// Renaming an index takes a lock that reads and writes do not wait
	// for (SHARE UPDATE EXCLUSIVE), so the swap never stalls the store;
	// the old index is then dropped concurrently.
	err = pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		for _, q := range []string{
			"ALTER INDEX chunks_embedding RENAME TO chunks_embedding_old",
			"ALTER INDEX chunks_embedding_rebuild RENAME TO chunks_embedding",
		} {
			if _, err := tx.Exec(ctx, q); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return HNSW{}, classify("swap in the new vector index (it is built as chunks_embedding_rebuild; run the rebuild again)", err)
	}
	if _, err := c.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS chunks_embedding_old"); err != nil {
		return HNSW{}, classify("drop the old vector index (chunks_embedding_old; the next rebuild drops it)", err)
	}
	return readHNSW(ctx, c)
}

// reportRebuild calls o.Progress every o.Every until stop is closed.
func (s *Store) reportRebuild(ctx context.Context, pid uint32, o RebuildOptions, stop <-chan struct{}) {
	every := o.Every
	if every <= 0 {
		every = 10 * time.Second
	}
	start := time.Now()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p := RebuildProgress{Elapsed: time.Since(start)}
		err := s.pool.QueryRow(ctx, `SELECT phase, tuples_done, tuples_total, blocks_done, blocks_total
			FROM pg_stat_progress_create_index WHERE pid = $1`, int32(pid)).Scan(&p.Phase, &p.TuplesDone, &p.TuplesTotal, &p.BlocksDone, &p.BlocksTotal)
		if err != nil {
			continue // between phases, or the server is busy: report next time
		}
		o.Progress(p)
	}
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
