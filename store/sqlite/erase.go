package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/ingestd/ingestd"
)

// FindDocuments returns the documents q selects, deleted ones included, in
// id order. AuthorContains ignores the case of ASCII letters (SQLite's
// lower()). Returns EINVALID unless exactly one field of q is set.
func (s *Store) FindDocuments(ctx context.Context, q ingestd.DocumentQuery) ([]ingestd.Document, error) {
	if err := checkQuery(q); err != nil {
		return nil, err
	}
	var out []ingestd.Document
	read := func(where string, args ...any) error {
		rows, err := s.read.QueryContext(ctx, "SELECT "+documentColumns+" FROM documents WHERE "+where+" ORDER BY id", args...)
		if err != nil {
			return unavailable("find documents%s", "", err)
		}
		defer rows.Close()
		for rows.Next() {
			d, err := scanDocument(rows)
			if err != nil {
				return fmt.Errorf("find documents: %w", err)
			}
			out = append(out, *d)
		}
		return rows.Err()
	}
	var err error
	switch {
	case len(q.IDs) > 0:
		err = inBatches(q.IDs, func(b []string) error { return read("id IN ("+placeholders(len(b))+")", anys(b)...) })
	case len(q.ParentIDs) > 0:
		err = inBatches(q.ParentIDs, func(b []string) error { return read("parent_id IN ("+placeholders(len(b))+")", anys(b)...) })
	case q.Installation != "":
		err = read("installation = ?", q.Installation)
	default:
		err = read("instr(lower(author), lower(?)) > 0", q.AuthorContains)
	}
	if err != nil {
		return nil, err
	}
	sortDocuments(out)
	return out, nil
}

// reload loads the in-memory indexes again when they were loaded: after an
// erasure, whose mark makes the catch-up a full load from the rows. Then
// it puts a snapshot of the reloaded indexes in place of the one beside
// the file, or, when this process does not hold the indexes, removes that
// one: either way no snapshot of the erased rows remains.
func (v *vectors) reload(ctx context.Context) error {
	v.syncMu.Lock()
	loaded := v.loaded
	v.syncMu.Unlock()
	if loaded {
		if err := v.sync(ctx); err != nil {
			return err
		}
	}
	// The reload started writing its snapshot, unless one taken before it
	// was being written (refused or removed by its own check of the
	// erasure's mark): wait for both, then write the reload's if it is
	// still pending.
	v.snapWG.Wait()
	if loaded {
		return v.saveSnapshot()
	}
	if err := os.Remove(v.s.snapshotPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove index snapshot: %w", err)
	}
	return nil
}

func sortDocuments(ds []ingestd.Document) {
	slices.SortFunc(ds, func(a, b ingestd.Document) int { return cmp.Compare(a.ID, b.ID) })
}

// checkQuery returns EINVALID unless exactly one field of q is set.
func checkQuery(q ingestd.DocumentQuery) error {
	n := 0
	for _, set := range []bool{len(q.IDs) > 0, len(q.ParentIDs) > 0, q.Installation != "", q.AuthorContains != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return ingestd.Errorf(ingestd.EINVALID, "a document query sets exactly one of ids, parent ids, installation and author (%d set)", n)
	}
	return nil
}

// checkTombstones returns EINVALID for a tombstone without key, key id or
// a known kind.
func checkTombstones(ts []ingestd.Tombstone) error {
	for _, t := range ts {
		if t.Key == "" || t.KeyID == "" || (t.Kind != ingestd.TombstoneDocument && t.Kind != ingestd.TombstoneAuthor) {
			return ingestd.Errorf(ingestd.EINVALID, "tombstone %q: want a key, a key id and kind document or author (kind %q)", t.Key, t.Kind)
		}
	}
	return nil
}

