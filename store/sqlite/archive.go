package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/ingestd/ingestd"
)

// Export calls fn with everything the store holds, from one read
// transaction (a WAL snapshot: writers go on, and this sees none of what
// they commit meanwhile). Documents, their chunks and their links are read
// by three cursors in id order and merged, so memory stays at one document.
func (s *Store) Export(ctx context.Context, fn func(ingestd.ArchiveRecord) error) error {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return unavailable("begin export of %s", s.path, err)
	}
	defer tx.Rollback()

	sum := ingestd.ArchiveSummary{Embedders: map[string]int{}}
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM installations), (SELECT count(*) FROM erasures),
		(SELECT count(*) FROM documents), (SELECT count(*) FROM links WHERE from_id IN (SELECT id FROM documents)),
		(SELECT count(*) FROM cursors)`).Scan(&sum.Installations, &sum.Tombstones, &sum.Documents, &sum.Links, &sum.Cursors); err != nil {
		return unavailable("count %s", s.path, err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT CASE WHEN embedding IS NULL THEN '' ELSE embedder_id END, count(*) FROM chunks
		WHERE document_id IN (SELECT id FROM documents) GROUP BY 1`)
	if err != nil {
		return unavailable("count chunks of %s", s.path, err)
	}
	for rows.Next() {
		var id string
		var k int
		if err := rows.Scan(&id, &k); err != nil {
			rows.Close()
			return fmt.Errorf("count chunks: %w", err)
		}
		sum.Embedders[id] += k
		sum.Chunks += k
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("count chunks: %w", err)
	}
	if err := fn(ingestd.ArchiveRecord{Summary: &sum}); err != nil {
		return err
	}

	if err := eachRow(ctx, tx, "SELECT id, kind, coalesce(tier, '') FROM installations ORDER BY id", func(r *sql.Rows) error {
		var in ingestd.Installation
		var tier string
		if err := r.Scan(&in.ID, &in.Kind, &tier); err != nil {
			return err
		}
		in.Tier = ingestd.Tier(tier)
		return fn(ingestd.ArchiveRecord{Installation: &in})
	}); err != nil {
		return err
	}
	tombs, err := s.tombstones(ctx, tx)
	if err != nil {
		return err
	}
	for i := range tombs {
		if err := fn(ingestd.ArchiveRecord{Tombstone: &tombs[i]}); err != nil {
			return err
		}
	}
	if err := s.exportDocuments(ctx, tx, fn); err != nil {
		return err
	}
	return eachRow(ctx, tx, "SELECT installation, key, value FROM cursors ORDER BY installation, key", func(r *sql.Rows) error {
		var c ingestd.Cursor
		if err := r.Scan(&c.Installation, &c.Key, &c.Value); err != nil {
			return err
		}
		return fn(ingestd.ArchiveRecord{Cursor: &c})
	})
}

