package postgres

import (
	"context"
	"sync"
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

// readerStats is the planner's most common readers of chunks and their
// frequencies, read from pg_stats and kept for readerStatsFor.
type readerStats struct {
	mu    sync.Mutex
	until time.Time
	freq  map[string]float64
}

// broad reports whether the person's principals read at least broadShare
// of the chunks by the statistics. It never fails a search: statistics
// that cannot be read count as none (the index form).
func (s *Store) broad(ctx context.Context, r *ingestd.Reader) bool {
	if r == nil {
		return false
	}
	freq := s.readers.load(ctx, s)
	share := 0.0
	for _, p := range r.Principals {
		share += freq[string(p)]
	}
	return share >= broadShare
}

// load returns the statistics, read again once they are readerStatsFor
// old. One caller reads them, outside the lock: the others go on with
// the ones before (none before the first read).
func (st *readerStats) load(ctx context.Context, s *Store) map[string]float64 {
	st.mu.Lock()
	freq := st.freq
	if time.Now().Before(st.until) { // the cache's age, not a stored time
		st.mu.Unlock()
		return freq
	}
	st.until = time.Now().Add(readerStatsFor)
	st.mu.Unlock()

	var elems []string
	var freqs []float64
	err := s.pool.QueryRow(ctx, `SELECT coalesce(most_common_elems::text::text[], '{}'), coalesce(most_common_elem_freqs, '{}')
		FROM pg_stats
		WHERE schemaname = current_schema() AND tablename = 'chunks' AND attname = 'readers' AND NOT inherited
		LIMIT 1`).Scan(&elems, &freqs)
	if err != nil {
		return freq // no statistics yet (before ANALYZE), or no answer: the ones before
	}
	fresh := make(map[string]float64, len(elems))
	for i, e := range elems {
		if i < len(freqs) {
			fresh[e] = freqs[i]
		}
	}
	st.mu.Lock()
	st.freq = fresh
	st.mu.Unlock()
	return fresh
}
