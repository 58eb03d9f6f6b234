package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/ingestd/ingestd"
)

// exportPage is how many documents Export reads at a time.
const exportPage = 500

// Export calls fn with everything the store holds, from one read-only
// REPEATABLE READ transaction (one snapshot: writers go on, and this sees
// none of what they commit meanwhile). Documents are read a page at a
// time by id, each page's chunks and links with it.
func (s *Store) Export(ctx context.Context, fn func(ingestd.ArchiveRecord) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return classify("begin export", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read only

	sum, err := exportSummary(ctx, tx)
	if err != nil {
		return err
	}
	if err := fn(ingestd.ArchiveRecord{Summary: sum}); err != nil {
		return err
	}

	insts, err := exportInstallations(ctx, tx)
	if err != nil {
		return err
	}
	for i := range insts {
		if err := fn(ingestd.ArchiveRecord{Installation: &insts[i]}); err != nil {
			return err
		}
	}
	tombs, err := tombstones(ctx, tx)
	if err != nil {
		return err
	}
	for i := range tombs {
		if err := fn(ingestd.ArchiveRecord{Tombstone: &tombs[i]}); err != nil {
			return err
		}
	}
	after := ""
	for {
		docs, err := s.exportPage(ctx, tx, after)
		if err != nil {
			return err
		}
		for i := range docs {
			if err := fn(ingestd.ArchiveRecord{Document: &docs[i]}); err != nil {
				return err
			}
		}
		if len(docs) < exportPage {
			break
		}
		after = docs[len(docs)-1].ID
	}
	rows, err := tx.Query(ctx, "SELECT installation, key, value FROM cursors ORDER BY installation, key")
	if err != nil {
		return classify("export cursors", err)
	}
	var (
		c     ingestd.Cursor
		fnErr error
	)
	_, err = pgx.ForEachRow(rows, []any{&c.Installation, &c.Key, &c.Value}, func() error {
		cur := c
		fnErr = fn(ingestd.ArchiveRecord{Cursor: &cur})
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	return classifyNil("export cursors", err)
}

// exportSummary counts what an export of tx holds.
func exportSummary(ctx context.Context, tx pgx.Tx) (*ingestd.ArchiveSummary, error) {
	sum := ingestd.ArchiveSummary{Embedders: map[string]int{}}
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM installations), (SELECT count(*) FROM erasures),
		(SELECT count(*) FROM documents), (SELECT count(*) FROM links), (SELECT count(*) FROM cursors)`).
		Scan(&sum.Installations, &sum.Tombstones, &sum.Documents, &sum.Links, &sum.Cursors); err != nil {
		return nil, classify("count for export", err)
	}
	rows, err := tx.Query(ctx, "SELECT CASE WHEN embedding IS NULL THEN '' ELSE embedder_id END, count(*) FROM chunks GROUP BY 1")
	if err != nil {
		return nil, classify("count chunks for export", err)
	}
	var (
		emb string
		k   int
	)
	if _, err := pgx.ForEachRow(rows, []any{&emb, &k}, func() error {
		sum.Embedders[emb] += k
		sum.Chunks += k
		return nil
	}); err != nil {
		return nil, classify("count chunks for export", err)
	}
	return &sum, nil
}

// exportInstallations reads the installations, in id order.
func exportInstallations(ctx context.Context, tx pgx.Tx) ([]ingestd.Installation, error) {
	rows, err := tx.Query(ctx, "SELECT id, kind, tier FROM installations ORDER BY id")
	if err != nil {
		return nil, classify("export installations", err)
	}
	insts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingestd.Installation, error) {
		var in ingestd.Installation
		var tier *string
		err := r.Scan(&in.ID, &in.Kind, &tier)
		in.Tier = ingestd.Tier(deref(tier))
		return in, err
	})
	if err != nil {
		return nil, classify("export installations", err)
	}
	return insts, nil
}

// exportPage reads the documents after the id, with their chunks and
// outgoing links.
func (s *Store) exportPage(ctx context.Context, tx pgx.Tx, after string) ([]ingestd.ArchivedDocument, error) {
	rows, err := tx.Query(ctx, "SELECT "+documentColumns+", deleted_at FROM documents WHERE id > $1 ORDER BY id LIMIT $2", after, exportPage)
	if err != nil {
		return nil, classify("export documents", err)
	}
	docs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingestd.ArchivedDocument, error) {
		var deleted *time.Time
		d, err := scanDocument(scanExtra{r, &deleted})
		if err != nil {
			return ingestd.ArchivedDocument{}, err
		}
		return ingestd.ArchivedDocument{Document: *d, DeletedAt: utc(deleted)}, nil
	})
	if err != nil || len(docs) == 0 {
		return docs, classifyNil("export documents", err)
	}
	ids := make([]string, len(docs))
	at := make(map[string]int, len(docs))
	for i, d := range docs {
		ids[i], at[d.ID] = d.ID, i
	}
	rows, err = tx.Query(ctx, `SELECT id, document_id, ordinal, heading_path, text, fenced, tokens, embedding, embedder_id, tier, locator
		FROM chunks WHERE document_id = ANY($1) ORDER BY document_id, ordinal, seq`, ids)
	if err != nil {
		return nil, classify("export chunks", err)
	}
	var (
		c    ingestd.Chunk
		emb  *pgvector.Vector
		tier *string
	)
	if _, err := pgx.ForEachRow(rows, []any{&c.ID, &c.DocumentID, &c.Ordinal, &c.HeadingPath, &c.Text, &c.Fenced, &c.Tokens, &emb, &c.EmbedderID, &tier, &c.Locator}, func() error {
		ch := c
		if len(ch.HeadingPath) == 0 {
			ch.HeadingPath = nil
		}
		if emb != nil {
			ch.Embedding = emb.Slice()
		}
		ch.Tier = ingestd.Tier(deref(tier))
		d := &docs[at[ch.DocumentID]]
		d.Chunks = append(d.Chunks, ch)
		c.HeadingPath, emb = nil, nil
		return nil
	}); err != nil {
		return nil, classify("export chunks", err)
	}
	rows, err = tx.Query(ctx, "SELECT from_id, to_id, relation FROM links WHERE from_id = ANY($1) ORDER BY from_id, to_id, relation", ids)
	if err != nil {
		return nil, classify("export links", err)
	}
	var l ingestd.Link
	if _, err := pgx.ForEachRow(rows, []any{&l.From, &l.To, &l.Relation}, func() error {
		d := &docs[at[l.From]]
		d.Links = append(d.Links, l)
		return nil
	}); err != nil {
		return nil, classify("export links", err)
	}
	return docs, nil
}

func classifyNil(what string, err error) error {
	if err == nil {
		return nil
	}
	return classify(what, err)
}

// scanExtra scans a document row followed by one more column.
type scanExtra struct {
	row   pgx.Row
	extra any
}

func (s scanExtra) Scan(dest ...any) error { return s.row.Scan(append(dest, s.extra)...) }

// Import writes the records in one transaction, as they are, once every
// document passed ingestd.CheckArchived with the store's FenceCheck: the
// documents' rows upserted, their chunks and outgoing links replaced (the
// chunks copied in one COPY).
func (s *Store) Import(ctx context.Context, recs []ingestd.ArchiveRecord) error {
	in, err := s.importRows(recs)
	if err != nil {
		return err
	}
	docIDs, rows, from, to, rels := in.docIDs, in.rows, in.from, in.to, in.rels
	now := s.now()
	return s.inTx(ctx, "import", func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, r := range recs {
			switch {
			case r.Installation != nil:
				in := r.Installation
				b.Queue("INSERT INTO installations (id, kind, tier, updated_at) VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING",
					in.ID, in.Kind, nullable(string(in.Tier)), now)
			case r.Tombstone != nil:
				t := r.Tombstone
				b.Queue(`INSERT INTO erasures (key, key_id, kind, installation, created_at) VALUES ($1, $2, $3, $4, $5)
					ON CONFLICT (key) DO UPDATE SET key_id = EXCLUDED.key_id, kind = EXCLUDED.kind, installation = EXCLUDED.installation,
						created_at = EXCLUDED.created_at`, t.Key, t.KeyID, t.Kind, t.Installation, t.CreatedAt)
			case r.Cursor != nil:
				c := r.Cursor
				b.Queue(`INSERT INTO cursors (installation, key, value) VALUES ($1, $2, $3)
					ON CONFLICT (installation, key) DO UPDATE SET value = EXCLUDED.value`, c.Installation, c.Key, c.Value)
			case r.Document != nil:
				queueDocument(&b, r.Document, now)
			}
		}
		if len(docIDs) > 0 {
			b.Queue("DELETE FROM chunks WHERE document_id = ANY($1)", docIDs)
			b.Queue("DELETE FROM links WHERE from_id = ANY($1)", docIDs)
		}
		if b.Len() > 0 {
			if err := tx.SendBatch(ctx, &b).Close(); err != nil {
				return err
			}
		}
		if len(rows) > 0 {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"chunks"}, chunkColumns, pgx.CopyFromRows(rows)); err != nil {
				return err
			}
		}
		if len(from) > 0 {
			if _, err := tx.Exec(ctx, `INSERT INTO links (from_id, to_id, relation)
				SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING`, from, to, rels); err != nil {
				return err
			}
		}
		return nil
	})
}

// importedRows is what Import writes besides the records' own rows: the
// ids of the documents it replaces, their chunks as COPY rows, and their
// outgoing links.
type importedRows struct {
	docIDs         []string
	rows           [][]any
	from, to, rels []string
}

// importRows checks every record (tombstones well formed, documents
// passing ingestd.CheckArchived) and returns their chunk and link rows.
func (s *Store) importRows(recs []ingestd.ArchiveRecord) (*importedRows, error) {
	var (
		docIDs []string
		rows   [][]any
		from   []string
		to     []string
		rels   []string
	)
	for _, r := range recs {
		ad := r.Document
		if ad == nil {
			if t := r.Tombstone; t != nil && (t.Key == "" || t.KeyID == "" || (t.Kind != ingestd.TombstoneDocument && t.Kind != ingestd.TombstoneAuthor)) {
				return nil, ingestd.Errorf(ingestd.EINVALID, "tombstone %q: want a key, a key id and kind document or author (kind %q)", t.Key, t.Kind)
			}
			continue
		}
		id, err := ingestd.CheckArchived(ad, s.fenceCheck)
		if err != nil {
			return nil, err
		}
		status := ad.Status
		if status == "" {
			status = ingestd.StatusActive
		}
		docIDs = append(docIDs, id)
		tier := nullable(string(ad.Tier))
		for _, c := range ad.Chunks {
			emb, err := s.vector(c.Embedding)
			if err != nil {
				return nil, err
			}
			rows = append(rows, []any{c.ID, id, int32(c.Ordinal), headingPath(c.HeadingPath), c.Text, c.Fenced, int32(c.Tokens),
				emb, c.EmbedderID, tier, ad.Installation, ad.SourceKind, string(status), ad.Title, c.Locator, readersParam(ad.Readers)})
		}
		for _, l := range ad.Links {
			from, to, rels = append(from, id), append(to, l.To), append(rels, l.Relation)
		}
	}
	return &importedRows{docIDs: docIDs, rows: rows, from: from, to: to, rels: rels}, nil
}

// queueDocument queues the upsert of an archived document's row: its
// status (active when empty), deletion time (now for a tombstone without
// one) and ingestion time (now when unset).
func queueDocument(b *pgx.Batch, d *ingestd.ArchivedDocument, now time.Time) {
	id := d.ID
	if id == "" {
		id = ingestd.DocumentID(d.Installation, d.ExternalID)
	}
	status := d.Status
	if status == "" {
		status = ingestd.StatusActive
	}
	var deleted *time.Time
	if status == ingestd.StatusDeleted {
		t := d.DeletedAt
		if t.IsZero() {
			t = now
		}
		deleted = &t
	}
	meta := d.Meta
	if meta == nil {
		meta = map[string]string{}
	}
	ingested := d.IngestedAt
	if ingested.IsZero() {
		ingested = now
	}
	b.Queue(`INSERT INTO documents (`+documentColumns+`, deleted_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
		ON CONFLICT (id) DO UPDATE SET installation = EXCLUDED.installation, external_id = EXCLUDED.external_id,
			source_kind = EXCLUDED.source_kind, item_kind = EXCLUDED.item_kind, uri = EXCLUDED.uri,
			title = EXCLUDED.title, author = EXCLUDED.author, created_at = EXCLUDED.created_at,
			updated_at = EXCLUDED.updated_at, content_hash = EXCLUDED.content_hash, tier = EXCLUDED.tier,
			status = EXCLUDED.status, parent_id = EXCLUDED.parent_id, meta = EXCLUDED.meta,
			ingested_at = EXCLUDED.ingested_at, readers = EXCLUDED.readers, deleted_at = EXCLUDED.deleted_at`,
		id, d.Installation, d.ExternalID, d.SourceKind, d.ItemKind, d.URI, d.Title, d.Author,
		timestamp(d.CreatedAt), timestamp(d.UpdatedAt), d.ContentHash, nullable(string(d.Tier)),
		string(status), nullable(d.ParentID), meta, ingested, readersParam(d.Readers), deleted)
}
