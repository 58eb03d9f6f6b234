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
// nothing in it is tsquery syntax. A word also matches its alternatives
// (table lexeme_alternatives: its digits or a number word, a synonym), as
// the SQLite text index and the lexical embedder fold them
// (internal/lexnorm).
//
// Hits come in up to four passes, each ranking at most the store's
// TextCandidates matching chunks (Options), so the cost of a query is
// bounded however common its words are. Each pass runs only when the ones
// before it found fewer than limit chunks:
//
//  1. chunks holding every word, ranked by ts_rank_cd (cover density: words
//     close together count more);
//  2. chunks holding the query's rarest word and some other word;
//  3. chunks holding the rarest word alone;
//  4. chunks holding other words only.
//
// Passes 2 to 4 rank by ts_rank over all the words (more words rank
// higher). Word rarity is the planner's own estimate: the most common
// lexemes of the chunks' tsvector column that ANALYZE (autovacuum) keeps in
// pg_stats; a word not among them counts as rarer than all that are, and
// without statistics the words keep their lexeme order. When more chunks
// match a pass than it may rank, it ranks those the GIN index yields first
// (in storage order), so the hits of a very common word are good matches,
// not necessarily the best ones. Returns EINVALID for limit < 1.
func (s *Store) SearchText(ctx context.Context, query string, f ingestd.Filter, limit int) ([]ingestd.Hit, error) {
	if limit <= 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d: must be positive", limit)
	}
	// Postgres text cannot hold NUL; it separates words like a space.
	query = strings.ReplaceAll(query, "\x00", " ")
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	where, args := filterSQL(f, 4)
	if where == "" {
		return nil, nil
	}
	return s.hits(ctx, "search text", searchTextSQL(where), append([]any{query, limit, max(s.textCandidates, limit)}, args...))
}

// textPasses are SearchText's passes in order: the condition on chunk c
// (besides the filter) and its rank. In q, rarest is the rarest word's
// tsquery and others the other words' joined by OR (NULL for a one-word
// query, which so leaves passes 2 to 4 empty).
var textPasses = []struct{ cond, rank string }{
	{"c.search @@ q.all_words", "ts_rank_cd(c.search, q.any_word)"},
	{"c.search @@ (q.rarest && q.others) AND NOT c.search @@ q.all_words", "ts_rank(c.search, q.any_word)"},
	{"c.search @@ q.rarest AND NOT c.search @@ q.others", "ts_rank(c.search, q.any_word)"},
	{"c.search @@ q.others AND NOT c.search @@ q.rarest", "ts_rank(c.search, q.any_word)"},
}

// searchTextSQL is SearchText's statement for the filter condition where:
// $1 is the query, $2 the limit, $3 how many candidates a pass may rank.
//
// words and q are made once (MATERIALIZED) and drive the GIN index as
// parameters. Each pass picks its candidates in a subquery with LIMIT $3
// (a bitmap scan that stops after $3 rows pass the filter), then ranks
// only those. A later pass is a one-time filter on the row counts of the
// passes before it, so it reads nothing when they have limit rows. The
// chunks a pass skips because an earlier pass covers them are therefore
// fewer than 3 * limit: each earlier pass saw all its chunks (else it hit
// its cap and returned limit rows, as $3 >= $2).
//
// What stays proportional to the corpus is the index work: GIN intersects
// posting lists driven by the rarest (passes 1 and 2) or reads the rarest
// word's (pass 3), but a one-word query of a common word, and pass 4,
// build a bitmap of every chunk holding the word. The filter is applied
// before the LIMIT, so a narrow filter reads up to $3 / (its selectivity)
// rows.
func searchTextSQL(where string) string {
	var b strings.Builder
	b.WriteString(`WITH words AS MATERIALIZED (
			SELECT w.word,
				(SELECT ingestd_tsquery_or(plainto_tsquery('simple', x.word)) FROM (SELECT w.word
					UNION SELECT alternative FROM lexeme_alternatives WHERE lexeme = w.word) AS x) AS query,
				coalesce(st.freqs[array_position(st.elems, w.word)], 0) AS freq
			FROM (SELECT word FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS word LIMIT 32) AS w
			LEFT JOIN (SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs
				FROM pg_stats
				WHERE schemaname = current_schema() AND tablename = 'chunks' AND attname = 'search' AND NOT inherited
				LIMIT 1) AS st ON true),
		rarest AS MATERIALIZED (SELECT word, query FROM words ORDER BY freq, word LIMIT 1),
		q AS MATERIALIZED (
			SELECT ingestd_tsquery_or(w.query) AS any_word, ingestd_tsquery_and(w.query) AS all_words,
				r.query AS rarest, ingestd_tsquery_or(w.query) FILTER (WHERE w.word <> r.word) AS others
			FROM words w, rarest r
			GROUP BY r.word, r.query)`)
	var counts []string
	for i, p := range textPasses {
		cond := p.cond
		if len(counts) > 0 {
			cond = strings.Join(counts, " + ") + " < $2 AND " + cond
		}
		fmt.Fprintf(&b, `,
		pass%d AS (
			SELECT c.id, c.document_id, %s AS score, c.seq
			FROM q, (SELECT c.id, c.document_id, c.search, c.seq FROM q, chunks c
				WHERE %s AND %s
				LIMIT $3) AS c
			ORDER BY score DESC, c.seq
			LIMIT $2)`, i, p.rank, cond, where)
		counts = append(counts, fmt.Sprintf("(SELECT count(*) FROM pass%d)", i))
	}
	b.WriteString(`
		SELECT id, document_id, score FROM (`)
	for i := range textPasses {
		if i > 0 {
			b.WriteString(`
			UNION ALL `)
		}
		fmt.Fprintf(&b, "SELECT id, document_id, score, seq, %d AS pass FROM pass%d", i, i)
	}
	b.WriteString(`) AS h
		ORDER BY pass, score DESC, seq
		LIMIT $2`)
	return b.String()
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

// hits runs a search as an unnamed statement, which Postgres plans with
// the values every time. pgx prepares and caches the store's other
// statements, and after five runs Postgres may switch a prepared statement
// to a generic plan, which cannot see the query's words or the filter's
// values: the full-text passes then scan every chunk (measured: 210 ms
// against 16 ms for a custom plan at 70k chunks) and a search for the few
// rejected chunks walks the whole HNSW graph. The id lookups keep their
// cached plans and skip planning.
func (s *Store) hits(ctx context.Context, what, sql string, args []any) ([]ingestd.Hit, error) {
	rows, err := s.pool.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
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
