// Package sqlite is the embedded ingestd.Store: one SQLite file in WAL mode
// holding the documents, chunks (text, fenced text, float32 vector) and
// links, and an in-memory index over the chunks that answers searches:
// each chunk's document's filter fields, an int8 copy of its vector
// (package store/sqlite/internal/vecindex, rescored exactly from the file)
// and its terms (package store/sqlite/internal/textindex, BM25). The
// in-memory index is saved beside the file (snapshot.go) so that a new
// process loads it in one read.
//
// Writes go through one connection, serialised in Go, and concurrent
// PutDocument calls share a transaction; reads use a small pool. The file
// may be shared with other ingestd processes: SQLite's WAL and busy
// timeout order their writes, and the in-memory index catches up with
// what any process committed (new chunks by seq, the rest from the changes
// table) before every search. It is loaded on the first search, or by Warm.
//
// It never decides what a tier means (package provenance does) and never
// interprets query syntax: search text is split into words here.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/private"
)

var _ ingestd.Store = (*Store)(nil)

// driverName is the database/sql driver the store opens its file with:
// mattn/go-sqlite3's, under a name of its own.
const driverName = "sqlite3_ingestd"

var registerOnce sync.Once

func registerDriver() {
	registerOnce.Do(func() { sql.Register(driverName, &sqlite3.SQLiteDriver{}) })
}

// Options configure a Store. A nil *Options means the defaults.
type Options struct {
	// Now is the clock for ingested_at, deleted_at and installation
	// timestamps; default time.Now.
	Now func() time.Time
	// Logger receives what the store reports on its own (index reloads);
	// default discards.
	Logger *slog.Logger
	// ReadConns is the size of the read pool; default 4.
	ReadConns int
	// FenceCheck is the one fence's check (firewall.Check), asked of
	// every chunk that Import or Restore takes; nil means the store
	// imports no chunk (ingestd.CheckArchived).
	FenceCheck ingestd.FenceCheck
	// MetaKeys are the metadata keys whose values the in-memory mirror
	// keeps for TierFacts: the keys the configured tier_by_<key> rules
	// read (provenance.Declarations.MetaKeys). TierFacts reads other keys
	// from the database, slower but the same.
	MetaKeys []string
}

// Store is the SQLite implementation of ingestd.Store. It is safe for
// concurrent use.
type Store struct {
	path   string
	id     int64 // a random number the file keeps (store_state 'store_id'): snapshots name it
	now    func() time.Time
	log    *slog.Logger
	write  *sql.DB // one connection; wmu serialises transactions
	read   *sql.DB
	wmu    sync.Mutex           // serialises write transactions; guards writes and wstmts
	writes int                  // write transactions so far, to prune now and then
	wstmts map[string]*sql.Stmt // prepared on the write connection
	// putMu guards putQueue, the PutDocument calls waiting for a
	// transaction (commitPuts), and their done flags.
	putMu       sync.Mutex
	putQueue    []*putReq
	putBatchMax int // maxPutBatch; 1 turns group commit off (benchmarks)
	// keepChanges is how many rows of the changes log survive a prune.
	keepChanges int64
	vec         *vectors
	stmtMu      sync.Mutex
	stmts       map[string]*sql.Stmt // prepared on the read pool
	closed      chan struct{}
	fenceCheck  ingestd.FenceCheck // Options.FenceCheck
}

// Open opens (creating if needed) the database at path and applies the
// migrations it has not had (see migrate.go). Returns EINVALID for a
// database written by a newer schema than this build knows, EUNAVAILABLE
// when the file cannot be opened.
func Open(ctx context.Context, path string, o *Options) (*Store, error) {
	registerDriver()
	if o == nil {
		o = &Options{}
	}
	s := &Store{path: path, now: o.Now, log: o.Logger, fenceCheck: o.FenceCheck, closed: make(chan struct{}), keepChanges: 100_000, putBatchMax: maxPutBatch}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	reads := o.ReadConns
	if reads <= 0 {
		reads = 4
	}
	if strings.ContainsAny(path, "?#") {
		return nil, ingestd.Errorf(ingestd.EINVALID, "sqlite path %q: ? and # are not allowed", path)
	}
	const params = "_foreign_keys=1&_synchronous=NORMAL&_journal_mode=WAL"
	// SQLite makes a new database 0644, and its log and shared memory
	// take the database's mode: made here first, all three are the
	// owner's alone.
	if err := private.Touch(path); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, &ingestd.Error{Code: ingestd.EUNAVAILABLE, Message: fmt.Sprintf("database %s: %v", path, err)})
	}
	var err error
	// The writer runs with secure_delete on: what a write deletes (a
	// replaced chunk, an erased document) is overwritten with zeros, in
	// the pages it frees too, instead of lingering in the file. It waits
	// up to 30 s for another process's write to end (readers 5 s): a
	// sync pass writes its documents in batches of up to 2,048 chunks,
	// whose transaction can hold the lock for seconds on a loaded machine.
	if s.write, err = sql.Open(driverName, path+"?_busy_timeout=30000&"+params+"&_txlock=immediate&_secure_delete=on"); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s.write.SetMaxOpenConns(1)
	s.write.SetMaxIdleConns(1)
	s.write.SetConnMaxLifetime(0)
	s.write.SetConnMaxIdleTime(0)
	// Checkpoint the WAL every 4,000 pages (16 MB) rather than SQLite's
	// 1,000: the pages every write transaction touches (the tables' last
	// leaves, hot index pages) are copied into the file once per
	// checkpoint, so fewer checkpoints copy fewer pages (sync measured
	// 1.2-1.3x less CPU a document in store/sqlite's write benchmarks).
	if _, err := s.write.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 4000"); err != nil {
		s.write.Close()
		return nil, unavailable("open %s", path, err)
	}
	if err := s.migrate(ctx); err != nil {
		s.write.Close()
		return nil, err
	}
	if err := s.write.QueryRowContext(ctx, "SELECT value FROM store_state WHERE key = 'store_id'").Scan(&s.id); err != nil {
		s.write.Close()
		return nil, unavailable("read store id of %s", path, err)
	}
	if err := s.prepareWrites(ctx); err != nil {
		s.write.Close()
		return nil, err
	}
	if s.read, err = sql.Open(driverName, path+"?_busy_timeout=5000&"+params+"&_query_only=1"); err != nil {
		s.write.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s.read.SetMaxOpenConns(reads)
	s.read.SetMaxIdleConns(reads)
	s.read.SetConnMaxIdleTime(0)
	s.read.SetConnMaxLifetime(0)
	s.vec = newVectors(s, o.MetaKeys)
	return s, nil
}

