package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/ingestd/ingestd"
)

// SearchText ranks chunks by full-text relevance over their text, title and
// heading path (weighted in that order). The query is reduced to its words
// inside the database (to_tsvector, then plainto_tsquery per word), so
// nothing in it is tsquery syntax. Chunks holding every word come first,
// ranked by ts_rank_cd (cover density: words close together count more);
// when they are fewer than limit, chunks holding any word fill the rest,
// ranked by ts_rank (half the cost per row), the same order as store/sqlite.
// Ranking reads every matching chunk, so the any-word pass of a query of
// common words costs in proportion to how many chunks hold them.
// Returns EINVALID for limit < 1.
func (s *Store) SearchText(ctx context.Context, query string, f ingestd.Filter, limit int) ([]ingestd.Hit, error) {
	if limit <= 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d: must be positive", limit)
	}
	// Postgres text cannot hold NUL; it separates words like a space.
	query = strings.ReplaceAll(query, "\x00", " ")
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	where, args := filterSQL(f, 3)
	if where == "" {
		return nil, nil
	}
	// q is made once (MATERIALIZED) and drives the GIN index as a
	// parameter. The any-word pass runs only when the every-word pass came
	// short (a one-time filter) and the query has more than one word.
	sql := `WITH q AS MATERIALIZED (
			SELECT ingestd_tsquery_or(w) AS any_word, ingestd_tsquery_and(w) AS all_words, count(*) AS words
			FROM ingestd_query_words($1) AS w),
		every_word AS (
			SELECT c.id, c.document_id, ts_rank_cd(c.search, q.any_word) AS score, c.seq
			FROM q, chunks c
			WHERE c.search @@ q.all_words AND ` + where + `
			ORDER BY score DESC, c.seq
			LIMIT $2)
		SELECT id, document_id, score FROM (
			SELECT id, document_id, score, seq, 0 AS pass FROM every_word
			UNION ALL
			(SELECT c.id, c.document_id, ts_rank(c.search, q.any_word) AS score, c.seq, 1 AS pass
			FROM q, chunks c
			WHERE (SELECT count(*) FROM every_word) < $2 AND q.words > 1
				AND c.search @@ q.any_word AND NOT c.search @@ q.all_words AND ` + where + `
			ORDER BY score DESC, c.seq
			LIMIT $2)) AS h
		ORDER BY pass, score DESC, seq
		LIMIT $2`
	return s.hits(ctx, "search text", sql, append([]any{query, limit}, args...))
}

// SearchVector ranks chunks by cosine similarity to v, best first, walking
// the HNSW index (hnsw.ef_search from Options; filtered searches continue
// with pgvector's iterative scan until they have limit rows or have read
// hnsw.max_scan_tuples). Only vectors of one embedder are compared:
// f.EmbedderID, or when empty the embedder of the most recently written
// vector. A v whose length is not the store's Dims compares nothing.
// Returns EINVALID for an empty v or limit < 1.
func (s *Store) SearchVector(ctx context.Context, v []float32, f ingestd.Filter, limit int) ([]ingestd.Hit, error) {
	if limit <= 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d: must be positive", limit)
	}
	if len(v) == 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "empty query vector")
	}
	if len(v) != s.dims {
		return nil, nil // every stored vector has s.dims dimensions
	}
	where, args := filterSQL(f, 4)
	if where == "" {
		return nil, nil
	}
	// An empty $3 means the embedder of the newest vector (one backward
	// step on the vector_seq index).
	sql := `SELECT c.id, c.document_id, 1 - (c.embedding <=> $1) AS score
		FROM chunks c
		WHERE c.embedder_id = coalesce(nullif($3::text, ''),
			(SELECT embedder_id FROM chunks WHERE embedding IS NOT NULL ORDER BY vector_seq DESC LIMIT 1))
		AND ` + where + `
		ORDER BY c.embedding <=> $1
		LIMIT $2`
	hits, err := s.hits(ctx, "search vectors", sql, append([]any{pgvector.NewVector(v), limit, f.EmbedderID}, args...))
	if err != nil {
		return nil, err
	}
	// The iterative scan's relaxed order may swap near neighbours.
	slices.SortStableFunc(hits, func(a, b ingestd.Hit) int { return cmp.Compare(b.Score, a.Score) })
	return hits, nil
}

func (s *Store) hits(ctx context.Context, what, sql string, args []any) ([]ingestd.Hit, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, classify(what, err)
	}
	hits, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingestd.Hit, error) {
		var h ingestd.Hit
		err := r.Scan(&h.ChunkID, &h.DocumentID, &h.Score)
		return h, err
	})
	if err != nil {
		return nil, classify(what, err)
	}
	return hits, nil
}

// filterSQL is the condition on chunks c that f asks for, with its
// arguments numbered from $next. It is "" when f can match nothing (only
// deleted documents asked for: their chunks are gone).
func filterSQL(f ingestd.Filter, next int) (string, []any) {
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []ingestd.Status{ingestd.StatusActive}
	}
	var keep []string
	for _, st := range statuses {
		if st != ingestd.StatusDeleted {
			keep = append(keep, string(st))
		}
	}
	if len(keep) == 0 {
		return "", nil
	}
	var conds []string
	var args []any
	add := func(cond string, arg any) {
		conds = append(conds, fmt.Sprintf(cond, next))
		args = append(args, arg)
		next++
	}
	if len(keep) == 1 {
		add("c.status = $%d", keep[0])
	} else {
		add("c.status = ANY($%d)", keep)
	}
	if len(f.Installations) > 0 {
		add("c.installation = ANY($%d)", f.Installations)
	}
	if len(f.SourceKinds) > 0 {
		add("c.source_kind = ANY($%d)", f.SourceKinds)
	}
	if len(f.Tiers) > 0 {
		var named []string
		undeclared := false
		for _, t := range f.Tiers {
			if t == "" {
				undeclared = true
			} else {
				named = append(named, string(t))
			}
		}
		switch {
		case undeclared && len(named) > 0:
			add("(c.tier IS NULL OR c.tier = '' OR c.tier = ANY($%d))", named)
		case undeclared:
			conds = append(conds, "(c.tier IS NULL OR c.tier = '')")
		default:
			add("c.tier = ANY($%d)", named)
		}
	}
	return strings.Join(conds, " AND "), args
}
