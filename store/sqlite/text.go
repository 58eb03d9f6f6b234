package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ingestd/ingestd"
)

// maxQueryTerms bounds how many distinct words of a query are searched.
const maxQueryTerms = 12

// BM25 parameters and the weight of each chunks_fts column (text, title,
// heading): a word in the chunk's own text counts most.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

var columnWeights = [...]float64{1.0, 0.5, 0.5}

// bm25 scores one FTS4 row from matchinfo(chunks_fts, 'pcnalx'): for each
// phrase and column, idf * tf*(k1+1) / (tf + k1*(1-b+b*len/avglen)),
// weighted by column, times the share of phrases the row matches. The idf
// is Lucene's, ln(1 + (N-df+0.5)/(df+0.5)), so it stays positive for words
// in most rows.
func bm25(mi []byte) float64 {
	if len(mi) < 12 {
		return 0
	}
	u := func(i int) float64 { return float64(binary.LittleEndian.Uint32(mi[4*i:])) }
	p, c := int(u(0)), int(u(1))
	if len(mi) < 4*(3+2*c+3*c*p) {
		return 0
	}
	n := u(2)
	avg, lens, x := 3, 3+c, 3+2*c
	score, matched := 0.0, 0
	for i := 0; i < p; i++ {
		hit := false
		for j := 0; j < c; j++ {
			base := x + 3*(i*c+j)
			tf := u(base)
			if tf == 0 {
				continue
			}
			df := u(base + 2)
			idf := math.Log(1 + (n-df+0.5)/(df+0.5))
			al := u(avg + j)
			if al <= 0 {
				al = 1
			}
			l := u(lens + j)
			w := 1.0
			if j < len(columnWeights) {
				w = columnWeights[j]
			}
			score += w * idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*l/al))
			hit = true
		}
		if hit {
			matched++
		}
	}
	// Coordination: a chunk with more of the query's words ranks above one
	// that repeats fewer.
	return score * float64(matched) / float64(p)
}

