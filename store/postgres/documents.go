package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/ingestd/ingestd"
)

// PutInstallations upserts the installations; others keep their rows.
// Returns EINVALID for an installation without an id.
func (s *Store) PutInstallations(ctx context.Context, insts []ingestd.Installation) error {
	if len(insts) == 0 {
		return nil
	}
	ids := make([]string, len(insts))
	kinds := make([]string, len(insts))
	tiers := make([]*string, len(insts))
	for i, in := range insts {
		if in.ID == "" {
			return ingestd.Errorf(ingestd.EINVALID, "installation without an id")
		}
		ids[i], kinds[i], tiers[i] = in.ID, in.Kind, nullable(string(in.Tier))
	}
	return s.inTx(ctx, "put installations", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO installations (id, kind, tier, updated_at)
			SELECT DISTINCT ON (id) id, kind, tier, $4 FROM unnest($1::text[], $2::text[], $3::text[]) AS u (id, kind, tier)
			ORDER BY id
			ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, tier = EXCLUDED.tier, updated_at = EXCLUDED.updated_at`,
			ids, kinds, tiers, s.now())
		return err
	})
}

const documentColumns = `id, installation, external_id, source_kind, item_kind, uri, title, author,
	created_at, updated_at, content_hash, tier, status, parent_id, meta, ingested_at, readers`

// Document returns the document with the id, deleted ones included.
// Returns ENOTFOUND for an id it does not hold.
func (s *Store) Document(ctx context.Context, id string) (*ingestd.Document, error) {
	d, err := scanDocument(s.pool.QueryRow(ctx, "SELECT "+documentColumns+" FROM documents WHERE id = $1", id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ingestd.Errorf(ingestd.ENOTFOUND, "document %s not found", id)
	}
	if err != nil {
		return nil, classify("read document "+id, err)
	}
	return d, nil
}

func scanDocument(row pgx.Row) (*ingestd.Document, error) {
	var (
		d                          ingestd.Document
		created, updated, ingested *time.Time
		tier, parent               *string
		status                     string
		readers                    *[]string
	)
	if err := row.Scan(&d.ID, &d.Installation, &d.ExternalID, &d.SourceKind, &d.ItemKind, &d.URI, &d.Title, &d.Author,
		&created, &updated, &d.ContentHash, &tier, &status, &parent, &d.Meta, &ingested, &readers); err != nil {
		return nil, err
	}
	d.Readers = readersOf(readers)
	d.CreatedAt, d.UpdatedAt, d.IngestedAt = utc(created), utc(updated), utc(ingested)
	d.Tier, d.Status, d.ParentID = ingestd.Tier(deref(tier)), ingestd.Status(status), deref(parent)
	if len(d.Meta) == 0 {
		d.Meta = nil
	}
	return &d, nil
}

// putDocumentSQL inserts the document or, when its stored hash, tier,
// status or source kind differ (or it is a tombstone), overwrites it. It returns a row only
// when it wrote one, with inserted true for a new document; the row stays
// locked until the transaction ends, so concurrent writers of one document
// take turns and the last one's chunks win.
const putDocumentSQL = `INSERT INTO documents AS d (` + documentColumns + `, deleted_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, NULL)
	ON CONFLICT (id) DO UPDATE SET installation = EXCLUDED.installation, external_id = EXCLUDED.external_id,
		source_kind = EXCLUDED.source_kind, item_kind = EXCLUDED.item_kind, uri = EXCLUDED.uri,
		title = EXCLUDED.title, author = EXCLUDED.author, created_at = EXCLUDED.created_at,
		updated_at = EXCLUDED.updated_at, content_hash = EXCLUDED.content_hash, tier = EXCLUDED.tier,
		status = EXCLUDED.status, parent_id = EXCLUDED.parent_id, meta = EXCLUDED.meta,
		ingested_at = EXCLUDED.ingested_at, readers = EXCLUDED.readers, deleted_at = NULL
	WHERE d.content_hash <> EXCLUDED.content_hash OR d.tier IS DISTINCT FROM EXCLUDED.tier OR d.status <> EXCLUDED.status
		OR d.source_kind <> EXCLUDED.source_kind
	RETURNING (xmax = 0)`

// chunkColumns are the columns PutDocument copies; the rest have defaults
// or are generated.
var chunkColumns = []string{"id", "document_id", "ordinal", "heading_path", "text", "fenced", "tokens",
	"embedding", "embedder_id", "tier", "installation", "source_kind", "status", "title", "locator", "readers"}

// putReadersSQL writes only the readers of a stored, not deleted
// document whose content, tier, status and kind are those given, and
// returns a row when they differed: a change of readers (a revocation)
// keeps every chunk and vector.
const putReadersSQL = `UPDATE documents SET readers = $2 WHERE id = $1 AND status <> 'deleted'
	AND content_hash = $3 AND tier IS NOT DISTINCT FROM $4 AND status = $5 AND source_kind = $6
	AND readers IS DISTINCT FROM $2::text[]
	RETURNING 1`

// readersParam is r as the readers columns hold it: NULL when unmapped.
func readersParam(r ingestd.Readers) any {
	if !r.Mapped {
		return nil
	}
	n := r.Normal()
	out := make([]string, len(n.Principals))
	for i, p := range n.Principals {
		out[i] = string(p)
	}
	return out
}

// readersOf is the inverse of readersParam.
func readersOf(ps *[]string) ingestd.Readers {
	if ps == nil {
		return ingestd.Readers{}
	}
	out := make([]ingestd.Principal, len(*ps))
	for i, p := range *ps {
		out[i] = ingestd.Principal(p)
	}
	return ingestd.ReadersOf(out...)
}

// readerParam is a person's principals, for c.readers && $n.
func readerParam(r *ingestd.Reader) []string {
	out := make([]string, len(r.Principals))
	for i, p := range r.Principals {
		out[i] = string(p)
	}
	return out
}

// PutDocuments writes each put with PutDocument, in order, each in its
// own transaction: on a server, a commit costs a round trip rather than a
// rewrite of the pages every transaction touches, and concurrent workers
// already write side by side.
func (s *Store) PutDocuments(ctx context.Context, puts []ingestd.DocumentPut) []ingestd.PutResult {
	return ingestd.PutDocumentsOf(ctx, s, puts)
}

// PutDocument writes doc, its chunks and its outgoing links in one
// transaction, retried on serialization failures and deadlocks. An empty
// doc.ID is filled with ingestd.DocumentID; an empty Status means active;
// chunks without a DocumentID get doc's. Chunk tiers are always stored as
// doc's tier. Concurrent writers of the same document never duplicate it:
// they take turns on its row, and one that finds the same hash, tier,
// status and source kind writes nothing. Returns EINVALID for a document without
// installation, external id, source kind or content hash, for
// StatusDeleted, for a chunk of another document and for an embedding
// whose length is not the store's Dims; ECONFLICT when another document
// holds the (installation, external id) or two chunks share an id.
func (s *Store) PutDocument(ctx context.Context, doc *ingestd.Document, chunks []ingestd.Chunk, links []ingestd.Link) (bool, error) {
	id, status, err := ingestd.CheckPut(doc)
	if err != nil {
		return false, err
	}
	tier := nullable(string(doc.Tier))
	rows, err := s.chunkRows(doc, id, status, chunks)
	if err != nil {
		return false, err
	}
	tos, rels, err := linkTargets(id, links)
	if err != nil {
		return false, err
	}
	meta := doc.Meta
	if meta == nil {
		meta = map[string]string{}
	}
	ingested := doc.IngestedAt
	if ingested.IsZero() {
		ingested = s.now()
	}

	var changed bool
	readers := readersParam(doc.Readers)
	err = s.inTx(ctx, "put document "+id, func(tx pgx.Tx) error {
		changed = false
		var one int
		err := tx.QueryRow(ctx, putReadersSQL, id, readers, doc.ContentHash, tier, string(status), doc.SourceKind).Scan(&one)
		if err == nil {
			changed = true
			_, err = tx.Exec(ctx, "UPDATE chunks SET readers = $2 WHERE document_id = $1", id, readers)
			return err
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var inserted bool
		err = tx.QueryRow(ctx, putDocumentSQL, id, doc.Installation, doc.ExternalID, doc.SourceKind, doc.ItemKind,
			doc.URI, doc.Title, doc.Author, timestamp(doc.CreatedAt), timestamp(doc.UpdatedAt), doc.ContentHash, tier,
			string(status), nullable(doc.ParentID), meta, ingested, readers).Scan(&inserted)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // same hash, tier, status and kind: nothing to write
		}
		if err != nil {
			return err
		}
		changed = true
		var b pgx.Batch
		if !inserted {
			b.Queue("DELETE FROM chunks WHERE document_id = $1", id)
			b.Queue("DELETE FROM links WHERE from_id = $1", id)
		}
		if len(links) > 0 {
			b.Queue(`INSERT INTO links (from_id, to_id, relation) SELECT $1, t, r FROM unnest($2::text[], $3::text[]) AS u (t, r)
				ON CONFLICT DO NOTHING`, id, tos, rels)
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
		return nil
	})
	if err != nil {
		return false, err
	}
	return changed, nil
}

// chunkRows returns the rows chunkColumns names for the document's
// chunks, or EINVALID for a chunk without an id or of another document.
func (s *Store) chunkRows(doc *ingestd.Document, id string, status ingestd.Status, chunks []ingestd.Chunk) ([][]any, error) {
	tier := nullable(string(doc.Tier))
	rows := make([][]any, len(chunks))
	for i := range chunks {
		c := &chunks[i]
		if c.ID == "" {
			return nil, ingestd.Errorf(ingestd.EINVALID, "document %s: chunk %d without an id", id, i)
		}
		if c.DocumentID != "" && c.DocumentID != id {
			return nil, ingestd.Errorf(ingestd.EINVALID, "document %s: chunk %s belongs to %s", id, c.ID, c.DocumentID)
		}
		emb, err := s.vector(c.Embedding)
		if err != nil {
			return nil, fmt.Errorf("document %s chunk %s: %w", id, c.ID, err)
		}
		rows[i] = []any{c.ID, id, int32(c.Ordinal), headingPath(c.HeadingPath), c.Text, c.Fenced, int32(c.Tokens),
			emb, c.EmbedderID, tier, doc.Installation, doc.SourceKind, string(status), doc.Title, c.Locator, readersParam(doc.Readers)}
	}
	return rows, nil
}

// linkTargets returns the targets and relations of the document's
// outgoing links, or EINVALID for a link from another document or
// without a target.
func linkTargets(id string, links []ingestd.Link) (tos, rels []string, err error) {
	for _, l := range links {
		if l.From != "" && l.From != id {
			return nil, nil, ingestd.Errorf(ingestd.EINVALID, "document %s: link from %s", id, l.From)
		}
		if l.To == "" {
			return nil, nil, ingestd.Errorf(ingestd.EINVALID, "document %s: link without a target", id)
		}
		tos, rels = append(tos, l.To), append(rels, l.Relation)
	}
	return tos, rels, nil
}

// DeleteDocument tombstones the document: status deleted, deleted_at set,
// its chunks (and so their full-text and vector entries) and its outgoing
// links removed. Returns ENOTFOUND for an unknown id; a tombstone is left
// as it is.
func (s *Store) DeleteDocument(ctx context.Context, id string) error {
	return s.inTx(ctx, "delete document "+id, func(tx pgx.Tx) error {
		// Lock first: the statements after it then see chunks a concurrent
		// PutDocument committed while this waited.
		var st string
		err := tx.QueryRow(ctx, "SELECT status FROM documents WHERE id = $1 FOR UPDATE", id).Scan(&st)
		if errors.Is(err, pgx.ErrNoRows) {
			return ingestd.Errorf(ingestd.ENOTFOUND, "document %s not found", id)
		}
		if err != nil || st == string(ingestd.StatusDeleted) {
			return err
		}
		var b pgx.Batch
		b.Queue("UPDATE documents SET status = 'deleted', deleted_at = $2 WHERE id = $1", id, s.now())
		b.Queue("DELETE FROM chunks WHERE document_id = $1", id)
		b.Queue("DELETE FROM links WHERE from_id = $1", id)
		return tx.SendBatch(ctx, &b).Close()
	})
}

// SetStatus marks a stored, not deleted document active or rejected.
// Returns EINVALID for any other status, ENOTFOUND for an unknown or
// deleted document.
func (s *Store) SetStatus(ctx context.Context, id string, status ingestd.Status) error {
	if status != ingestd.StatusActive && status != ingestd.StatusRejected {
		return ingestd.Errorf(ingestd.EINVALID, "status %q: only active or rejected can be set (use DeleteDocument)", status)
	}
	return s.inTx(ctx, "set status of "+id, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "UPDATE documents SET status = $2 WHERE id = $1 AND status <> 'deleted'", id, string(status))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return ingestd.Errorf(ingestd.ENOTFOUND, "document %s not found", id)
		}
		// A statement of its own, after the row lock: it sees every chunk
		// committed before.
		_, err = tx.Exec(ctx, "UPDATE chunks SET status = $2 WHERE document_id = $1 AND status <> $2", id, string(status))
		return err
	})
}

// DocumentRefs lists the not-deleted documents of an installation by
// external id.
func (s *Store) DocumentRefs(ctx context.Context, installation string) ([]ingestd.DocumentRef, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, external_id, content_hash, status FROM documents
		WHERE installation = $1 AND status <> 'deleted' ORDER BY external_id`, installation)
	if err != nil {
		return nil, classify("list documents of "+installation, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingestd.DocumentRef, error) {
		var d ingestd.DocumentRef
		err := r.Scan(&d.ID, &d.ExternalID, &d.ContentHash, &d.Status)
		return d, err
	})
	if err != nil {
		return nil, classify("list documents of "+installation, err)
	}
	return out, nil
}