// Erase removes the documents for good with their chunks, links both ways,
// the cached embeddings of e.TextHashes, the cursor summaries of their
// installations' sync runs, and the cursor edits, and records the
// tombstones, in one write transaction on the writer connection, which
// runs with secure_delete on: SQLite overwrites deleted content with
// zeros, in the pages it frees too. Then it reloads the in-memory indexes
// from the rows and rewrites the index snapshot beside the file
// (ingestd.db.index) from them, or removes it when this process does not
// hold them; and it checkpoints the write-ahead log and truncates it to
// zero bytes (it holds the pages as they were before).
//
// Every process's in-memory index reloads from the rows at its next
// catch-up: the erasure marks the changes log as pruned through its own
// entries, which makes a reader that saw less reload in full (a catch-up
// would only drop the chunks, and the index's dictionary would keep their
// words). This Store reloads before Erase returns.
//
// Returns EUNAVAILABLE, after the erasure is committed, when the log could
// not be truncated because another connection held a read snapshot in it
// for the length of the retries: run the erasure again (erasing nothing
// more, it scrubs again).
func (s *Store) Erase(ctx context.Context, e ingestd.Erasure) (ingestd.ErasureCounts, error) {
	var n ingestd.ErasureCounts
	if err := checkTombstones(e.Tombstones); err != nil {
		return n, err
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		exec := func(what, q string, args ...any) (int, error) {
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return 0, unavailable(what+"%s", "", err)
			}
			k, _ := res.RowsAffected()
			return int(k), nil
		}
		if err := eraseDocuments(exec, e.DocumentIDs, &n); err != nil {
			return err
		}
		if err := inBatches(e.TextHashes, func(b []string) error {
			k, err := exec("erase cached embeddings", "DELETE FROM embedding_cache WHERE text_hash IN ("+placeholders(len(b))+")", anys(b)...)
			n.CachedEmbeddings += k
			return err
		}); err != nil {
			return err
		}
		if err := s.eraseCursorsAndRecord(exec, e, &n); err != nil {
			return err
		}
		if n.Documents == 0 {
			return nil
		}
		// Every reader that saw less than this entry reloads its index
		// in full.
		if _, err := exec("mark the erasure", "INSERT INTO changes (chunk_seq, document_id) VALUES (NULL, NULL)"); err != nil {
			return err
		}
		_, err := exec("mark the erasure", `INSERT INTO store_state (key, value)
			SELECT 'changes_pruned_through', max(id) FROM changes WHERE true
			ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)`)
		return err
	})
	if err != nil {
		return n, err
	}
	return n, s.scrub(ctx)
}

// eraseExec runs one statement of an erasure and returns the rows it
// changed; what names the statement in its error.
type eraseExec func(what, q string, args ...any) (int, error)

// eraseDocuments deletes the documents, their chunks and every link
// from or to them, in batches, and empties the sync-pass cursor summaries
// of their installations; n counts what went.
func eraseDocuments(exec eraseExec, ids []string, n *ingestd.ErasureCounts) error {
	return inBatches(ids, func(b []string) error {
		ph, args := placeholders(len(b)), anys(b)
		k, err := exec("erase links", "DELETE FROM links WHERE from_id IN ("+ph+") OR to_id IN ("+ph+")", append(args, args...)...)
		if err != nil {
			return err
		}
		n.Links += k
		// A pass's cursor summary may name an erased item (a UID map
		// lists Message-IDs), cut short where a match would miss it:
		// the installation's summaries go whole.
		if _, err = exec("erase sync run cursors", `UPDATE sync_runs SET cursors = '' WHERE cursors != ''
			AND installation IN (SELECT installation FROM documents WHERE id IN (`+ph+`))`, args...); err != nil {
			return err
		}
		if k, err = exec("erase chunks", "DELETE FROM chunks WHERE document_id IN ("+ph+")", args...); err != nil {
			return err
		}
		n.Chunks += k
		if k, err = exec("erase documents", "DELETE FROM documents WHERE id IN ("+ph+")", args...); err != nil {
			return err
		}
		n.Documents += k
		return nil
	})
}

// eraseCursorsAndRecord applies the erasure's cursor edits (an empty
// value deletes the cursor) and records its tombstones; n counts them.
func (s *Store) eraseCursorsAndRecord(exec eraseExec, e ingestd.Erasure, n *ingestd.ErasureCounts) error {
	for _, c := range e.Cursors {
		q, args := `INSERT INTO cursors (installation, key, value) VALUES (?, ?, ?)
			ON CONFLICT (installation, key) DO UPDATE SET value = excluded.value`, []any{c.Installation, c.Key, c.Value}
		if c.Value == "" {
			q, args = "DELETE FROM cursors WHERE installation = ? AND key = ?", []any{c.Installation, c.Key}
		}
		k, err := exec("erase cursors", q, args...)
		if err != nil {
			return err
		}
		n.Cursors += k
	}
	for _, t := range e.Tombstones {
		created := t.CreatedAt
		if created.IsZero() {
			created = s.now()
		}
		if _, err := exec("record tombstone", `INSERT INTO erasures (key, key_id, kind, installation, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET key_id = excluded.key_id, kind = excluded.kind, installation = excluded.installation`,
			t.Key, t.KeyID, t.Kind, t.Installation, ts(created)); err != nil {
			return err
		}
		n.Tombstones++
	}
	return nil
}

