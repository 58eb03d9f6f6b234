package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd"
)

// FindDocuments returns the documents q selects, deleted ones included, in
// id order. AuthorContains compares lower() of both sides (which folds
// more than ASCII: a superset, as the contract allows). Returns EINVALID
// unless exactly one field of q is set.
func (s *Store) FindDocuments(ctx context.Context, q ingestd.DocumentQuery) ([]ingestd.Document, error) {
	n := 0
	for _, set := range []bool{len(q.IDs) > 0, len(q.ParentIDs) > 0, q.Installation != "", q.AuthorContains != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "a document query sets exactly one of ids, parent ids, installation and author (%d set)", n)
	}
	where, arg := "strpos(lower(author), lower($1)) > 0", any(q.AuthorContains)
	switch {
	case len(q.IDs) > 0:
		where, arg = "id = ANY($1)", q.IDs
	case len(q.ParentIDs) > 0:
		where, arg = "parent_id = ANY($1)", q.ParentIDs
	case q.Installation != "":
		where, arg = "installation = $1", q.Installation
	}
	rows, err := s.pool.Query(ctx, "SELECT "+documentColumns+" FROM documents WHERE "+where+" ORDER BY id", arg)
	if err != nil {
		return nil, classify("find documents", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingestd.Document, error) {
		d, err := scanDocument(r)
		if err != nil {
			return ingestd.Document{}, err
		}
		return *d, nil
	})
	if err != nil {
		return nil, classify("find documents", err)
	}
	return out, nil
}

// vacuumed are the tables an erasure deletes from or rewrites.
const vacuumed = "documents, chunks, links, cursors, embedding_cache, sync_runs"