// TierFacts returns the facts of each document it holds, deleted ones
// included; a NULL tier is "". One primary-key lookup for all ids, joined
// to each one's parent; the metadata is read only when keys are asked for.
func (s *Store) TierFacts(ctx context.Context, docIDs, metaKeys []string) (map[string]ingestd.TierFacts, error) {
	out := make(map[string]ingestd.TierFacts, len(docIDs))
	if len(docIDs) == 0 {
		return out, nil
	}
	args := []any{docIDs}
	if len(metaKeys) > 0 {
		args = append(args, metaKeys)
	}
	rows, err := s.pool.Query(ctx, `SELECT d.id, d.installation, d.source_kind, d.tier, `+factMeta("d", metaKeys, 2)+`, d.readers,
			p.id IS NOT NULL, p.installation, p.source_kind, p.tier, `+factMeta("p", metaKeys, 2)+`, p.readers
		FROM documents d LEFT JOIN documents p ON p.id = d.parent_id
		WHERE d.id = ANY($1)`, args...)
	if err != nil {
		return nil, classify("read tier facts", err)
	}
	var (
		id, inst, kind            string
		tier, pInst, pKind, pTier *string
		meta, pMeta               map[string]string
		hasParent                 bool
		readers, pReaders         *[]string
	)
	_, err = pgx.ForEachRow(rows, []any{&id, &inst, &kind, &tier, &meta, &readers, &hasParent, &pInst, &pKind, &pTier, &pMeta, &pReaders}, func() error {
		f := ingestd.TierFacts{Installation: inst, SourceKind: kind, Tier: ingestd.Tier(deref(tier)), Meta: meta, Readers: readersOf(readers)}
		if hasParent {
			f.Parent = &ingestd.TierFacts{Installation: deref(pInst), SourceKind: deref(pKind), Tier: ingestd.Tier(deref(pTier)), Meta: pMeta,
				Readers: readersOf(pReaders)}
		}
		out[id] = f
		meta, pMeta, readers, pReaders = nil, nil, nil, nil
		return nil
	})
	if err != nil {
		return nil, classify("read tier facts", err)
	}
	return out, nil
}

