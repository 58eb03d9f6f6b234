package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/ingestd/ingestd"
)

// PutInstallations upserts the installations; others keep their rows.
func (s *Store) PutInstallations(ctx context.Context, insts []ingestd.Installation) error {
	now := ts(s.now())
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO installations (id, kind, tier, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, tier = excluded.tier, updated_at = excluded.updated_at`)
		if err != nil {
			return fmt.Errorf("put installations: %w", err)
		}
		defer st.Close()
		for _, in := range insts {
			if in.ID == "" {
				return ingestd.Errorf(ingestd.EINVALID, "installation without an id")
			}
			if _, err := st.ExecContext(ctx, in.ID, in.Kind, nullable(string(in.Tier)), now); err != nil {
				return fmt.Errorf("put installation %s: %w", in.ID, err)
			}
		}
		return nil
	})
}

const documentColumns = `id, installation, external_id, source_kind, item_kind, uri, title, author,
	created_at, updated_at, content_hash, tier, status, parent_id, meta, ingested_at, readers`

const documentSQL = "SELECT " + documentColumns + " FROM documents WHERE id = ?"

// Document returns the document with the id, deleted ones included. The
// pipeline asks before every write, so its statement is prepared once.
func (s *Store) Document(ctx context.Context, id string) (*ingestd.Document, error) {
	st, err := s.stmt(ctx, documentSQL)
	if err != nil {
		return nil, err
	}
	d, err := scanDocument(st.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ingestd.Errorf(ingestd.ENOTFOUND, "document %s not found", id)
	}
	if err != nil {
		return nil, unavailable("read document %s", id, err)
	}
	return d, nil
}

func scanDocument(row interface{ Scan(...any) error }) (*ingestd.Document, error) {
	var (
		d                          ingestd.Document
		created, updated, ingested sql.NullString
		tier, parent               sql.NullString
		meta                       string
		status                     string
		readers                    sql.NullString
	)
	if err := row.Scan(&d.ID, &d.Installation, &d.ExternalID, &d.SourceKind, &d.ItemKind, &d.URI, &d.Title, &d.Author,
		&created, &updated, &d.ContentHash, &tier, &status, &parent, &meta, &ingested, &readers); err != nil {
		return nil, err
	}
	d.Readers = ingestd.DecodeReaders(readers.String, readers.Valid)
	d.CreatedAt, d.UpdatedAt, d.IngestedAt = parseTS(created), parseTS(updated), parseTS(ingested)
	d.Tier, d.Status, d.ParentID = ingestd.Tier(tier.String), ingestd.Status(status), parent.String
	if meta != "" && meta != "{}" {
		if err := json.Unmarshal([]byte(meta), &d.Meta); err != nil {
			return nil, fmt.Errorf("document %s meta: %w", d.ID, err)
		}
	}
	return &d, nil
}

// PutDocument writes doc, its chunks and its outgoing links in one
// transaction. An empty doc.ID is filled with ingestd.DocumentID; an empty
// Status means active; chunks without a DocumentID get doc's. Chunk tiers
// are always stored as doc's tier. Returns EINVALID for a document without
// installation, external id, source kind or content hash, for
// StatusDeleted, and for a chunk of another document; ECONFLICT when another
// document holds the (installation, external id) or a chunk id.
//
// Concurrent calls are committed together (see commitPuts): each returns
// once the transaction that holds its document committed, and a call that
// fails rolls back its own document only.
func (s *Store) PutDocument(ctx context.Context, doc *ingestd.Document, chunks []ingestd.Chunk, links []ingestd.Link) (bool, error) {
	r, err := s.putRequest(ctx, doc, chunks, links)
	if err != nil {
		return false, err
	}
	s.commitPuts([]*putReq{r})
	return r.changed, r.err
}

// PutDocuments writes the puts as PutDocument would, sharing the
// transactions of group commit: all of them are queued at once, so they
// are written together (up to putBatchMax a transaction; see commitPuts)
// with whatever concurrent PutDocument calls are waiting.
func (s *Store) PutDocuments(ctx context.Context, puts []ingestd.DocumentPut) []ingestd.PutResult {
	out := make([]ingestd.PutResult, len(puts))
	reqs := make([]*putReq, 0, len(puts))
	at := make([]int, 0, len(puts))
	for i, p := range puts {
		r, err := s.putRequest(ctx, p.Doc, p.Chunks, p.Links)
		if err != nil {
			out[i].Err = err
			continue
		}
		reqs, at = append(reqs, r), append(at, i)
	}
	if len(reqs) > 0 {
		s.commitPuts(reqs)
	}
	for j, r := range reqs {
		out[at[j]] = ingestd.PutResult{Changed: r.changed, Err: r.err}
	}
	return out
}

// putRequest checks a PutDocument's arguments and returns its request.
func (s *Store) putRequest(ctx context.Context, doc *ingestd.Document, chunks []ingestd.Chunk, links []ingestd.Link) (*putReq, error) {
	id, status, err := ingestd.CheckPut(doc)
	if err != nil {
		return nil, err
	}
	for i := range chunks {
		c := &chunks[i]
		if c.ID == "" {
			return nil, ingestd.Errorf(ingestd.EINVALID, "document %s: chunk %d without an id", id, i)
		}
		if c.DocumentID != "" && c.DocumentID != id {
			return nil, ingestd.Errorf(ingestd.EINVALID, "document %s: chunk %s belongs to %s", id, c.ID, c.DocumentID)
		}
	}
	for _, l := range links {
		if l.From != "" && l.From != id {
			return nil, ingestd.Errorf(ingestd.EINVALID, "document %s: link from %s", id, l.From)
		}
		if l.To == "" {
			return nil, ingestd.Errorf(ingestd.EINVALID, "document %s: link without a target", id)
		}
	}
	meta := "{}"
	if len(doc.Meta) > 0 {
		b, err := json.Marshal(doc.Meta)
		if err != nil {
			return nil, fmt.Errorf("document %s meta: %w", id, err)
		}
		meta = string(b)
	}
	ingested := doc.IngestedAt
	if ingested.IsZero() {
		ingested = s.now()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &putReq{ctx: ctx, id: id, doc: doc, status: status, meta: meta, ingested: ingested, chunks: chunks, links: links}, nil
}

// putReq is one PutDocument call waiting for its transaction.
type putReq struct {
	ctx      context.Context
	id       string
	doc      *ingestd.Document
	status   ingestd.Status
	meta     string
	ingested time.Time
	chunks   []ingestd.Chunk
	links    []ingestd.Link

	// Set by the batch that writes it, before done.
	changed bool
	err     error
	done    bool // guarded by Store.putMu
}

// maxPutBatch bounds how many documents one transaction writes (the
// default of Store.putBatchMax).
const maxPutBatch = 256

// commitPuts is group commit. Every call queues its documents; whichever
// call then holds the write lock takes everything queued (up to
// putBatchMax) and writes it in one transaction (plainly; when a document
// is refused, again with each in a savepoint, so that the refused one
// leaves the others: putBatch); the callers it
// wrote find their results when they get the lock and return. One commit
// then serves many documents: SQLite's cost per transaction (the commit,
// the pages every transaction rewrites) is paid once per batch. A lone
// caller writes its own document at once, as before; PutDocuments queues
// many at once.
func (s *Store) commitPuts(rs []*putReq) {
	s.putMu.Lock()
	s.putQueue = append(s.putQueue, rs...)
	s.putMu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	for {
		s.putMu.Lock()
		// The queue is written in order and rs were queued together, so
		// the last one is done when all are.
		if rs[len(rs)-1].done {
			s.putMu.Unlock()
			return
		}
		n := min(len(s.putQueue), s.putBatchMax)
		batch := slices.Clone(s.putQueue[:n])
		s.putQueue = slices.Delete(s.putQueue, 0, n)
		s.putMu.Unlock()
		s.putBatch(batch)
		s.putMu.Lock()
		for _, b := range batch {
			b.done = true
		}
		s.putMu.Unlock()
	}
}

// putBatch writes the documents of batch in one transaction and sets each
// one's result. Callers hold wmu. The statements run under a context that
// no caller can cancel (an interrupted statement would roll back the whole
// transaction); a request whose context ended before its turn is skipped.
//
// A batch is first written plainly. Only when one of its documents fails
// is that transaction rolled back and the batch written again with each
// document in a savepoint, so that the refused one leaves the others: a
// savepoint makes SQLite copy every page its document changes into a
// statement journal (a temporary file past 64 KiB), which cost a sync of
// 10,000 files hundreds of thousands of writes when every document had one.
func (s *Store) putBatch(batch []*putReq) {
	if len(batch) > 1 && s.putBatchTx(batch, false) {
		return
	}
	s.putBatchTx(batch, len(batch) > 1)
}

// putBatchTx is one attempt of putBatch. Without savepoints, a batch of
// more than one document in which one fails is rolled back, its results
// cleared, and putBatchTx reports false: write it again with them.
func (s *Store) putBatchTx(batch []*putReq, savepoints bool) (done bool) {
	ctx := context.WithoutCancel(batch[0].ctx)
	fail := func(err error) bool {
		for _, r := range batch {
			if r.err == nil {
				r.err, r.changed = err, false
			}
		}
		return true
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return fail(unavailable("begin %s", s.path, err))
	}
	defer tx.Rollback()
	exec := func(q string) error {
		st, err := s.wstmt(ctx, q)
		if err != nil {
			return err
		}
		_, err = tx.StmtContext(ctx, st).ExecContext(ctx)
		return err
	}
	written := 0
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			continue
		}
		if !savepoints {
			r.changed, r.err = s.putTx(ctx, tx, r)
			if r.err != nil {
				if len(batch) == 1 {
					return true
				}
				for _, r := range batch {
					r.changed, r.err = false, nil
				}
				return false
			}
			written++
			continue
		}
		if err := exec("SAVEPOINT put"); err != nil {
			return fail(unavailable("savepoint in %s", s.path, err))
		}
		r.changed, r.err = s.putTx(ctx, tx, r)
		if r.err != nil {
			r.changed = false
			if err := exec("ROLLBACK TO put"); err != nil {
				return fail(unavailable("roll back a document in %s", s.path, err))
			}
		} else {
			written++
		}
		if err := exec("RELEASE put"); err != nil {
			return fail(unavailable("release savepoint in %s", s.path, err))
		}
	}
	if written == 0 {
		return true
	}
	s.writes++
	if s.writes%pruneEvery == 0 {
		if err := s.pruneChanges(ctx, tx); err != nil {
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(unavailable("commit %s", s.path, err))
	}
	return true
}

// Statements of PutDocument, prepared once on the write connection.
const (
	putReadSQL     = "SELECT content_hash, tier, status, source_kind, readers FROM documents WHERE id = ?"
	putReadersSQL  = "UPDATE documents SET readers = ? WHERE id = ?"
	putDocumentSQL = `INSERT INTO documents (` + documentColumns + `, deleted_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)
		ON CONFLICT (id) DO UPDATE SET installation = excluded.installation, external_id = excluded.external_id,
			source_kind = excluded.source_kind, item_kind = excluded.item_kind, uri = excluded.uri,
			title = excluded.title, author = excluded.author, created_at = excluded.created_at,
			updated_at = excluded.updated_at, content_hash = excluded.content_hash, tier = excluded.tier,
			status = excluded.status, parent_id = excluded.parent_id, meta = excluded.meta,
			ingested_at = excluded.ingested_at, readers = excluded.readers, deleted_at = NULL`
	putDeleteChunksSQL = "DELETE FROM chunks WHERE document_id = ?"
	putChunkSQL        = `INSERT INTO chunks (id, document_id, ordinal, heading_path, text, fenced, tokens, embedding, embedder_id, tier, locator)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	putDeleteLinksSQL = "DELETE FROM links WHERE from_id = ?"
	putLinkSQL        = "INSERT OR IGNORE INTO links (from_id, to_id, relation) VALUES (?, ?, ?)"
)

// putTx writes one document in tx and reports whether anything changed.
func (s *Store) putTx(ctx context.Context, tx *sql.Tx, r *putReq) (bool, error) {
	doc, id := r.doc, r.id
	stmt := func(q string) (*sql.Stmt, error) {
		st, err := s.wstmt(ctx, q)
		if err != nil {
			return nil, err
		}
		return tx.StmtContext(ctx, st), nil
	}
	read, err := stmt(putReadSQL)
	if err != nil {
		return false, err
	}
	var (
		hash, st, kind string
		tier, readers  sql.NullString
	)
	err = read.QueryRowContext(ctx, id).Scan(&hash, &tier, &st, &kind, &readers)
	stored := err == nil
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, unavailable("read document %s", id, err)
	case st != string(ingestd.StatusDeleted) && hash == doc.ContentHash &&
		ingestd.Tier(tier.String) == doc.Tier && ingestd.Status(st) == r.status && kind == doc.SourceKind:
		// The same content: at most its readers changed, which changes
		// no chunk (a revocation is never a re-embedding).
		if ingestd.DecodeReaders(readers.String, readers.Valid).Equal(doc.Readers) {
			return false, nil
		}
		up, err := stmt(putReadersSQL)
		if err != nil {
			return false, err
		}
		if _, err := up.ExecContext(ctx, readersArg(doc.Readers), id); err != nil {
			return false, unavailable("set readers of %s", id, err)
		}
		return true, nil
	}
	put, err := stmt(putDocumentSQL)
	if err != nil {
		return false, err
	}
	if _, err := put.ExecContext(ctx, id, doc.Installation, doc.ExternalID, doc.SourceKind, doc.ItemKind, doc.URI, doc.Title, doc.Author,
		ts(doc.CreatedAt), ts(doc.UpdatedAt), doc.ContentHash, nullable(string(doc.Tier)), string(r.status),
		nullable(doc.ParentID), r.meta, ts(r.ingested), readersArg(doc.Readers)); err != nil {
		return false, conflict(fmt.Sprintf("put document %s", id), err)
	}
	// A new document has no chunks to replace: a chunk cannot outlive its
	// document's row (chunks.document_id is a foreign key).
	if stored {
		del, err := stmt(putDeleteChunksSQL)
		if err != nil {
			return false, err
		}
		if _, err := del.ExecContext(ctx, id); err != nil {
			return false, fmt.Errorf("replace chunks of %s: %w", id, err)
		}
	}
	if len(r.chunks) > 0 {
		ins, err := stmt(putChunkSQL)
		if err != nil {
			return false, err
		}
		tierArg := nullable(string(doc.Tier))
		for _, c := range r.chunks {
			hp, emb := chunkColumns(c)
			if _, err := ins.ExecContext(ctx, c.ID, id, c.Ordinal, hp, c.Text, c.Fenced, c.Tokens, emb, c.EmbedderID, tierArg, c.Locator); err != nil {
				return false, conflict(fmt.Sprintf("insert chunk %s of %s", c.ID, id), err)
			}
		}
	}
	dl, err := stmt(putDeleteLinksSQL)
	if err != nil {
		return false, err
	}
	if _, err := dl.ExecContext(ctx, id); err != nil {
		return false, fmt.Errorf("replace links of %s: %w", id, err)
	}
	if len(r.links) > 0 {
		ins, err := stmt(putLinkSQL)
		if err != nil {
			return false, err
		}
		for _, l := range r.links {
			if _, err := ins.ExecContext(ctx, id, l.To, l.Relation); err != nil {
				return false, fmt.Errorf("insert link %s -> %s: %w", id, l.To, err)
			}
		}
	}
	return true, nil
}