// eachRow calls fn for each row of the query; fn's error is returned as
// it is, a read error wrapped.
func eachRow(ctx context.Context, tx *sql.Tx, q string, fn func(*sql.Rows) error) error {
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return unavailable("export: %s", q, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// exportDocuments merges the documents, chunks and links cursors by
// document id.
func (s *Store) exportDocuments(ctx context.Context, tx *sql.Tx, fn func(ingestd.ArchiveRecord) error) error {
	docs, err := tx.QueryContext(ctx, "SELECT "+documentColumns+", deleted_at FROM documents ORDER BY id")
	if err != nil {
		return unavailable("export documents of %s", s.path, err)
	}
	defer docs.Close()
	chunks, err := tx.QueryContext(ctx, `SELECT c.id, c.document_id, c.ordinal, c.heading_path, c.text, c.fenced, c.tokens, c.embedding,
		c.embedder_id, c.tier, c.locator FROM chunks c ORDER BY c.document_id, c.ordinal, c.seq`)
	if err != nil {
		return unavailable("export chunks of %s", s.path, err)
	}
	defer chunks.Close()
	links, err := tx.QueryContext(ctx, "SELECT from_id, to_id, relation FROM links ORDER BY from_id, to_id, relation")
	if err != nil {
		return unavailable("export links of %s", s.path, err)
	}
	defer links.Close()

	var (
		nextChunk *ingestd.Chunk
		nextLink  *ingestd.Link
	)
	readChunk := func() (err error) {
		nextChunk, err = nextArchivedChunk(chunks)
		return err
	}
	readLink := func() (err error) {
		nextLink, err = nextArchivedLink(links)
		return err
	}
	if err := readChunk(); err != nil {
		return fmt.Errorf("export chunks: %w", err)
	}
	if err := readLink(); err != nil {
		return fmt.Errorf("export links: %w", err)
	}
	for docs.Next() {
		var deleted sql.NullString
		d, err := scanDocument(scanWith{docs, &deleted})
		if err != nil {
			return fmt.Errorf("export documents: %w", err)
		}
		ad := ingestd.ArchivedDocument{Document: *d, DeletedAt: parseTS(deleted)}
		// Chunks and links of documents that sort before this one have no
		// document (none should): skip them.
		for nextChunk != nil && nextChunk.DocumentID <= d.ID {
			if nextChunk.DocumentID == d.ID {
				ad.Chunks = append(ad.Chunks, *nextChunk)
			}
			if err := readChunk(); err != nil {
				return fmt.Errorf("export chunks: %w", err)
			}
		}
		for nextLink != nil && nextLink.From <= d.ID {
			if nextLink.From == d.ID {
				ad.Links = append(ad.Links, *nextLink)
			}
			if err := readLink(); err != nil {
				return fmt.Errorf("export links: %w", err)
			}
		}
		if err := fn(ingestd.ArchiveRecord{Document: &ad}); err != nil {
			return err
		}
	}
	if err := docs.Err(); err != nil {
		return fmt.Errorf("export documents: %w", err)
	}
	return nil
}

// nextArchivedChunk reads the next chunk of an export's chunk rows, nil
// after the last.
func nextArchivedChunk(chunks *sql.Rows) (*ingestd.Chunk, error) {
	if !chunks.Next() {
		return nil, chunks.Err()
	}
	var (
		c    ingestd.Chunk
		hp   string
		emb  []byte
		tier sql.NullString
	)
	if err := chunks.Scan(&c.ID, &c.DocumentID, &c.Ordinal, &hp, &c.Text, &c.Fenced, &c.Tokens, &emb, &c.EmbedderID, &tier, &c.Locator); err != nil {
		return nil, err
	}
	if hp != "" && hp != "[]" {
		if err := json.Unmarshal([]byte(hp), &c.HeadingPath); err != nil {
			return nil, fmt.Errorf("chunk %s heading path: %w", c.ID, err)
		}
	}
	c.Embedding, c.Tier = decodeVector(emb), ingestd.Tier(tier.String)
	return &c, nil
}

// nextArchivedLink reads the next link of an export's link rows, nil
// after the last.
func nextArchivedLink(links *sql.Rows) (*ingestd.Link, error) {
	if !links.Next() {
		return nil, links.Err()
	}
	var l ingestd.Link
	if err := links.Scan(&l.From, &l.To, &l.Relation); err != nil {
		return nil, err
	}
	return &l, nil
}

// scanWith scans a document row followed by extra columns.
type scanWith struct {
	rows  *sql.Rows
	extra *sql.NullString
}

func (s scanWith) Scan(dest ...any) error { return s.rows.Scan(append(dest, s.extra)...) }

// Import writes the records in one write transaction, as they are, once
// every document passed ingestd.CheckArchived with the store's FenceCheck.
func (s *Store) Import(ctx context.Context, recs []ingestd.ArchiveRecord) error {
	for _, r := range recs {
		if r.Document != nil {
			if _, err := ingestd.CheckArchived(r.Document, s.fenceCheck); err != nil {
				return err
			}
		}
		if r.Tombstone != nil {
			if err := checkTombstones([]ingestd.Tombstone{*r.Tombstone}); err != nil {
				return err
			}
		}
	}
	now := ts(s.now())
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		st, err := prepareImport(ctx, tx)
		if err != nil {
			return err
		}
		defer st.close()
		for _, r := range recs {
			var err error
			switch {
			case r.Installation != nil:
				in := r.Installation
				_, err = tx.ExecContext(ctx, "INSERT INTO installations (id, kind, tier, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
					in.ID, in.Kind, nullable(string(in.Tier)), now)
			case r.Tombstone != nil:
				t := r.Tombstone
				_, err = tx.ExecContext(ctx, `INSERT INTO erasures (key, key_id, kind, installation, created_at) VALUES (?, ?, ?, ?, ?)
					ON CONFLICT (key) DO UPDATE SET key_id = excluded.key_id, kind = excluded.kind, installation = excluded.installation,
						created_at = excluded.created_at`, t.Key, t.KeyID, t.Kind, t.Installation, ts(t.CreatedAt))
			case r.Cursor != nil:
				c := r.Cursor
				_, err = tx.ExecContext(ctx, `INSERT INTO cursors (installation, key, value) VALUES (?, ?, ?)
					ON CONFLICT (installation, key) DO UPDATE SET value = excluded.value`, c.Installation, c.Key, c.Value)
			case r.Document != nil:
				err = s.importDocument(ctx, st, r.Document)
			}
			if err != nil {
				return conflict("import", err)
			}
		}
		return nil
	})
}