// factMeta is the SQL of the values of keys (passed as the text array
// parameter $param) in the metadata of the document row d: a JSON object,
// NULL when it has none of them or no key is asked for.
func factMeta(d string, keys []string, param int) string {
	if len(keys) == 0 {
		return "NULL::jsonb"
	}
	return fmt.Sprintf("(SELECT jsonb_object_agg(k, %[1]s.meta->>k) FROM unnest($%[2]d::text[]) k WHERE %[1]s.meta->>k IS NOT NULL)", d, param)
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

func (s *Store) countDocuments(ctx context.Context, metaKeys []string, byState bool, reader *ingestd.Reader) ([]ingestd.DocumentCount, error) {
	var args []any
	if len(metaKeys) > 0 {
		args = append(args, metaKeys)
	}
	state, where := "''", ""
	if byState {
		state = `CASE WHEN d.readers IS NULL THEN 'unmapped' WHEN '*' = ANY(d.readers) THEN 'public' ELSE 'restricted' END`
	}
	if reader != nil {
		args = append(args, readerParam(reader))
		where = fmt.Sprintf(" AND d.readers && $%d::text[]", len(args))
	}
	rows, err := s.pool.Query(ctx, `SELECT d.installation, d.source_kind, coalesce(d.tier, ''), `+factMeta("d", metaKeys, 1)+`,
			p.id IS NOT NULL, coalesce(p.installation, ''), coalesce(p.source_kind, ''), coalesce(p.tier, ''), `+factMeta("p", metaKeys, 1)+`, `+state+`, count(*)
		FROM documents d LEFT JOIN documents p ON p.id = d.parent_id
		WHERE d.status <> 'deleted'`+where+`
		GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9, 10`, args...)
	if err != nil {
		return nil, classify("count documents", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingestd.DocumentCount, error) {
		var (
			c                   ingestd.DocumentCount
			hasParent           bool
			pInst, pKind, pTier string
			pMeta               map[string]string
		)
		err := r.Scan(&c.Installation, &c.SourceKind, &c.Tier, &c.Meta, &hasParent, &pInst, &pKind, &pTier, &pMeta, &c.ReadersState, &c.Count)
		if hasParent {
			c.Parent = &ingestd.TierFacts{Installation: pInst, SourceKind: pKind, Tier: ingestd.Tier(pTier), Meta: pMeta}
		}
		return c, err
	})
	if err != nil {
		return nil, classify("count documents", err)
	}
	return out, nil
}

// Links returns the links that start or end at any of the documents, each
// once, ordered by from, to, relation.
func (s *Store) Links(ctx context.Context, docIDs []string) ([]ingestd.Link, error) {
	if len(docIDs) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT from_id, to_id, relation FROM links WHERE from_id = ANY($1)
		UNION SELECT from_id, to_id, relation FROM links WHERE to_id = ANY($1)`, docIDs)
	if err != nil {
		return nil, classify("read links", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingestd.Link, error) {
		var l ingestd.Link
		err := r.Scan(&l.From, &l.To, &l.Relation)
		return l, err
	})
	if err != nil {
		return nil, classify("read links", err)
	}
	slices.SortFunc(out, func(a, b ingestd.Link) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Relation, b.Relation))
	})
	return out, nil
}

// Cursor returns the stored value, "" if none.
func (s *Store) Cursor(ctx context.Context, installation, key string) (string, error) {
	var v string
	err := s.pool.QueryRow(ctx, "SELECT value FROM cursors WHERE installation = $1 AND key = $2", installation, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", classify("read cursor of "+installation, err)
	}
	return v, nil
}

// SetCursor stores a sync cursor.
func (s *Store) SetCursor(ctx context.Context, installation, key, value string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO cursors (installation, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (installation, key) DO UPDATE SET value = EXCLUDED.value`, installation, key, value)
	if err != nil {
		return classify("set cursor of "+installation, err)
	}
	return nil
}