// conflict turns a uniqueness violation into ECONFLICT.
func conflict(what string, err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && se.Code == sqlite3.ErrConstraint &&
		(se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey) {
		return fmt.Errorf("%s: %w", what, ingestd.Errorf(ingestd.ECONFLICT, "%s: %v", what, err))
	}
	return unavailable("%s", what, err)
}

// DeleteDocument tombstones the document: status deleted, deleted_at set,
// its chunks (and so their full-text and vector entries) and its outgoing
// links removed. Returns ENOTFOUND for an unknown id; a tombstone is left
// as it is.
func (s *Store) DeleteDocument(ctx context.Context, id string) error {
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		var st string
		err := tx.QueryRowContext(ctx, "SELECT status FROM documents WHERE id = ?", id).Scan(&st)
		if errors.Is(err, sql.ErrNoRows) {
			return ingestd.Errorf(ingestd.ENOTFOUND, "document %s not found", id)
		}
		if err != nil {
			return unavailable("read document %s", id, err)
		}
		if st == string(ingestd.StatusDeleted) {
			return nil
		}
		if _, err := tx.ExecContext(ctx, "UPDATE documents SET status = 'deleted', deleted_at = ? WHERE id = ?", ts(s.now()), id); err != nil {
			return fmt.Errorf("tombstone %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM chunks WHERE document_id = ?", id); err != nil {
			return fmt.Errorf("delete chunks of %s: %w", id, err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM links WHERE from_id = ?", id); err != nil {
			return fmt.Errorf("delete links of %s: %w", id, err)
		}
		return nil
	})
}