// importDocument replaces the document with ad's id, its chunks and its
// outgoing links.
func (s *Store) importDocument(ctx context.Context, st *importStmts, ad *ingestd.ArchivedDocument) error {
	doc := ad.Document
	if doc.ID == "" {
		doc.ID = ingestd.DocumentID(doc.Installation, doc.ExternalID)
	}
	if doc.Status == "" {
		doc.Status = ingestd.StatusActive
	}
	meta := "{}"
	if len(doc.Meta) > 0 {
		b, err := json.Marshal(doc.Meta)
		if err != nil {
			return fmt.Errorf("document %s meta: %w", doc.ID, err)
		}
		meta = string(b)
	}
	var deleted any
	if doc.Status == ingestd.StatusDeleted {
		deleted = ts(ad.DeletedAt)
		if deleted == nil {
			deleted = ts(s.now())
		}
	}
	if _, err := st.doc.ExecContext(ctx,
		doc.ID, doc.Installation, doc.ExternalID, doc.SourceKind, doc.ItemKind, doc.URI, doc.Title, doc.Author,
		ts(doc.CreatedAt), ts(doc.UpdatedAt), doc.ContentHash, nullable(string(doc.Tier)), string(doc.Status),
		nullable(doc.ParentID), meta, ts(doc.IngestedAt), readersArg(doc.Readers), deleted); err != nil {
		return fmt.Errorf("import document %s: %w", doc.ID, err)
	}
	if _, err := st.delChunks.ExecContext(ctx, doc.ID); err != nil {
		return fmt.Errorf("replace chunks of %s: %w", doc.ID, err)
	}
	tier := nullable(string(doc.Tier))
	for _, c := range ad.Chunks {
		hp, emb := chunkColumns(c)
		if _, err := st.chunk.ExecContext(ctx, c.ID, doc.ID, c.Ordinal, hp, c.Text, c.Fenced, c.Tokens, emb, c.EmbedderID, tier, c.Locator); err != nil {
			return fmt.Errorf("import chunk %s of %s: %w", c.ID, doc.ID, err)
		}
	}
	if _, err := st.delLinks.ExecContext(ctx, doc.ID); err != nil {
		return fmt.Errorf("replace links of %s: %w", doc.ID, err)
	}
	for _, l := range ad.Links {
		if _, err := st.link.ExecContext(ctx, doc.ID, l.To, l.Relation); err != nil {
			return fmt.Errorf("import link %s -> %s: %w", doc.ID, l.To, err)
		}
	}
	return nil
}

// importStmts are the statements Import runs per document, prepared once
// per transaction.
type importStmts struct {
	doc, delChunks, chunk, delLinks, link *sql.Stmt
}

func prepareImport(ctx context.Context, tx *sql.Tx) (*importStmts, error) {
	st := &importStmts{}
	for _, p := range []struct {
		to **sql.Stmt
		q  string
	}{
		{&st.doc, `INSERT INTO documents (` + documentColumns + `, deleted_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET installation = excluded.installation, external_id = excluded.external_id,
			source_kind = excluded.source_kind, item_kind = excluded.item_kind, uri = excluded.uri,
			title = excluded.title, author = excluded.author, created_at = excluded.created_at,
			updated_at = excluded.updated_at, content_hash = excluded.content_hash, tier = excluded.tier,
			status = excluded.status, parent_id = excluded.parent_id, meta = excluded.meta,
			ingested_at = excluded.ingested_at, readers = excluded.readers, deleted_at = excluded.deleted_at`},
		{&st.delChunks, "DELETE FROM chunks WHERE document_id = ?"},
		{&st.chunk, `INSERT INTO chunks (id, document_id, ordinal, heading_path, text, fenced, tokens, embedding, embedder_id, tier, locator)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&st.delLinks, "DELETE FROM links WHERE from_id = ?"},
		{&st.link, "INSERT OR IGNORE INTO links (from_id, to_id, relation) VALUES (?, ?, ?)"},
	} {
		var err error
		if *p.to, err = tx.PrepareContext(ctx, p.q); err != nil {
			st.close()
			return nil, fmt.Errorf("prepare import: %w", err)
		}
	}
	return st, nil
}

func (st *importStmts) close() {
	for _, s := range []*sql.Stmt{st.doc, st.delChunks, st.chunk, st.delLinks, st.link} {
		if s != nil {
			s.Close()
		}
	}
}