// stopwords are too common to help ranking; a query of nothing else still
// searches them.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does for from had has
		have he her his how i if in into is it its me my no not of on or our she so than that the their them
		then there these they this those to was we were what when where which who whom why will with would
		you your`) {
		stopwords[w] = true
	}
}

// queryTerms splits a query into words the way the FTS4 porter tokenizer
// splits text (runs of ASCII letters and digits and of any non-ASCII rune,
// ASCII folded to lower case), drops stopwords unless nothing else is
// left, removes repeats and keeps at most maxQueryTerms. Every ASCII
// punctuation mark, quotes and FTS operators' symbols included, separates
// words, so no term can carry syntax.
func queryTerms(q string) []string {
	words := strings.FieldsFunc(q, func(r rune) bool {
		return r < utf8.RuneSelf && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
	for i, w := range words {
		words[i] = strings.Map(func(r rune) rune {
			if 'A' <= r && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return r
		}, w)
	}
	seen := map[string]bool{}
	var terms, stops []string
	for _, w := range words {
		if seen[w] {
			continue
		}
		seen[w] = true
		if stopwords[w] {
			stops = append(stops, w)
		} else {
			terms = append(terms, w)
		}
	}
	if len(terms) == 0 {
		terms = stops
	}
	if len(terms) > maxQueryTerms {
		terms = terms[:maxQueryTerms]
	}
	return terms
}

// matchExpr joins quoted terms with AND (a space) or OR. Terms hold only
// letters and digits, so quoting cannot be escaped.
func matchExpr(terms []string, or bool) string {
	sep := " "
	if or {
		sep = " OR "
	}
	q := make([]string, len(terms))
	for i, t := range terms {
		q[i] = `"` + t + `"`
	}
	return strings.Join(q, sep)
}

// SearchText ranks chunks by BM25 over their text, title and heading path,
// times the share of the query's words a chunk holds (bm25 above). The
// query is split into words (queryTerms); nothing in it is syntax. Returns
// EINVALID for limit < 1.
//
// It answers from the in-memory text index (package store/sqlite/internal/textindex),
// loaded with the vector index on the first search or by Warm and kept in
// step with the file by the same catch-up. It returns the exact top limit
// inside the filter with the scores the FTS4 ranker computes, except that
// it also matches number words to digits and synonyms to each other as
// the lexical embedder does (internal/lexnorm); the FTS4 table stays the
// durable index (searchTextFTS ranks from it).
func (s *Store) SearchText(ctx context.Context, query string, f ingestd.Filter, limit int) ([]ingestd.Hit, error) {
	if limit <= 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d: must be positive", limit)
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	if err := s.vec.sync(ctx); err != nil {
		return nil, err
	}
	return s.withChunkIDs(ctx, s.vec.searchText(terms, f, limit))
}

// searchTextFTS is SearchText answered by FTS4: the path before the
// in-memory text index existed, kept as the baseline its results and
// speed are measured against.
//
// The work is bounded: the rarest words of the query (as many as match at
// most scoreBudget chunks together) choose the candidates, which are then
// scored with every word; common words only add to the scores of chunks
// that hold a rare one. A chunk that holds only common words can still be
// found when the rare words find too few.
func (s *Store) searchTextFTS(ctx context.Context, query string, f ingestd.Filter, limit int) ([]ingestd.Hit, error) {
	if limit <= 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d: must be positive", limit)
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil, nil
	}
	count, err := s.stmt(ctx, countSQL)
	if err != nil {
		return nil, err
	}
	dfs, err := s.text.docFreqs(ctx, count, terms)
	if err != nil {
		return nil, err
	}
	// Rarest first; words no chunk holds add nothing.
	var live []string
	for _, t := range terms {
		if dfs[t] > 0 {
			live = append(live, t)
		}
	}
	if len(live) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(live, func(a, b string) int { return cmp.Compare(dfs[a], dfs[b]) })
	essential, sum := 1, dfs[live[0]]
	for essential < len(live) && sum+dfs[live[essential]] <= scoreBudget {
		sum += dfs[live[essential]]
		essential++
	}
	full := matchExpr(live, true)
	want := max(limit*candidateFactor, minCandidates)

	// truncated records whether matching chunks were left unranked, so a
	// filter that keeps too few of the ranked ones must look further.
	var (
		cands     []scoredRow
		truncated bool
	)
	rank := func(expr string, only []scoredRow) error {
		n := want
		if only != nil {
			n = len(only)
		}
		out, err := s.rankFTS(ctx, expr, n, only)
		if only == nil && len(out) >= n {
			truncated = true
		}
		cands = out
		return err
	}
	switch {
	case essential == len(live):
		// Every word is rare enough to score all its chunks.
		err = rank(full, nil)
	case sum > scoreBudget && len(live) > 1:
		// Even the rarest word is common: chunks holding every word first,
		// then, if they are too few, chunks holding the rarest.
		if err = rank(matchExpr(live, false), nil); err != nil {
			return nil, err
		}
		if len(cands) >= limit {
			truncated = true
			break
		}
		and := cands
		if err = rank(matchExpr(live[:1], true), nil); err != nil {
			return nil, err
		}
		err = rank(full, mergeRows(and, cands))
	default:
		// The rare words choose, every word scores.
		if err = rank(matchExpr(live[:essential], true), nil); err != nil {
			return nil, err
		}
		err = rank(full, cands)
	}
	if err != nil {
		return nil, err
	}
	if err := s.vec.sync(ctx); err != nil {
		return nil, err
	}
	slices.SortStableFunc(cands, func(a, b scoredRow) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.seq, b.seq))
	})
	hits, err := s.withChunkIDs(ctx, s.vec.filterRanked(cands, f, limit))
	if err != nil {
		return nil, err
	}
	if len(hits) < limit && truncated {
		// The filter dropped too many candidates: rank inside the filter.
		return s.searchTextFiltered(ctx, full, f, limit)
	}
	return hits, nil
}

// Bounds on the work of one text search.
const (
	// scoreBudget is about how many chunks the rare words of a query may
	// match together before common words stop choosing candidates.
	scoreBudget = 2000
	// candidateFactor * limit (at least minCandidates) chunks are ranked
	// before the filter is applied.
	candidateFactor = 8
	minCandidates   = 64
)

type scoredRow struct {
	seq   int64
	score float64
}

func mergeRows(a, b []scoredRow) []scoredRow {
	seen := make(map[int64]bool, len(a))
	for _, r := range a {
		seen[r.seq] = true
	}
	for _, r := range b {
		if !seen[r.seq] {
			a = append(a, r)
		}
	}
	return a
}

// Text search statements. Candidate lists travel as JSON arrays of seqs,
// so each statement has a fixed text and is prepared once per connection.
const (
	rankSQL = `SELECT docid, ingestd_bm25(matchinfo(chunks_fts, 'pcnalx')) AS score FROM chunks_fts
		WHERE chunks_fts MATCH ? ORDER BY score DESC, docid LIMIT ?`
	rescoreSQL = `SELECT docid, ingestd_bm25(matchinfo(chunks_fts, 'pcnalx')) AS score FROM chunks_fts
		WHERE chunks_fts MATCH ? AND docid IN (SELECT value FROM json_each(?))`
	countSQL = `SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?`
)

// stmt returns the prepared statement for a fixed query text.
func (s *Store) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st := s.stmts[query]; st != nil {
		return st, nil
	}
	st, err := s.read.PrepareContext(ctx, query)
	if err != nil {
		return nil, unavailable("prepare %s", query, err)
	}
	if s.stmts == nil {
		s.stmts = map[string]*sql.Stmt{}
	}
	s.stmts[query] = st
	return st, nil
}

func seqsJSON(rows []scoredRow) string {
	b := make([]byte, 0, 8*len(rows)+2)
	b = append(b, '[')
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, r.seq, 10)
	}
	return string(append(b, ']'))
}

// rankFTS returns the best limit chunks matching expr by bm25, best first.
// With only non-nil, it scores just those chunks (by docid), in any order.
func (s *Store) rankFTS(ctx context.Context, expr string, limit int, only []scoredRow) ([]scoredRow, error) {
	var (
		rows *sql.Rows
		err  error
	)
	if only != nil {
		if len(only) == 0 {
			return nil, nil
		}
		st, perr := s.stmt(ctx, rescoreSQL)
		if perr != nil {
			return nil, perr
		}
		rows, err = st.QueryContext(ctx, expr, seqsJSON(only))
	} else {
		st, perr := s.stmt(ctx, rankSQL)
		if perr != nil {
			return nil, perr
		}
		rows, err = st.QueryContext(ctx, expr, limit)
	}
	if err != nil {
		return nil, unavailable("search text %s", expr, err)
	}
	defer rows.Close()
	out := make([]scoredRow, 0, limit)
	for rows.Next() {
		var r scoredRow
		if err := rows.Scan(&r.seq, &r.score); err != nil {
			return nil, fmt.Errorf("search text: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// searchTextFiltered ranks inside the filter: every matching chunk is
// joined with its document. It is the slow path, for filters that keep few
// of the best matches.
func (s *Store) searchTextFiltered(ctx context.Context, match string, f ingestd.Filter, limit int) ([]ingestd.Hit, error) {
	where, args := filterSQL(f)
	q := `SELECT c.id, c.document_id, ingestd_bm25(matchinfo(chunks_fts, 'pcnalx')) AS score
		FROM chunks_fts JOIN chunks c ON c.seq = chunks_fts.docid JOIN documents d ON d.id = c.document_id
		WHERE chunks_fts MATCH ? AND ` + where + ` ORDER BY score DESC, c.seq LIMIT ?`
	all := append([]any{match}, args...)
	all = append(all, limit)
	rows, err := s.read.QueryContext(ctx, q, all...)
	if err != nil {
		return nil, unavailable("search text %q", match, err)
	}
	defer rows.Close()
	var hits []ingestd.Hit
	for rows.Next() {
		var h ingestd.Hit
		if err := rows.Scan(&h.ChunkID, &h.DocumentID, &h.Score); err != nil {
			return nil, fmt.Errorf("search text: %w", err)
		}
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// termStats caches how many chunks hold each word. The counts only steer
// which words choose candidates, so a count a little out of date costs
// speed, never correctness; entries live for dfTTL.
type termStats struct {
	mu      sync.Mutex
	now     func() time.Time
	entries map[string]dfEntry
}

type dfEntry struct {
	n  int
	at time.Time
}

const (
	dfTTL        = time.Minute
	dfMaxEntries = 20000
)

func (ts *termStats) docFreqs(ctx context.Context, count *sql.Stmt, terms []string) (map[string]int, error) {
	out := make(map[string]int, len(terms))
	now := ts.now()
	var missing []string
	ts.mu.Lock()
	if ts.entries == nil {
		ts.entries = map[string]dfEntry{}
	}
	for _, t := range terms {
		if e, ok := ts.entries[t]; ok && now.Sub(e.at) < dfTTL {
			out[t] = e.n
		} else {
			missing = append(missing, t)
		}
	}
	ts.mu.Unlock()
	for _, t := range missing {
		var n int
		if err := count.QueryRowContext(ctx, matchExpr([]string{t}, false)).Scan(&n); err != nil {
			return nil, unavailable("count chunks with %q", t, err)
		}
		out[t] = n
	}
	if len(missing) > 0 {
		ts.mu.Lock()
		if len(ts.entries)+len(missing) > dfMaxEntries {
			clear(ts.entries)
		}
		for _, t := range missing {
			ts.entries[t] = dfEntry{n: out[t], at: now}
		}
		ts.mu.Unlock()
	}
	return out, nil
}

// filterSQL is the condition on documents d that f asks for.
func filterSQL(f ingestd.Filter) (string, []any) {
	var conds []string
	var args []any
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []ingestd.Status{ingestd.StatusActive}
	}
	var keep []ingestd.Status
	for _, st := range statuses {
		if st != ingestd.StatusDeleted {
			keep = append(keep, st)
		}
	}
	if len(keep) == 0 {
		return "0", nil
	}
	conds = append(conds, "d.status IN ("+placeholders(len(keep))+")")
	args = append(args, anys(keep)...)
	if len(f.Installations) > 0 {
		conds = append(conds, "d.installation IN ("+placeholders(len(f.Installations))+")")
		args = append(args, anys(f.Installations)...)
	}
	if len(f.SourceKinds) > 0 {
		conds = append(conds, "d.source_kind IN ("+placeholders(len(f.SourceKinds))+")")
		args = append(args, anys(f.SourceKinds)...)
	}
	if len(f.Tiers) > 0 {
		var named []ingestd.Tier
		undeclared := false
		for _, t := range f.Tiers {
			if t == "" {
				undeclared = true
			} else {
				named = append(named, t)
			}
		}
		var or []string
		if undeclared {
			or = append(or, "d.tier IS NULL OR d.tier = ''")
		}
		if len(named) > 0 {
			or = append(or, "d.tier IN ("+placeholders(len(named))+")")
			args = append(args, anys(named)...)
		}
		conds = append(conds, "("+strings.Join(or, " OR ")+")")
	}
	return strings.Join(conds, " AND "), args
}