// Close writes the vector index's snapshot (a cache of the rows that
// makes the next open faster) and releases the connections. When ctx has
// ended it skips the snapshot, so that the next open loads from the
// rows. The Store must not be used after.
func (s *Store) Close(ctx context.Context) error {
	select {
	case <-s.closed:
		return nil
	default:
		close(s.closed)
	}
	var errs []error
	if s.vec != nil {
		errs = append(errs, s.vec.close(ctx))
	}
	s.stmtMu.Lock()
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	s.stmts = nil
	s.stmtMu.Unlock()
	s.wmu.Lock()
	for _, st := range s.wstmts {
		errs = append(errs, st.Close())
	}
	s.wstmts = nil
	s.wmu.Unlock()
	if s.read != nil {
		errs = append(errs, s.read.Close())
	}
	errs = append(errs, s.write.Close())
	return errors.Join(errs...)
}

// Optimize readies the store for reads after bulk writes: it lets SQLite
// refresh its query planner's statistics (PRAGMA optimize) and, when this
// process holds the in-memory indexes, catches them up and saves their
// snapshot if they took in anything since the last one, so that the next
// process to open the file loads them current. Call it after a sync pass
// or a reindex, not per write.
func (s *Store) Optimize(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx, "PRAGMA optimize"); err != nil {
		return unavailable("optimize %s", s.path, err)
	}
	return s.vec.refreshSnapshot(ctx)
}

// Warm loads the in-memory chunk index (vectors and text) now rather than
// on the first search (a few seconds per 100k chunks of 384 dimensions on
// a busy 2-core machine), so a server can pay it before it reports ready.
func (s *Store) Warm(ctx context.Context) error {
	return s.vec.sync(ctx)
}

// Ping reports whether the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.read.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return unavailable("ping %s", s.path, err)
	}
	return nil
}

// writeTx runs fn in one write transaction (BEGIN IMMEDIATE), serialised
// with every other write of this Store.
func (s *Store) writeTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return unavailable("begin %s", s.path, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	s.writes++
	if s.writes%pruneEvery == 0 {
		if err := s.pruneChanges(ctx, tx); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return unavailable("commit %s", s.path, err)
	}
	return nil
}

// writeStatements are prepared on the write connection when the store
// opens (preparing one later, while a transaction holds the only
// connection, would wait for it forever).
var writeStatements = []string{
	putReadSQL, putReadersSQL, putDocumentSQL, putDeleteChunksSQL, putChunkSQL, putDeleteLinksSQL, putLinkSQL,
	"SAVEPOINT put", "ROLLBACK TO put", "RELEASE put",
}

func (s *Store) prepareWrites(ctx context.Context) error {
	s.wstmts = make(map[string]*sql.Stmt, len(writeStatements))
	for _, q := range writeStatements {
		st, err := s.write.PrepareContext(ctx, q)
		if err != nil {
			return unavailable("prepare %s", q, err)
		}
		s.wstmts[q] = st
	}
	return nil
}

// wstmt returns the statement prepared on the write connection for one of
// writeStatements; use it in a transaction with tx.StmtContext.
func (s *Store) wstmt(_ context.Context, query string) (*sql.Stmt, error) {
	if st := s.wstmts[query]; st != nil {
		return st, nil
	}
	return nil, fmt.Errorf("statement not prepared: %s", query)
}

// pruneEvery is how many write transactions pass between prunes of the
// changes log.
const pruneEvery = 1024

// pruneChanges drops all but the newest keepChanges rows of the changes log
// and records how far it pruned, so that a process whose vector index saw
// less than that reloads in full.
func (s *Store) pruneChanges(ctx context.Context, tx *sql.Tx) error {
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT max(id) FROM changes").Scan(&last); err != nil {
		return fmt.Errorf("prune changes: %w", err)
	}
	cut := last.Int64 - s.keepChanges
	if cut <= 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM changes WHERE id <= ?", cut); err != nil {
		return fmt.Errorf("prune changes: %w", err)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO store_state (key, value) VALUES ('changes_pruned_through', ?)
		ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)`, cut)
	if err != nil {
		return fmt.Errorf("prune changes: %w", err)
	}
	return nil
}

// unavailable wraps err; a busy or locked database, or a context that
// ended, becomes EUNAVAILABLE.
func unavailable(format, arg string, err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked || se.Code == sqlite3.ErrCantOpen) {
		return fmt.Errorf(format+": %w", arg, &ingestd.Error{Code: ingestd.EUNAVAILABLE, Message: fmt.Sprintf("database %s: %v", arg, err)})
	}
	return fmt.Errorf(format+": %w", arg, err)
}

func ts(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func parseTS(v sql.NullString) time.Time {
	if !v.Valid || v.String == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, v.String)
	if err != nil {
		return time.Time{}
	}
	return t
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