// Erase removes the documents for good with their chunks, links both ways,
// the cached embeddings of e.TextHashes, the cursor summaries of their
// installations' sync runs, and the cursor edits, and records the
// tombstones, in one transaction. Then it runs VACUUM (ANALYZE) on the
// tables it deleted from, without a statement timeout: until then the
// deleted rows are dead tuples any superuser can read back from the data
// files, and the planner's statistics (pg_statistic) may hold sample
// values of them. What VACUUM leaves — freed space inside pages is reused,
// not zeroed; the write-ahead log and its archive hold the rows until
// they are recycled; the full-text index keeps a word's entry until the
// index is rebuilt — is in docs/SECURITY.md.
func (s *Store) Erase(ctx context.Context, e ingestd.Erasure) (ingestd.ErasureCounts, error) {
	var n ingestd.ErasureCounts
	for _, t := range e.Tombstones {
		if t.Key == "" || t.KeyID == "" || (t.Kind != ingestd.TombstoneDocument && t.Kind != ingestd.TombstoneAuthor) {
			return n, ingestd.Errorf(ingestd.EINVALID, "tombstone %q: want a key, a key id and kind document or author (kind %q)", t.Key, t.Kind)
		}
	}
	ids := e.DocumentIDs
	if ids == nil {
		ids = []string{}
	}
	hashes := e.TextHashes
	if hashes == nil {
		hashes = []string{}
	}
	err := s.inTx(ctx, "erase", func(tx pgx.Tx) error {
		n = ingestd.ErasureCounts{}
		count := func(q string, args ...any) (int, error) {
			tag, err := tx.Exec(ctx, q, args...)
			return int(tag.RowsAffected()), err
		}
		// The documents first, locked in id order, so that a concurrent
		// writer of one of them waits and then finds it gone.
		if _, err := tx.Exec(ctx, "SELECT id FROM documents WHERE id = ANY($1) ORDER BY id FOR UPDATE", ids); err != nil {
			return err
		}
		// A pass's cursor summary may name an erased item (a UID map
		// lists Message-IDs), cut short where a match would miss it: the
		// installation's summaries go whole.
		if _, err := tx.Exec(ctx, `UPDATE sync_runs SET cursors = '' WHERE cursors <> ''
			AND installation IN (SELECT installation FROM documents WHERE id = ANY($1))`, ids); err != nil {
			return err
		}
		var err error
		if n.Chunks, err = count("DELETE FROM chunks WHERE document_id = ANY($1)", ids); err != nil {
			return err
		}
		if n.Links, err = count("DELETE FROM links WHERE from_id = ANY($1) OR to_id = ANY($1)", ids); err != nil {
			return err
		}
		if n.Documents, err = count("DELETE FROM documents WHERE id = ANY($1)", ids); err != nil {
			return err
		}
		if n.CachedEmbeddings, err = count("DELETE FROM embedding_cache WHERE text_hash = ANY($1)", hashes); err != nil {
			return err
		}
		for _, c := range e.Cursors {
			q, args := `INSERT INTO cursors (installation, key, value) VALUES ($1, $2, $3)
				ON CONFLICT (installation, key) DO UPDATE SET value = EXCLUDED.value`, []any{c.Installation, c.Key, c.Value}
			if c.Value == "" {
				q, args = "DELETE FROM cursors WHERE installation = $1 AND key = $2", []any{c.Installation, c.Key}
			}
			k, err := count(q, args...)
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
			if _, err := tx.Exec(ctx, `INSERT INTO erasures (key, key_id, kind, installation, created_at) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (key) DO UPDATE SET key_id = EXCLUDED.key_id, kind = EXCLUDED.kind, installation = EXCLUDED.installation`,
				t.Key, t.KeyID, t.Kind, t.Installation, created); err != nil {
				return err
			}
			n.Tombstones++
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, s.vacuum(ctx)
}

// vacuum runs VACUUM (ANALYZE) on the tables an erasure touches, on a
// connection without a statement timeout.
func (s *Store) vacuum(ctx context.Context) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return classify("vacuum", err)
	}
	defer c.Release()
	if _, err := c.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		return classify("vacuum", err)
	}
	defer c.Exec(context.WithoutCancel(ctx), "RESET statement_timeout") //nolint:errcheck // the pool resets a broken connection
	start := time.Now()
	if _, err := c.Exec(ctx, "VACUUM (ANALYZE) "+vacuumed); err != nil {
		return classify("vacuum "+vacuumed, err)
	}
	s.log.Info("store.vacuum", "tables", vacuumed, "took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// Erased reports whether any of keys is a tombstone; ECONFLICT when the
// store holds tombstones of another key id.
func (s *Store) Erased(ctx context.Context, keyID string, keys []string) (bool, error) {
	if keys == nil {
		keys = []string{}
	}
	var other, found bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM erasures WHERE key_id <> $1),
		EXISTS (SELECT 1 FROM erasures WHERE key = ANY($2))`, keyID, keys).Scan(&other, &found)
	if err != nil {
		return false, classify("read tombstones", err)
	}
	if other {
		return false, ingestd.Errorf(ingestd.ECONFLICT, "the store holds erasure tombstones made with another erasure key than this process's (%s): "+
			"every process must use the same key (erasure.key_env), or erased items could come back", keyID)
	}
	return found, nil
}

// Tombstones returns every tombstone, oldest first.
func (s *Store) Tombstones(ctx context.Context) ([]ingestd.Tombstone, error) {
	return tombstones(ctx, s.pool)
}

type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

func tombstones(ctx context.Context, q querier) ([]ingestd.Tombstone, error) {
	rows, err := q.Query(ctx, "SELECT key, key_id, kind, installation, created_at FROM erasures ORDER BY created_at, key")
	if err != nil {
		return nil, classify("read tombstones", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingestd.Tombstone, error) {
		var t ingestd.Tombstone
		err := r.Scan(&t.Key, &t.KeyID, &t.Kind, &t.Installation, &t.CreatedAt)
		t.CreatedAt = t.CreatedAt.UTC()
		return t, err
	})
	if err != nil {
		return nil, classify("read tombstones", err)
	}
	return out, nil
}

// LiftTombstones removes the tombstones with the keys.
func (s *Store) LiftTombstones(ctx context.Context, keys []string) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	tag, err := s.pool.Exec(ctx, "DELETE FROM erasures WHERE key = ANY($1)", keys)
	if err != nil {
		return 0, classify("lift tombstones", err)
	}
	return int(tag.RowsAffected()), nil
}

// Cursors returns the installation's cursors whose key starts with prefix.
func (s *Store) Cursors(ctx context.Context, installation, prefix string) ([]ingestd.Cursor, error) {
	rows, err := s.pool.Query(ctx, `SELECT key, value FROM cursors WHERE installation = $1 AND left(key, length($2)) = $2
		ORDER BY key COLLATE "C"`, installation, prefix)
	if err != nil {
		return nil, classify("read cursors of "+installation, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingestd.Cursor, error) {
		c := ingestd.Cursor{Installation: installation}
		err := r.Scan(&c.Key, &c.Value)
		return c, err
	})
	if err != nil {
		return nil, classify("read cursors of "+installation, err)
	}
	return out, nil
}