// scrub removes what the files keep of deleted rows: the in-memory indexes
// and their snapshot (reloaded from the rows, rewritten or removed), the
// write-ahead log (checkpointed, then truncated).
func (s *Store) scrub(ctx context.Context) error {
	if err := s.vec.reload(ctx); err != nil {
		return err
	}
	return s.truncateWAL(ctx)
}

// truncateWAL checkpoints the write-ahead log into the file and truncates
// it to zero bytes, retrying for a few seconds while another connection
// reads from it.
func (s *Store) truncateWAL(ctx context.Context) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for attempt := 0; ; attempt++ {
		var busy, logFrames, done int
		if err := s.write.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &done); err != nil {
			return unavailable("checkpoint %s", s.path, err)
		}
		if busy == 0 {
			return nil
		}
		if attempt == 50 {
			return ingestd.Errorf(ingestd.EUNAVAILABLE, "erased, but the write-ahead log of %s could not be truncated: a reader kept it busy; run the erasure again", s.path)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Erased reports whether any of keys is a tombstone; ECONFLICT when the
// store holds tombstones of another key id.
func (s *Store) Erased(ctx context.Context, keyID string, keys []string) (bool, error) {
	arg, err := json.Marshal(keys)
	if err != nil {
		return false, fmt.Errorf("read tombstones: %w", err)
	}
	st, err := s.stmt(ctx, erasedSQL)
	if err != nil {
		return false, err
	}
	var other, found int
	if err := st.QueryRowContext(ctx, keyID, string(arg)).Scan(&other, &found); err != nil {
		return false, unavailable("read tombstones%s", "", err)
	}
	if other != 0 {
		return false, otherKey(keyID)
	}
	return found != 0, nil
}

// erasedSQL answers Erased in one prepared statement: the pipeline asks
// it for every item it meets. The keys travel as a JSON array; another key
// id is looked for as two ranges of erasures_key_id, not a scan of every
// tombstone.
const erasedSQL = `SELECT EXISTS (SELECT 1 FROM erasures WHERE key_id < ?1 OR key_id > ?1),
	EXISTS (SELECT 1 FROM erasures WHERE key IN (SELECT value FROM json_each(?2)))`

// otherKey is the ECONFLICT of a store whose tombstones another key made.
func otherKey(keyID string) error {
	return ingestd.Errorf(ingestd.ECONFLICT, "the store holds erasure tombstones made with another erasure key than this process's (%s): "+
		"every process must use the same key (erasure.key_env), or erased items could come back", keyID)
}

// Tombstones returns every tombstone, oldest first.
func (s *Store) Tombstones(ctx context.Context) ([]ingestd.Tombstone, error) {
	return s.tombstones(ctx, s.read)
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *Store) tombstones(ctx context.Context, q queryer) ([]ingestd.Tombstone, error) {
	rows, err := q.QueryContext(ctx, "SELECT key, key_id, kind, installation, created_at FROM erasures ORDER BY created_at, key")
	if err != nil {
		return nil, unavailable("read tombstones%s", "", err)
	}
	defer rows.Close()
	var out []ingestd.Tombstone
	for rows.Next() {
		var t ingestd.Tombstone
		var created sql.NullString
		if err := rows.Scan(&t.Key, &t.KeyID, &t.Kind, &t.Installation, &created); err != nil {
			return nil, fmt.Errorf("read tombstones: %w", err)
		}
		t.CreatedAt = parseTS(created)
		out = append(out, t)
	}
	return out, rows.Err()
}

// LiftTombstones removes the tombstones with the keys.
func (s *Store) LiftTombstones(ctx context.Context, keys []string) (int, error) {
	n := 0
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		return inBatches(keys, func(b []string) error {
			res, err := tx.ExecContext(ctx, "DELETE FROM erasures WHERE key IN ("+placeholders(len(b))+")", anys(b)...)
			if err != nil {
				return unavailable("lift tombstones%s", "", err)
			}
			k, _ := res.RowsAffected()
			n += int(k)
			return nil
		})
	})
	return n, err
}

// Cursors returns the installation's cursors whose key starts with prefix.
func (s *Store) Cursors(ctx context.Context, installation, prefix string) ([]ingestd.Cursor, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT key, value FROM cursors WHERE installation = ? AND substr(key, 1, length(?)) = ?
		ORDER BY key`, installation, prefix, prefix)
	if err != nil {
		return nil, unavailable("read cursors of %s", installation, err)
	}
	defer rows.Close()
	var out []ingestd.Cursor
	for rows.Next() {
		c := ingestd.Cursor{Installation: installation}
		if err := rows.Scan(&c.Key, &c.Value); err != nil {
			return nil, fmt.Errorf("read cursors of %s: %w", installation, err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
