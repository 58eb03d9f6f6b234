package retrieval_test

import (
	"testing"

	"github.com/ingestd/ingestd"
)

// TestServedScoresAreNotNegative: an expanded chunk comes by its
// relation, not its similarity, and a neighbour can point away from the
// query; its score is shown clamped at 0 (no similarity), never as a
// negative number a reader takes for a ranking.
func TestServedScoresAreNotNegative(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	expanded := 0
	for _, q := range []string{"refund by wire transfer", "escalation ladder duty manager", "deploy runbook kubernetes rollout",
		"vacation days accrue", "database migration plan orders", "flaky scheduler timezone boundaries", "loyalty points", "printer setup"} {
		for _, topK := range []int{1, 2, 8} {
			resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: q, TopK: topK})
			expanded += len(resp.Expanded)
			for _, b := range [][]ingestd.ServedChunk{resp.Primary, resp.Expanded, resp.Rejected} {
				for _, c := range b {
					if c.Score < 0 {
						t.Errorf("%q top_k %d: %s (via %q) scored %v, want at least 0", q, topK, c.ChunkID, c.Via, c.Score)
					}
				}
			}
		}
	}
	if expanded == 0 {
		t.Fatal("no query expanded: the test checks nothing")
	}
}