// SetStatus marks a stored, not deleted document active or rejected.
// Returns EINVALID for any other status, ENOTFOUND for an unknown or
// deleted document.
func (s *Store) SetStatus(ctx context.Context, id string, status ingestd.Status) error {
	if status != ingestd.StatusActive && status != ingestd.StatusRejected {
		return ingestd.Errorf(ingestd.EINVALID, "status %q: only active or rejected can be set (use DeleteDocument)", status)
	}
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE documents SET status = ? WHERE id = ? AND status != 'deleted'", string(status), id)
		if err != nil {
			return unavailable("set status of %s", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ingestd.Errorf(ingestd.ENOTFOUND, "document %s not found", id)
		}
		return nil
	})
}

// DocumentRefs lists the not-deleted documents of an installation by
// external id.
func (s *Store) DocumentRefs(ctx context.Context, installation string) ([]ingestd.DocumentRef, error) {
	rows, err := s.read.QueryContext(ctx, `SELECT id, external_id, content_hash, status FROM documents
		WHERE installation = ? AND status != 'deleted' ORDER BY external_id`, installation)
	if err != nil {
		return nil, unavailable("list documents of %s", installation, err)
	}
	defer rows.Close()
	var out []ingestd.DocumentRef
	for rows.Next() {
		var r ingestd.DocumentRef
		var st string
		if err := rows.Scan(&r.ID, &r.ExternalID, &r.ContentHash, &st); err != nil {
			return nil, fmt.Errorf("list documents of %s: %w", installation, err)
		}
		r.Status = ingestd.Status(st)
		out = append(out, r)
	}
	return out, rows.Err()
}

