package postgres

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

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
// TextCandidates matching chunks (Options) once the store holds more than
// ExactChunks, so the cost of a query is bounded however common its words
// are. Each pass runs only when the ones
// before it found fewer than limit chunks:
//
//  1. chunks holding every word, ranked by ts_rank_cd (cover density: words
//     close together count more);
//  2. chunks holding the query's rarest word and some other word;
//  3. chunks holding the rarest word alone;
//  4. chunks holding other words only.
//
// Passes 2 to 4 rank by ts_rank over all the words (more words rank
// higher). In a store of at most ExactChunks chunks a word's rarity is
// how many chunks hold it (or an alternative); in a larger one it is the
// planner's estimate (pg_stats). Equally rare words are taken in lexeme
// order. When more
// chunks match a pass than it may rank, it ranks those the GIN index
// yields first (in storage order), so the hits of a very common word are
// good matches, not necessarily the best ones. Within a pass, equal ranks
// come in chunk id order.
//
// A store of at most ExactChunks chunks (Options) ranks every match and
// counts rarity, so its answer is a function of the stored chunks and the
// request: not of the order they were written in, nor of when ANALYZE
// last sampled the table (statistics differ between a store that was
// synced and one that was imported). In a larger store a pass that
// matches more than TextCandidates chunks depends on storage order, and
// rarity on the statistics: that is the price of bounding the cost, since
// choosing the candidates by anything stored in the row (their ids, say)
// reads every matching row, which is what ranking them all costs, and
// counting a word's chunks reads its whole posting list (docs/DESIGN.md).
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
	broad := s.broad(ctx, f.Reader)
	where, args := filterSQL(f, 4, broad)
	if where == "" {
		return nil, nil
	}
	common := where // the filter of the pass over common words (textPasses)
	if broad {
		common, _ = filterSQL(f, 4, false)
	}
	candidates := max(s.textCandidates, limit)
	exact, err := s.exact(ctx)
	if err != nil {
		return nil, err
	}
	if exact {
		candidates = math.MaxInt32 // every match is ranked
	}
	return s.hits(ctx, "search text", searchTextSQL(where, common, exact), append([]any{query, limit, candidates}, args...))
}

// textPasses are SearchText's passes in order: the condition on chunk c
// (besides the filter) and its rank. q holds every word's tsquery joined
// by OR (any_word) and by AND (all_words); in r, rarest is the rarest
// word's tsquery and others the other words' joined by OR (NULL for a
// one-word query, which so leaves passes 2 to 4 empty).
//
// The last pass matches the query's common words without its rarest: the
// one pass whose matches can be a large share of the corpus. It tests a
// broad reader's readers through the readers index all the same (common,
// in searchTextSQL): a person who reads a tenth of the chunks would
// otherwise have the pass read ten matching rows for each candidate it
// keeps (at 100k chunks up to ten thousand rows, 40 ms, where the
// intersection of the two indexes' bitmaps costs a few), and both forms
// yield the readable matches in storage order, so the pass keeps the
// same candidates.
var textPasses = []struct {
	cond, rank string
	common     bool
}{
	{"c.search @@ q.all_words", "ts_rank_cd(c.search, q.any_word)", false},
	{"c.search @@ (r.rarest && r.others) AND NOT c.search @@ q.all_words", "ts_rank(c.search, q.any_word)", false},
	{"c.search @@ r.rarest AND NOT c.search @@ r.others", "ts_rank(c.search, q.any_word)", false},
	{"c.search @@ r.others AND NOT c.search @@ r.rarest", "ts_rank(c.search, q.any_word)", true},
}

