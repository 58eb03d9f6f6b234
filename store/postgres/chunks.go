package postgres

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/ingestd/ingestd"
)

const chunkViewColumns = `c.id, c.document_id, c.ordinal, c.heading_path, c.text, c.fenced, c.tokens, c.embedding,
	c.embedder_id, d.tier, d.installation, d.source_kind, d.item_kind, d.uri, d.title, d.status, d.updated_at, c.locator`

func scanChunkView(r pgx.CollectableRow) (ingestd.ChunkView, error) {
	var (
		v       ingestd.ChunkView
		emb     *pgvector.Vector
		tier    *string
		status  string
		updated *time.Time
	)
	if err := r.Scan(&v.ID, &v.DocumentID, &v.Ordinal, &v.HeadingPath, &v.Text, &v.Fenced, &v.Tokens, &emb,
		&v.EmbedderID, &tier, &v.Installation, &v.SourceKind, &v.ItemKind, &v.URI, &v.Title, &status, &updated, &v.Locator); err != nil {
		return v, err
	}
	if len(v.HeadingPath) == 0 {
		v.HeadingPath = nil
	}
	if emb != nil {
		v.Embedding = emb.Slice()
	}
	v.Tier = ingestd.Tier(deref(tier))
	v.DocumentTier = v.Tier
	v.DocumentStatus = ingestd.Status(status)
	v.UpdatedAt = utc(updated)
	return v, nil
}

// Chunks returns the chunks with the ids, in the order of ids, in one
// query; unknown ids (and repeats) are skipped. Tier is the document's
// stored tier.
func (s *Store) Chunks(ctx context.Context, ids []string) ([]ingestd.ChunkView, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, "SELECT "+chunkViewColumns+
		" FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id = ANY($1)", ids)
	if err != nil {
		return nil, classify("read chunks", err)
	}
	got, err := pgx.CollectRows(rows, scanChunkView)
	if err != nil {
		return nil, classify("read chunks", err)
	}
	byID := make(map[string]ingestd.ChunkView, len(got))
	for _, v := range got {
		byID[v.ID] = v
	}
	out := make([]ingestd.ChunkView, 0, len(byID))
	for _, id := range ids {
		if v, ok := byID[id]; ok {
			out = append(out, v)
			delete(byID, id)
		}
	}
	return out, nil
}

// DocumentChunks returns every chunk of the documents in one query, grouped
// by document in the order of docIDs, each group in ordinal order.
func (s *Store) DocumentChunks(ctx context.Context, docIDs []string) ([]ingestd.ChunkView, error) {
	if len(docIDs) == 0 {
		return nil, nil
	}
	// A document named twice is served once.
	return s.chunkViewsOnce(ctx, "read document chunks", "SELECT "+chunkViewColumns+
		` FROM unnest($1::text[]) WITH ORDINALITY AS want (id, n)
		JOIN chunks c ON c.document_id = want.id JOIN documents d ON d.id = c.document_id
		ORDER BY want.n, c.ordinal, c.seq`, docIDs)
}

// chunkViewsOnce runs a query of chunkViewColumns and returns its chunks in
// row order, each once.
func (s *Store) chunkViewsOnce(ctx context.Context, what, sql string, args ...any) ([]ingestd.ChunkView, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, classify(what, err)
	}
	out, err := pgx.CollectRows(rows, scanChunkView)
	if err != nil {
		return nil, classify(what, err)
	}
	seen := make(map[string]bool, len(out))
	kept := out[:0]
	for _, v := range out {
		if !seen[v.ID] {
			seen[v.ID] = true
			kept = append(kept, v)
		}
	}
	return kept, nil
}