// TierFacts returns the facts of each document it holds, deleted ones
// included; a NULL tier is "". Documents the in-memory mirror holds (after
// the same catch-up a search makes) are answered from it, with their
// metadata when every key asked for is one the mirror keeps
// (Options.MetaKeys); the rest, and the metadata of other keys, with one
// prepared statement each.
func (s *Store) TierFacts(ctx context.Context, docIDs, metaKeys []string) (map[string]ingestd.TierFacts, error) {
	out, parents, missing, withMeta, err := s.vec.facts(ctx, docIDs, metaKeys)
	if err != nil {
		return nil, err
	}
	if len(metaKeys) == 0 {
		withMeta = true
	}
	if len(missing) > 0 {
		if parents == nil {
			parents = map[string]string{}
		}
		read := map[string]ingestd.TierFacts{}
		if err := s.readFacts(ctx, missing, read, parents); err != nil {
			return nil, err
		}
		if withMeta && len(metaKeys) > 0 && len(read) > 0 {
			if err := s.readFactMeta(ctx, read, parents, metaKeys); err != nil {
				return nil, err
			}
		}
		maps.Copy(out, read)
	}
	if !withMeta && len(out) > 0 {
		if err := s.readFactMeta(ctx, out, parents, metaKeys); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// The verdict's lookups run on every retrieval and must cost next to
// nothing: one prepared statement for any number of ids, which travel as
// a JSON array.
const (
	factsSQL = `SELECT d.id, d.installation, d.source_kind, d.tier, d.readers, p.id, p.installation, p.source_kind, p.tier, p.readers
		FROM documents d LEFT JOIN documents p ON p.id = d.parent_id
		WHERE d.id IN (SELECT value FROM json_each(?))`
	factMetaSQL = `SELECT d.id, j.key, j.value FROM documents d, json_each(d.meta) j
		WHERE d.id IN (SELECT value FROM json_each(?1)) AND j.key IN (SELECT value FROM json_each(?2))`
)

// readFacts adds the facts of the documents ids from the database to out,
// and the id of each one's parent the store holds to parents.
func (s *Store) readFacts(ctx context.Context, ids []string, out map[string]ingestd.TierFacts, parents map[string]string) error {
	arg, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("read tier facts: %w", err)
	}
	st, err := s.stmt(ctx, factsSQL)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(ctx, string(arg))
	if err != nil {
		return unavailable("read tier facts%s", "", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id, inst, kind              string
			tier, readers               sql.NullString
			parent, pInst, pKind, pTier sql.NullString
			pReaders                    sql.NullString
		)
		if err := rows.Scan(&id, &inst, &kind, &tier, &readers, &parent, &pInst, &pKind, &pTier, &pReaders); err != nil {
			return fmt.Errorf("read tier facts: %w", err)
		}
		f := ingestd.TierFacts{Installation: inst, SourceKind: kind, Tier: ingestd.Tier(tier.String),
			Readers: ingestd.DecodeReaders(readers.String, readers.Valid)}
		if parent.Valid {
			f.Parent = &ingestd.TierFacts{Installation: pInst.String, SourceKind: pKind.String, Tier: ingestd.Tier(pTier.String),
				Readers: ingestd.DecodeReaders(pReaders.String, pReaders.Valid)}
			parents[id] = parent.String
		}
		out[id] = f
	}
	return rows.Err()
}

// readFactMeta fills the Meta of the facts in out, and of their parents
// (parents maps a document to its parent's id), with the values of keys.
func (s *Store) readFactMeta(ctx context.Context, out map[string]ingestd.TierFacts, parents map[string]string, keys []string) error {
	ids := make([]string, 0, len(out)+len(parents))
	for id := range out {
		ids = append(ids, id)
	}
	for _, p := range parents {
		if _, ok := out[p]; !ok {
			ids = append(ids, p)
		}
	}
	idsArg, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("read tier metadata: %w", err)
	}
	keysArg, err := json.Marshal(keys)
	if err != nil {
		return fmt.Errorf("read tier metadata: %w", err)
	}
	st, err := s.stmt(ctx, factMetaSQL)
	if err != nil {
		return err
	}
	rows, err := st.QueryContext(ctx, string(idsArg), string(keysArg))
	if err != nil {
		return unavailable("read tier metadata%s", "", err)
	}
	defer rows.Close()
	meta := map[string]map[string]string{}
	for rows.Next() {
		var id, key string
		var val sql.NullString
		if err := rows.Scan(&id, &key, &val); err != nil {
			return fmt.Errorf("read tier metadata: %w", err)
		}
		if meta[id] == nil {
			meta[id] = map[string]string{}
		}
		meta[id][key] = val.String
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read tier metadata: %w", err)
	}
	for id, f := range out {
		f.Meta = meta[id]
		if f.Parent != nil {
			p := *f.Parent
			p.Meta = meta[parents[id]]
			f.Parent = &p
		}
		out[id] = f
	}
	return nil
}