// searchTextSQL is SearchText's statement for the filter condition where
// (common in the pass over common words, the same filter in a form for
// the readers index):
// $1 is the query, $2 the limit, $3 how many candidates a pass may rank.
//
// words, q and r are made once (MATERIALIZED) and drive the GIN index as
// parameters; r, which finds the rarest word, is read only by passes 2 to
// 4, so a query pass 1 answers never counts. Each pass picks its candidates in a subquery with LIMIT $3
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
func searchTextSQL(where, common string, exact bool) string {
	// The rarest word: by a count of the chunks holding it in a store
	// that answers exactly (where a posting list is short), else by the
	// planner's statistics, the most common lexemes ANALYZE sampled (a
	// word not among them counts as rarer than those that are). Counting
	// in a large store builds each word's whole bitmap: SearchText took
	// 2.4 times as long at 100k chunks.
	rarity := `
			LEFT JOIN (SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs
				FROM pg_stats
				WHERE schemaname = current_schema() AND tablename = 'chunks' AND attname = 'search' AND NOT inherited
				LIMIT 1) AS st ON true
			ORDER BY coalesce(st.freqs[array_position(st.elems, w.word)], 0), w.word`
	if exact {
		rarity = `
			ORDER BY (SELECT count(*) FROM chunks c WHERE c.search @@ w.query), w.word`
	}
	var b strings.Builder
	b.WriteString(`WITH words AS MATERIALIZED (
			SELECT w.word,
				(SELECT ingestd_tsquery_or(plainto_tsquery('simple', x.word)) FROM (SELECT w.word
					UNION SELECT alternative FROM lexeme_alternatives WHERE lexeme = w.word) AS x) AS query
			FROM (SELECT word FROM unnest(tsvector_to_array(to_tsvector('english', $1))) AS word LIMIT 32) AS w),
		q AS MATERIALIZED (
			SELECT ingestd_tsquery_or(w.query) AS any_word, ingestd_tsquery_and(w.query) AS all_words
			FROM words w),
		rarest AS MATERIALIZED (
			SELECT w.word, w.query FROM words w` + rarity + `
			LIMIT 1),
		r AS MATERIALIZED (
			SELECT r.query AS rarest, ingestd_tsquery_or(w.query) FILTER (WHERE w.word <> r.word) AS others
			FROM words w, rarest r
			GROUP BY r.word, r.query)`)
	var counts []string
	for i, p := range textPasses {
		cond := p.cond
		if len(counts) > 0 {
			cond = strings.Join(counts, " + ") + " < $2 AND " + cond
		}
		from := "q"
		if i > 0 {
			from = "q, r" // rarest is counted only when a later pass runs
		}
		filter := where
		if p.common {
			filter = common
		}
		fmt.Fprintf(&b, `,
		pass%d AS (
			SELECT c.id, c.document_id, %s AS score
			FROM q, (SELECT c.id, c.document_id, c.search FROM %s, chunks c
				WHERE %s AND %s
				LIMIT $3) AS c
			ORDER BY score DESC, c.id
			LIMIT $2)`, i, p.rank, from, cond, filter)
		counts = append(counts, fmt.Sprintf("(SELECT count(*) FROM pass%d)", i))
	}
	b.WriteString(`
		SELECT id, document_id, score FROM (`)
	for i := range textPasses {
		if i > 0 {
			b.WriteString(`
			UNION ALL `)
		}
		fmt.Fprintf(&b, "SELECT id, document_id, score, %d AS pass FROM pass%d", i, i)
	}
	b.WriteString(`) AS h
		ORDER BY pass, score DESC, id
		LIMIT $2`)
	return b.String()
}

// SearchVector ranks chunks by cosine similarity to v, best first, ties
// by chunk id. Only vectors of one embedder are compared: f.EmbedderID, or
// when empty the embedder of the most recently written vector. A v whose
// length is not the store's Dims compares nothing. Returns EINVALID for
// an empty v or limit < 1.
//
// A store of at most ExactChunks chunks (Options) answers exactly: every
// vector the filter allows is scored (a sequential scan and a top-limit
// sort), so the answer is a function of the corpus and the query alone.
// A larger one walks the HNSW index (hnsw.ef_search from Options;
// filtered searches continue with pgvector's iterative scan until they
// have enough rows or have read hnsw.max_scan_tuples) for
// vectorOverfetch(limit) candidates and keeps the best limit by their
// exact scores: the graph, whose shape depends on the order vectors were
// written in, then decides only which near neighbours are found, not
// their scores or order.
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
	where, args := filterSQL(f, 4, false)
	if where == "" {
		return nil, nil
	}
	exact, err := s.exact(ctx)
	if err != nil {
		return nil, err
	}
	// The exact statement orders by the score expression, which the HNSW
	// index cannot serve (the planner scans and sorts); the other by the
	// index's distance.
	order, n := "score DESC, c.id", limit
	if !exact {
		order, n = "c.embedding <=> $1", vectorOverfetch(limit)
	}
	sql := `SELECT c.id, c.document_id, 1 - (c.embedding <=> $1) AS score
		FROM chunks c
		WHERE ` + vectorEmbedderSQL + `
		AND ` + where + `
		ORDER BY ` + order + `
		LIMIT $2`
	if !exact && f.Reader != nil {
		// A person with reader indexes walks each of them, and the
		// whole graph only for their other principals (readerindex.go).
		if own, rest := s.ownGraphs(ctx, f.Reader); len(own) > 0 {
			base := f
			base.Reader = nil
			where, args = filterSQL(base, 4, false)
			branches := make([]any, 0, len(own)+1)
			for _, p := range own {
				branches = append(branches, []string{p})
			}
			if len(rest) > 0 {
				branches = append(branches, rest)
			}
			sql = vectorSplitSQL(vectorEmbedderSQL, where, 4+len(args), len(branches))
			args = append(args, branches...)
		}
	}
	hits, err := s.hits(ctx, "search vectors", sql, append([]any{pgvector.NewVector(v), n, f.EmbedderID}, args...))
	if err != nil {
		return nil, err
	}
	// The iterative scan's relaxed order may swap near neighbours.
	ingestd.SortHits(hits)
	return hits[:min(limit, len(hits))], nil
}