// CachedEmbeddings returns the cached vectors of the text hashes, in one
// query however many.
func (s *Store) CachedEmbeddings(ctx context.Context, embedderID string, textHashes []string) (map[string][]float32, error) {
	out := make(map[string][]float32, len(textHashes))
	if len(textHashes) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, "SELECT text_hash, embedding FROM embedding_cache WHERE embedder_id = $1 AND text_hash = ANY($2)",
		embedderID, textHashes)
	if err != nil {
		return nil, classify("read embedding cache", err)
	}
	var (
		h string
		v []float32
	)
	_, err = pgx.ForEachRow(rows, []any{&h, &v}, func() error {
		out[h] = v
		v = nil // the next row scans into a new slice
		return nil
	})
	if err != nil {
		return nil, classify("read embedding cache", err)
	}
	return out, nil
}

// PutEmbeddings adds vectors to the embedding cache, replacing any cached
// for the same hash. Rows are written in hash order so concurrent writers
// cannot deadlock.
func (s *Store) PutEmbeddings(ctx context.Context, embedderID string, vecs map[string][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	hashes := slices.Sorted(maps.Keys(vecs))
	return s.inTx(ctx, "put embeddings", func(tx pgx.Tx) error {
		var b pgx.Batch
		for _, h := range hashes {
			b.Queue(`INSERT INTO embedding_cache (embedder_id, text_hash, embedding) VALUES ($1, $2, $3)
				ON CONFLICT (embedder_id, text_hash) DO UPDATE SET embedding = EXCLUDED.embedding`, embedderID, h, vecs[h])
		}
		return tx.SendBatch(ctx, &b).Close()
	})
}

// vector is the column value of an embedding: nil (NULL) for none,
// EINVALID for a length other than the store's Dims.
func (s *Store) vector(v []float32) (any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	if len(v) != s.dims {
		return nil, ingestd.Errorf(ingestd.EINVALID, "embedding of %d dimensions; the store holds %d", len(v), s.dims)
	}
	return pgvector.NewVector(v), nil
}

func headingPath(hp []string) []string {
	if hp == nil {
		return []string{}
	}
	return hp
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func timestamp(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
