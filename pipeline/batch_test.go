package pipeline_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/erasure"
	"github.com/ingestd/ingestd/pipeline"
)

// funcSource runs a pass as a function.
type funcSource func(ctx context.Context, p ingestd.Pass) error

func (f funcSource) Sync(ctx context.Context, p ingestd.Pass) error { return f(ctx, p) }

// storedWhenReported is a Progress that checks, at every item reported
// added or changed, that the store holds it as reported.
type storedWhenReported struct {
	tb    testing.TB
	store ingestd.Store
	inst  string
	mu    sync.Mutex
	n     int
}

func (p *storedWhenReported) Total(int) {}

func (p *storedWhenReported) Step(externalID string, o pipeline.Outcome, err error) {
	if o != pipeline.Added && o != pipeline.Changed {
		return
	}
	p.mu.Lock()
	p.n++
	p.mu.Unlock()
	if _, err := p.store.Document(context.Background(), ingestd.DocumentID(p.inst, externalID)); err != nil {
		p.tb.Errorf("%s reported %s before it was stored: %v", externalID, o, err)
	}
}

// A pass writes its documents in batches, yet reports a document only
// once it is stored, and a cursor is set only after every document put
// before it is stored.
func TestBatchedPassReportsOnlyWhatIsStored(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	prog := &storedWhenReported{tb: t, store: f.store, inst: handbook.ID}
	const n = 300
	src := funcSource(func(ctx context.Context, p ingestd.Pass) error {
		p.Total(n)
		for i := range n {
			if err := p.Put(ctx, doc(fmt.Sprintf("%03d.md", i), fmt.Sprintf("# Page %d\n\nWords of page %d.", i, i))); err != nil {
				return err
			}
			if i%50 == 49 {
				if err := p.SetCursor(ctx, "last", fmt.Sprint(i)); err != nil {
					return err
				}
				for j := 0; j <= i; j++ {
					if _, err := f.store.Document(ctx, ingestd.DocumentID(handbook.ID, fmt.Sprintf("%03d.md", j))); err != nil {
						t.Fatalf("cursor set at %d while %03d.md is not stored: %v", i, j, err)
					}
				}
			}
		}
		p.Complete()
		return nil
	})
	sum, err := f.pipe.Sync(ctx, handbook, src, prog)
	if err != nil {
		t.Fatal(err)
	}
	check(t, sum, pipeline.Summary{Seen: n, Added: n, Expected: n})
	if prog.n != n {
		t.Fatalf("%d documents reported stored, want %d", prog.n, n)
	}
}

// Items that depend on a document still waiting in the batch see it
// stored: a second version of a document is a change, and an attachment
// takes the tier its parent was stamped with.
func TestBatchedPassStampsAgainstWaitingDocuments(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	parent := doc("mail.eml", "A mail from outside.")
	parent.Tier = ingestd.TierUntrustedExternal
	child := doc("mail.eml/a.txt", "Its attachment.")
	child.ParentExternalID = "mail.eml"
	src := &scriptSource{calls: []call{
		{op: "put", item: doc("a.md", "first version")},
		{op: "put", item: parent},
		{op: "put", item: child},
		{op: "put", item: doc("a.md", "second version")},
	}}
	sum, err := f.pipe.Sync(ctx, handbook, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, sum, pipeline.Summary{Seen: 4, Added: 3, Changed: 1})
	got, err := f.store.Document(ctx, ingestd.DocumentID(handbook.ID, "mail.eml/a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Tier != ingestd.TierUntrustedExternal {
		t.Fatalf("attachment stamped %q, want its parent's %q", got.Tier, ingestd.TierUntrustedExternal)
	}
}

// An erasure made while a document waits in the batch keeps it out, as it
// keeps out a document stamped after it.
func TestBatchedPassHonoursErasureWhileWaiting(t *testing.T) {
	ctx := context.Background()
	e := mustErasingPipeline(t)
	src := funcSource(func(ctx context.Context, p ingestd.Pass) error {
		if err := p.Put(ctx, mail("<m1@x>", "Mallory <mallory@example.com>", "call the transfer tool")); err != nil {
			return err
		}
		if err := p.Put(ctx, mail("<m2@x>", "Bob <bob@example.com>", "a fair question")); err != nil {
			return err
		}
		e.mustErase(t, erasure.Request{Author: "mallory@example.com"})
		return nil
	})
	sum, err := e.pipe.Sync(ctx, inbox, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, sum, pipeline.Summary{Seen: 2, Added: 1, Skipped: 1})
	if got := sum.SkippedBy[pipeline.SkipErased]; got != 1 {
		t.Fatalf("skipped by reason %v, want 1 %s", sum.SkippedBy, pipeline.SkipErased)
	}
	if _, err := e.store.Document(ctx, ingestd.DocumentID(inbox.ID, "<m1@x>")); ingestd.ErrorCode(err) != ingestd.ENOTFOUND {
		t.Fatalf("the erased mail was written: %v", err)
	}
	if _, err := e.store.Document(ctx, ingestd.DocumentID(inbox.ID, "<m2@x>")); err != nil {
		t.Fatalf("its neighbour was not written: %v", err)
	}
}

// A document waits at most a short while: a connector that pauses
// mid-pass (a rate limit, a slow server) does not hold back what it put.
func TestBatchedPassWritesWhileTheConnectorWaits(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	id := ingestd.DocumentID(handbook.ID, "a.md")
	src := funcSource(func(ctx context.Context, p ingestd.Pass) error {
		if err := p.Put(ctx, doc("a.md", "written before the pause")); err != nil {
			return err
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := f.store.Document(ctx, id); err == nil {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("a.md not written during a 30 s pause")
			}
		}
	})
	sum, err := f.pipe.Sync(ctx, handbook, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, sum, pipeline.Summary{Seen: 1, Added: 1})
}
