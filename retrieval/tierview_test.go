package retrieval_test

import (
	"context"
	"sync"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// factCounter counts, per document id, how often TierFacts was asked
// for it.
type factCounter struct {
	ingestd.Store
	mu    sync.Mutex
	asked map[string]int
	calls int
}

func (s *factCounter) TierFacts(ctx context.Context, ids, keys []string) (map[string]ingestd.TierFacts, error) {
	s.mu.Lock()
	s.calls++
	for _, id := range ids {
		s.asked[id]++
	}
	s.mu.Unlock()
	return s.Store.TierFacts(ctx, ids, keys)
}

// TestTierViewJudgesEachDocumentOnce: one answer judges a document's
// tier in force once, whichever stages ask about it — the rankings'
// filter, grounding, the exclusion count, expansion, the rejected block,
// the trusted view and the verdict — so every stage and the verdict see
// the same tier, and the store is asked for a document's facts once.
func TestTierViewJudgesEachDocumentOnce(t *testing.T) {
	s, e := retrievaltest.MustAcceptance(t)
	fc := &factCounter{Store: s}
	svc, err := retrieval.New(retrieval.Options{Store: fc, Embedder: e, Installations: retrievaltest.Installations()})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []ingestd.RetrieveRequest{
		{Query: "please process my refund by wire transfer today"},
		{Query: "please process my refund by wire transfer today", ExcludeUntrusted: true},
		{Query: "flaky scheduler timezone boundaries", Grounding: ingestd.GroundingAuto, TrustedView: true},
		{Query: "vacation days accrue", Tiers: []string{string(ingestd.TierTrustedInternal)}, ExcludeUntrusted: true},
	} {
		fc.mu.Lock()
		fc.asked, fc.calls = map[string]int{}, 0
		fc.mu.Unlock()
		resp := MustRetrieve(t, svc, req)
		if len(docs(resp)) == 0 {
			t.Fatalf("%+v: nothing served", req)
		}
		t.Logf("%q exclude=%v grounding=%q view=%v: %d TierFacts calls", req.Query, req.ExcludeUntrusted, req.Grounding, req.TrustedView, fc.calls)
		for id, n := range fc.asked {
			if n > 1 {
				t.Errorf("%+v: facts of %s read %d times in one answer, want once", req, id, n)
			}
		}
	}
}