// CountDocuments counts not-deleted documents by installation, source
// kind, stored tier, the values of metaKeys and the same of their parent.
func (s *Store) CountDocuments(ctx context.Context, metaKeys []string) ([]ingestd.DocumentCount, error) {
	return s.countDocuments(ctx, metaKeys, false, nil)
}

// CountDocumentsFor counts as CountDocuments does the documents r may
// read (all for nil), by readers state too.
func (s *Store) CountDocumentsFor(ctx context.Context, metaKeys []string, r *ingestd.Reader) ([]ingestd.DocumentCount, error) {
	return s.countDocuments(ctx, metaKeys, true, r)
}

// readerStateSQL is the ingestd.Readers.State of documents d.
const readerStateSQL = `CASE WHEN d.readers IS NULL THEN 'unmapped'
	WHEN instr(' ' || d.readers || ' ', ' * ') > 0 THEN 'public' ELSE 'restricted' END`

func (s *Store) countDocuments(ctx context.Context, metaKeys []string, byState bool, reader *ingestd.Reader) ([]ingestd.DocumentCount, error) {
	keys, err := json.Marshal(metaKeys)
	if err != nil {
		return nil, fmt.Errorf("count documents: %w", err)
	}
	meta := func(d string) string {
		if len(metaKeys) == 0 {
			return "'{}'"
		}
		return "(SELECT json_group_object(j.key, j.value) FROM json_each(" + d + ".meta) j WHERE j.key IN (SELECT value FROM json_each(?1)))"
	}
	state, where := "''", ""
	if byState {
		state = readerStateSQL
	}
	var args []any
	if len(metaKeys) > 0 {
		args = append(args, string(keys))
	}
	if reader != nil {
		ps, err := json.Marshal(reader.Principals)
		if err != nil {
			return nil, fmt.Errorf("count documents: %w", err)
		}
		args = append(args, string(ps))
		where = fmt.Sprintf(` AND EXISTS (SELECT 1 FROM json_each(?%d) r WHERE instr(' ' || d.readers || ' ', ' ' || r.value || ' ') > 0)`, len(args))
	}
	q := `SELECT d.installation, d.source_kind, coalesce(d.tier, ''), ` + meta("d") + `,
			p.id IS NOT NULL, coalesce(p.installation, ''), coalesce(p.source_kind, ''), coalesce(p.tier, ''), ` + meta("p") + `, ` + state + `, count(*)
		FROM documents d LEFT JOIN documents p ON p.id = d.parent_id
		WHERE d.status != 'deleted'` + where + ` GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10`
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, unavailable("count documents%s", "", err)
	}
	defer rows.Close()
	var out []ingestd.DocumentCount
	for rows.Next() {
		var (
			c                   ingestd.DocumentCount
			tier, m             string
			hasParent           bool
			pInst, pKind, pTier string
			pm                  sql.NullString
		)
		if err := rows.Scan(&c.Installation, &c.SourceKind, &tier, &m, &hasParent, &pInst, &pKind, &pTier, &pm, &c.ReadersState, &c.Count); err != nil {
			return nil, fmt.Errorf("count documents: %w", err)
		}
		c.Tier = ingestd.Tier(tier)
		if c.Meta, err = metaObject(m); err != nil {
			return nil, fmt.Errorf("count documents: %w", err)
		}
		if hasParent {
			c.Parent = &ingestd.TierFacts{Installation: pInst, SourceKind: pKind, Tier: ingestd.Tier(pTier)}
			if c.Parent.Meta, err = metaObject(pm.String); err != nil {
				return nil, fmt.Errorf("count documents: %w", err)
			}
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// metaObject decodes a JSON object of strings; empty means none.
func metaObject(s string) (map[string]string, error) {
	if s == "" || s == "{}" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	return m, nil
}

// Links returns the links that start or end at any of the documents, each
// once, ordered by from, to, relation.
func (s *Store) Links(ctx context.Context, docIDs []string) ([]ingestd.Link, error) {
	seen := map[ingestd.Link]bool{}
	var out []ingestd.Link
	err := inBatches(docIDs, func(batch []string) error {
		ph := placeholders(len(batch))
		args := append(anys(batch), anys(batch)...)
		rows, err := s.read.QueryContext(ctx, "SELECT from_id, to_id, relation FROM links WHERE from_id IN ("+ph+
			") UNION SELECT from_id, to_id, relation FROM links WHERE to_id IN ("+ph+")", args...)
		if err != nil {
			return unavailable("read links%s", "", err)
		}
		defer rows.Close()
		for rows.Next() {
			var l ingestd.Link
			if err := rows.Scan(&l.From, &l.To, &l.Relation); err != nil {
				return fmt.Errorf("read links: %w", err)
			}
			if !seen[l] {
				seen[l] = true
				out = append(out, l)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	sortLinks(out)
	return out, nil
}

// Cursor returns the stored value, "" if none.
func (s *Store) Cursor(ctx context.Context, installation, key string) (string, error) {
	var v string
	err := s.read.QueryRowContext(ctx, "SELECT value FROM cursors WHERE installation = ? AND key = ?", installation, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", unavailable("read cursor of %s", installation, err)
	}
	return v, nil
}

// SetCursor stores a sync cursor.
func (s *Store) SetCursor(ctx context.Context, installation, key, value string) error {
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO cursors (installation, key, value) VALUES (?, ?, ?)
			ON CONFLICT (installation, key) DO UPDATE SET value = excluded.value`, installation, key, value)
		if err != nil {
			return unavailable("set cursor of %s", installation, err)
		}
		return nil
	})
}

// CachedEmbeddings returns the cached vectors of the text hashes.
func (s *Store) CachedEmbeddings(ctx context.Context, embedderID string, textHashes []string) (map[string][]float32, error) {
	out := make(map[string][]float32, len(textHashes))
	err := inBatches(textHashes, func(batch []string) error {
		args := append([]any{embedderID}, anys(batch)...)
		rows, err := s.read.QueryContext(ctx, "SELECT text_hash, embedding FROM embedding_cache WHERE embedder_id = ? AND text_hash IN ("+
			placeholders(len(batch))+")", args...)
		if err != nil {
			return unavailable("read embedding cache%s", "", err)
		}
		defer rows.Close()
		for rows.Next() {
			var h string
			var b []byte
			if err := rows.Scan(&h, &b); err != nil {
				return fmt.Errorf("read embedding cache: %w", err)
			}
			out[h] = decodeVector(b)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PutEmbeddings adds vectors to the embedding cache, replacing any cached
// for the same hash.
func (s *Store) PutEmbeddings(ctx context.Context, embedderID string, vecs map[string][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, "INSERT OR REPLACE INTO embedding_cache (embedder_id, text_hash, embedding) VALUES (?, ?, ?)")
		if err != nil {
			return fmt.Errorf("put embeddings: %w", err)
		}
		defer st.Close()
		for h, v := range vecs {
			if _, err := st.ExecContext(ctx, embedderID, h, encodeVector(v)); err != nil {
				return unavailable("put embedding %s", h, err)
			}
		}
		return nil
	})
}

// encodeVector is the stored form of a vector: little-endian float32s.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVector(b []byte) []float32 {
	if len(b) == 0 {
		return nil
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// batchSize keeps IN lists well under SQLite's variable limit.
const batchSize = 500

func inBatches(ids []string, fn func([]string) error) error {
	for len(ids) > 0 {
		n := min(len(ids), batchSize)
		if err := fn(ids[:n]); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func anys[T ~string](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// chunkColumns are the columns of c's row that are not its fields as
// they are: the heading path as JSON ("[]" for none) and the embedding
// as stored (NULL for none).
func chunkColumns(c ingestd.Chunk) (headingPath string, embedding any) {
	headingPath = "[]"
	if len(c.HeadingPath) > 0 {
		b, _ := json.Marshal(c.HeadingPath)
		headingPath = string(b)
	}
	if len(c.Embedding) > 0 {
		embedding = encodeVector(c.Embedding)
	}
	return headingPath, embedding
}

// readersArg is r as the readers column holds it: NULL when unmapped.
func readersArg(r ingestd.Readers) any {
	s, ok := r.Encode()
	if !ok {
		return nil
	}
	return s
}
