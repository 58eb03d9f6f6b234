package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ingestd/ingestd"
)

const chunkViewColumns = `c.id, c.document_id, c.ordinal, c.heading_path, c.text, c.fenced, c.tokens, c.embedding,
	c.embedder_id, d.tier, d.installation, d.source_kind, d.item_kind, d.uri, d.title, d.status, d.updated_at, c.locator`

func scanChunkView(rows *sql.Rows) (ingestd.ChunkView, error) {
	var (
		v       ingestd.ChunkView
		hp      string
		emb     []byte
		tier    sql.NullString
		status  string
		updated sql.NullString
	)
	if err := rows.Scan(&v.ID, &v.DocumentID, &v.Ordinal, &hp, &v.Text, &v.Fenced, &v.Tokens, &emb,
		&v.EmbedderID, &tier, &v.Installation, &v.SourceKind, &v.ItemKind, &v.URI, &v.Title, &status, &updated, &v.Locator); err != nil {
		return v, err
	}
	if hp != "" && hp != "[]" {
		if err := json.Unmarshal([]byte(hp), &v.HeadingPath); err != nil {
			return v, fmt.Errorf("chunk %s heading path: %w", v.ID, err)
		}
	}
	v.Embedding = decodeVector(emb)
	v.Tier = ingestd.Tier(tier.String)
	v.DocumentTier = v.Tier
	v.DocumentStatus = ingestd.Status(status)
	v.UpdatedAt = parseTS(updated)
	return v, nil
}

// Chunks returns the chunks with the ids, in the order of ids; unknown ids
// (and repeats) are skipped. Tier is the document's stored tier.
func (s *Store) Chunks(ctx context.Context, ids []string) ([]ingestd.ChunkView, error) {
	byID := make(map[string]ingestd.ChunkView, len(ids))
	err := inBatches(ids, func(batch []string) error {
		rows, err := s.read.QueryContext(ctx, "SELECT "+chunkViewColumns+
			" FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.id IN ("+placeholders(len(batch))+")", anys(batch)...)
		if err != nil {
			return unavailable("read chunks%s", "", err)
		}
		defer rows.Close()
		for rows.Next() {
			v, err := scanChunkView(rows)
			if err != nil {
				return fmt.Errorf("read chunks: %w", err)
			}
			byID[v.ID] = v
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
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

// DocumentChunks returns every chunk of the documents, grouped by document
// in the order of docIDs, each group in ordinal order.
func (s *Store) DocumentChunks(ctx context.Context, docIDs []string) ([]ingestd.ChunkView, error) {
	byDoc := map[string][]ingestd.ChunkView{}
	err := inBatches(docIDs, func(batch []string) error {
		rows, err := s.read.QueryContext(ctx, "SELECT "+chunkViewColumns+
			" FROM chunks c JOIN documents d ON d.id = c.document_id WHERE c.document_id IN ("+placeholders(len(batch))+
			") ORDER BY c.document_id, c.ordinal, c.seq", anys(batch)...)
		if err != nil {
			return unavailable("read document chunks%s", "", err)
		}
		defer rows.Close()
		for rows.Next() {
			v, err := scanChunkView(rows)
			if err != nil {
				return fmt.Errorf("read document chunks: %w", err)
			}
			byDoc[v.DocumentID] = append(byDoc[v.DocumentID], v)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	var out []ingestd.ChunkView
	for _, id := range docIDs {
		out = append(out, byDoc[id]...)
		delete(byDoc, id)
	}
	return out, nil
}

// ExpansionChunks is the default, ingestd.ExpansionChunksOf: it reads
// every chunk of the documents concerned and chooses among them in Go.
func (s *Store) ExpansionChunks(ctx context.Context, x ingestd.Expansion) ([]ingestd.ChunkView, error) {
	// A person's expansion first drops what they may not read, by the
	// in-memory mirror's readers (TierFacts), before any chunk is read.
	x, err := ingestd.ReadableExpansion(ctx, s, x)
	if err != nil {
		return nil, err
	}
	return ingestd.ExpansionChunksOf(ctx, s, x)
}

// ChunksToEmbed returns up to limit chunks, by id after the id after, whose
// vector the embedder did not make (or that have none). Tier is the
// document's stored tier.
func (s *Store) ChunksToEmbed(ctx context.Context, embedderID, after string, limit int) ([]ingestd.Chunk, error) {
	if limit <= 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d: must be positive", limit)
	}
	rows, err := s.read.QueryContext(ctx, "SELECT "+chunkViewColumns+
		` FROM chunks c JOIN documents d ON d.id = c.document_id
		WHERE c.id > ? AND (c.embedder_id != ? OR c.embedding IS NULL) ORDER BY c.id LIMIT ?`, after, embedderID, limit)
	if err != nil {
		return nil, unavailable("list chunks to embed%s", "", err)
	}
	defer rows.Close()
	var out []ingestd.Chunk
	for rows.Next() {
		v, err := scanChunkView(rows)
		if err != nil {
			return nil, fmt.Errorf("list chunks to embed: %w", err)
		}
		out = append(out, v.Chunk)
	}
	return out, rows.Err()
}

// SetEmbeddings replaces the vectors of the chunks and records the embedder
// that made them; ids it does not hold are skipped (the chunk was replaced
// meanwhile).
func (s *Store) SetEmbeddings(ctx context.Context, embedderID string, vecs map[string][]float32) error {
	if len(vecs) == 0 {
		return nil
	}
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		st, err := tx.PrepareContext(ctx, "UPDATE chunks SET embedding = ?, embedder_id = ? WHERE id = ?")
		if err != nil {
			return fmt.Errorf("set embeddings: %w", err)
		}
		defer st.Close()
		for id, v := range vecs {
			var emb any
			if len(v) > 0 {
				emb = encodeVector(v)
			}
			if _, err := st.ExecContext(ctx, emb, embedderID, id); err != nil {
				return unavailable("set embedding of %s", id, err)
			}
		}
		return nil
	})
}

func sortLinks(ls []ingestd.Link) {
	slices.SortFunc(ls, func(a, b ingestd.Link) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Relation, b.Relation))
	})
}