// vectorEmbedderSQL is SearchVector's condition on the embedder: $3, or
// when empty the embedder of the newest vector (one backward step on the
// vector_seq index).
const vectorEmbedderSQL = `c.embedder_id = coalesce(nullif($3::text, ''),
			(SELECT embedder_id FROM chunks WHERE embedding IS NOT NULL ORDER BY vector_seq DESC LIMIT 1))`

// vectorOverfetch is how many candidates the HNSW path asks the index
// for to return limit hits: a few more than limit, so that a short run
// of equal scores cut by the limit, and near neighbours the relaxed order
// put late, are scored before the best limit are kept. Few, because a
// filtered search's iterative scan walks the graph until it has them
// all: twice the limit made the rejected block's search, whose filter
// few chunks pass, walk twice as far.
func vectorOverfetch(limit int) int { return limit + 8 }

// exact reports whether the store holds at most ExactChunks chunks, so
// that searches rank everything they match. It counts on the primary
// key's index, at most ExactChunks + 1 entries; a table the statistics
// put at over four times that many rows is not counted at all (it holds
// more, unless it shrank fourfold since autovacuum last looked). A store
// found larger is taken as larger for largeFor without asking again, so
// that a retrieval's several searches over a large store make no extra
// round trip each; one that shrank below ExactChunks answers exactly
// that much later.
func (s *Store) exact(ctx context.Context) (bool, error) {
	if s.exactChunks < 0 {
		return false, nil
	}
	s.sizeMu.Lock()
	large := time.Now().Before(s.largeUntil) // the cache's age, not a stored time
	s.sizeMu.Unlock()
	if large {
		return false, nil
	}
	var n int64
	if err := s.pool.QueryRow(ctx, exactSQL, s.exactChunks).Scan(&n); err != nil {
		return false, classify("count chunks", err)
	}
	if n <= s.exactChunks {
		return true, nil
	}
	s.sizeMu.Lock()
	s.largeUntil = time.Now().Add(largeFor)
	s.sizeMu.Unlock()
	return false, nil
}

// largeFor is how long exact remembers that the store is larger than
// ExactChunks.
const largeFor = time.Second

const exactSQL = `SELECT CASE
	WHEN (SELECT reltuples FROM pg_class WHERE oid = to_regclass('chunks')) > 4 * $1::bigint THEN $1::bigint + 1
	ELSE (SELECT count(*) FROM (SELECT 1 FROM chunks ORDER BY id LIMIT $1::bigint + 1) AS x)
	END`

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
// deleted documents asked for: their chunks are gone). broad tests the
// person's readers in a form the readers index cannot serve, so that the
// planner reads them from the rows it finds (see broadShare).
func filterSQL(f ingestd.Filter, next int, broad bool) (string, []any) {
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
	if f.Reader != nil {
		// NULL (unmapped) overlaps nothing: no person reads it, in
		// either form.
		if broad {
			add("coalesce(c.readers, '{}'::text[]) && $%d::text[]", readerParam(f.Reader))
		} else {
			add("c.readers && $%d::text[]", readerParam(f.Reader))
		}
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
