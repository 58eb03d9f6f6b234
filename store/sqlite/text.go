package sqlite

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ingestd/ingestd"
)

// maxQueryTerms bounds how many distinct words of a query are searched.
const maxQueryTerms = 12

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

// queryTerms splits a query into words the way the text index's tokenizer
// (a port of SQLite's porter tokenizer) splits text (runs of ASCII letters
// and digits and of any non-ASCII rune, ASCII folded to lower case), drops
// stopwords unless nothing else is left, removes repeats and keeps at most
// maxQueryTerms. Every ASCII punctuation mark, quotes included, separates
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

// SearchText ranks chunks by BM25 over their text, title and heading path,
// times the share of the query's words a chunk holds (see package
// store/sqlite/internal/textindex for the formula). The query is split into
// words (queryTerms); nothing in it is syntax. Returns EINVALID for limit <
// 1.
//
// It answers from the in-memory text index, loaded with the vector index
// on the first search or by Warm (from the snapshot beside the file, or
// from the chunks' text) and kept in step with the file by the same
// catch-up. It returns the exact top limit inside the filter, matching
// number words to digits and synonyms to each other as the lexical
// embedder does (internal/lexnorm).
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
	// The index breaks ties by seq, the order rows were written in. Ask
	// for one more row than wanted and, while the last ties with the
	// limit-th, for twice as many: then every row tying at the limit is
	// here, and ingestd.SortHits keeps those of lowest chunk id.
	for n := limit + 1; ; n *= 2 {
		rows := s.vec.searchText(terms, f, n)
		if len(rows) < n || rows[n-1].hit.Score < rows[limit-1].hit.Score {
			hits, err := s.withChunkIDs(ctx, rows)
			if err != nil {
				return nil, err
			}
			ingestd.SortHits(hits)
			return hits[:min(limit, len(hits))], nil
		}
	}
}

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

// seqsJSON writes seqs as a JSON array, the way the queries take them.
func seqsJSON(seqs []int64) string {
	b := make([]byte, 0, 8*len(seqs)+2)
	b = append(b, '[')
	for i, seq := range seqs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, seq, 10)
	}
	return string(append(b, ']'))
}