// ExpansionChunks answers ingestd.Searcher.ExpansionChunks in one query,
// choosing each document's candidates by pgvector's inner product (<#>)
// instead of carrying every chunk of every document over the wire. A
// query of another length than the store's vectors compares nothing.
func (s *Store) ExpansionChunks(ctx context.Context, x ingestd.Expansion) ([]ingestd.ChunkView, error) {
	if len(x.Adjacent) == 0 && len(x.Documents) == 0 {
		return nil, nil
	}
	var q any // NULL: no similarity, every chunk scores 0
	if len(x.Query) == s.dims {
		q = pgvector.NewVector(x.Query)
	}
	docs := make([]string, len(x.Adjacent))
	ords := make([]int32, len(x.Adjacent))
	for i, p := range x.Adjacent {
		docs[i], ords[i] = p.DocumentID, int32(p.Ordinal)
	}
	var reader any // NULL: the service view reads every chunk
	if x.Reader != nil {
		reader = readerParam(x.Reader)
	}
	return s.chunkViewsOnce(ctx, "read expansion chunks", `WITH adjacent AS (
			SELECT c.id, 0 AS part, a.n, c.ordinal
			FROM unnest($1::text[], $2::int[]) WITH ORDINALITY AS a (doc, ord, n)
			JOIN chunks c ON c.document_id = a.doc AND c.ordinal = a.ord),
		best AS (
			SELECT id, 1 AS part, n, ordinal FROM (
				SELECT c.id, w.n, c.ordinal, row_number() OVER (PARTITION BY w.n ORDER BY
					CASE WHEN $4::vector IS NOT NULL AND c.embedding IS NOT NULL AND (c.embedder_id = '' OR c.embedder_id = $5)
						THEN -(c.embedding <#> $4::vector) ELSE 0 END DESC,
					c.ordinal, c.seq) AS rank
				FROM unnest($3::text[]) WITH ORDINALITY AS w (doc, n)
				JOIN chunks c ON c.document_id = w.doc) AS ranked
			WHERE rank <= $6),
		picked AS (SELECT * FROM adjacent UNION ALL SELECT * FROM best)
		SELECT `+chunkViewColumns+`
		FROM picked p JOIN chunks c ON c.id = p.id JOIN documents d ON d.id = c.document_id
		WHERE $7::text[] IS NULL OR d.readers && $7::text[]
		ORDER BY p.part, p.n, p.ordinal`, docs, ords, x.Documents, q, x.EmbedderID, ingestd.ExpansionCandidates, reader)
}

// ChunksToEmbed returns up to limit chunks, by id after the id after, whose
// vector the embedder did not make (or that have none). Tier is the
// document's stored tier. Returns EINVALID for limit < 1.
func (s *Store) ChunksToEmbed(ctx context.Context, embedderID, after string, limit int) ([]ingestd.Chunk, error) {
	if limit <= 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d: must be positive", limit)
	}
	rows, err := s.pool.Query(ctx, "SELECT "+chunkViewColumns+
		` FROM chunks c JOIN documents d ON d.id = c.document_id
		WHERE c.id > $1 AND (c.embedder_id <> $2 OR c.embedding IS NULL) ORDER BY c.id LIMIT $3`, after, embedderID, limit)
	if err != nil {
		return nil, classify("list chunks to embed", err)
	}
	views, err := pgx.CollectRows(rows, scanChunkView)
	if err != nil {
		return nil, classify("list chunks to embed", err)
	}
	out := make([]ingestd.Chunk, len(views))
	for i, v := range views {
		out[i] = v.Chunk
	}
	return out, nil
}

// SetEmbeddings replaces the vectors of the chunks and records the embedder
// that made them, in one transaction; ids it does not hold are skipped (the
// chunk was replaced meanwhile). The vectors become the newest, so a search
// without an embedder id compares this embedder's. Returns EINVALID for a
// vector whose length is not the store's Dims.
func (s *Store) SetEmbeddings(ctx context.Context, embedderID string, vecs map[string][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(vecs)) // one lock order for every writer
	vals := make([]any, len(ids))
	for i, id := range ids {
		v, err := s.vector(vecs[id])
		if err != nil {
			return err
		}
		vals[i] = v
	}
	return s.inTx(ctx, "set embeddings", func(tx pgx.Tx) error {
		var b pgx.Batch
		for i, id := range ids {
			b.Queue(`UPDATE chunks SET embedding = $2, embedder_id = $3, vector_seq = nextval('chunk_vector_seq') WHERE id = $1`,
				id, vals[i], embedderID)
		}
		return tx.SendBatch(ctx, &b).Close()
	})
}
