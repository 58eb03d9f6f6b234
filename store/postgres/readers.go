package postgres

import (
	"context"
	"time"

	"github.com/ingestd/ingestd"
)

// broadShare is the share of chunks a person's principals must be
// readers of, by the planner's statistics, for the full-text passes to
// test their readers row by row instead of through the readers index
// (all but the pass over common words, whose matches are many: see
// textPasses).
//
// Through the index, each pass intersects the search index's bitmap with
// a bitmap of every chunk the person may read: for a person who reads a
// tenth of a 100k-chunk corpus that is ~10k entries, 1–2 ms a pass and up
// to four passes a search, growing with the corpus, while the words'
// matches the passes rank are far fewer (a pass keeps at most $3). Row by
// row, a pass reads the matches' rows, which it reads anyway, and keeps
// its readers' ones: cheaper unless the person reads so little that the
// pass must read many matches to find $3 readable ones. Below broadShare
// (and for a principal the statistics do not list, which ANALYZE found
// rarer than its most common elements), the index stays.
const broadShare = 0.02

// readerStatsFor is how long the readers' statistics are kept before
// they are read again.
const readerStatsFor = time.Minute

// broad reports whether the person's principals read at least broadShare
// of the chunks by the statistics. It never fails a search: statistics
// that cannot be read count as none (the index form).
func (s *Store) broad(ctx context.Context, r *ingestd.Reader) bool {
	if r == nil {
		return false
	}
	freq := s.readers.load(readerStatsFor, func() (map[string]float64, error) { return readReaderStats(ctx, s) })
	share := 0.0
	for _, p := range r.Principals {
		share += freq[string(p)]
	}
	return share >= broadShare
}

// readReaderStats reads the planner's most common readers of chunks and
// their frequencies from pg_stats; an error when there are none yet
// (before ANALYZE) or no answer.
func readReaderStats(ctx context.Context, s *Store) (map[string]float64, error) {
	var elems []string
	var freqs []float64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(most_common_elems::text::text[], '{}'), coalesce(most_common_elem_freqs, '{}')
		FROM pg_stats
		WHERE schemaname = current_schema() AND tablename = 'chunks' AND attname = 'readers' AND NOT inherited
		LIMIT 1`).Scan(&elems, &freqs)
	if err != nil {
		return nil, err
	}
	fresh := make(map[string]float64, len(elems))
	for i, e := range elems {
		if i < len(freqs) {
			fresh[e] = freqs[i]
		}
	}
	return fresh, nil
}
