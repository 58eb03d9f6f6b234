// The tier view: each document's tier in force, judged once per answer.

package retrieval

import (
	"context"
	"fmt"
	"sync"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

// tierView is one answer's view of tiers in force: the first stage that
// asks about a document (a ranking's tier filter, grounding, the
// exclusion count, expansion, the rejected block or the verdict) reads
// its facts with one TierFacts call and Declarations judges them; every
// later stage, and the verdict, sees that same tier. A Retrieve call and
// its trusted view share one view, so a document is read once per
// request whichever stages and blocks it reaches. A document the store
// does not hold counts as untrusted-external.
//
// The view is a snapshot: a document re-stamped by a sync while an answer
// is being built keeps, in that answer, the tier the answer first read —
// in its blocks, its served tiers and its verdict alike — and the next
// answer reads the new one. The declaration in force never changes in a
// running Service.
//
// Safe for concurrent use: stages that run at once (the two rankers, the
// rejected block beside primary) asking for the same document wait for
// one read instead of making two.
type tierView struct {
	decl  *provenance.Declarations
	store provenance.FactReader

	mu   sync.Mutex // held only to look up or add entries, never during a read
	docs map[string]*judged
}

// judged is one document's entry in a tierView: ready is closed once tier
// (or err, when its read failed) is set.
type judged struct {
	ready chan struct{}
	tier  ingestd.Tier
	err   error
}

func newTierView(decl *provenance.Declarations, store provenance.FactReader) *tierView {
	return &tierView{decl: decl, store: store, docs: map[string]*judged{}}
}

// of returns the tier in force of each document of ids, reading the facts
// of those no stage has asked about yet and waiting for those another
// stage is reading.
func (v *tierView) of(ctx context.Context, ids []string) (map[string]ingestd.Tier, error) {
	v.mu.Lock()
	var need []string
	mine := map[string]*judged{}
	for _, id := range ids {
		if _, ok := v.docs[id]; !ok {
			j := &judged{ready: make(chan struct{})}
			v.docs[id], mine[id] = j, j
			need = append(need, id)
		}
	}
	entries := make(map[string]*judged, len(ids))
	for _, id := range ids {
		entries[id] = v.docs[id]
	}
	v.mu.Unlock()
	if len(need) > 0 {
		read, err := v.decl.Tiers(ctx, v.store, need)
		if err != nil {
			err = fmt.Errorf("read tiers: %w", err)
		}
		for id, j := range mine {
			t, ok := read[id]
			if !ok {
				t = ingestd.TierUntrustedExternal
			}
			j.tier, j.err = t, err
			close(j.ready)
		}
		if err != nil {
			v.forget(mine) // a later stage reads them again
			return nil, err
		}
	}
	out := make(map[string]ingestd.Tier, len(ids))
	for id, j := range entries {
		select {
		case <-j.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if j.err != nil {
			return nil, j.err
		}
		out[id] = j.tier
	}
	return out, nil
}

// forget drops entries whose read failed.
func (v *tierView) forget(entries map[string]*judged) {
	v.mu.Lock()
	for id, j := range entries {
		if v.docs[id] == j {
			delete(v.docs, id)
		}
	}
	v.mu.Unlock()
}

// inForce returns the tier in force of each document through the
// answer's tier view.
func (a *answer) inForce(ctx context.Context, ids []string) (map[string]ingestd.Tier, error) {
	return a.tiers.of(ctx, ids)
}
