package pipeline_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// listSource is a source that lists its items and says the listing is
// complete.
type listSource struct{ items []ingestd.Item }

func (s *listSource) Sync(ctx context.Context, pass ingestd.Pass) error {
	pass.Total(len(s.items))
	for _, it := range s.items {
		if err := pass.Put(ctx, it); err != nil {
			return err
		}
	}
	pass.Complete()
	return nil
}

// jobLog is a Publish that records what was queued.
type jobLog struct {
	mu   sync.Mutex
	jobs []ingestd.Job
	ids  []string
	err  func(ingestd.Job) error
}

func (l *jobLog) publish(ctx context.Context, job ingestd.Job, msgID string) error {
	if l.err != nil {
		if err := l.err(job); err != nil {
			return err
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.jobs = append(l.jobs, job)
	l.ids = append(l.ids, msgID)
	return nil
}

// drain runs the queued jobs the way a worker would.
func (l *jobLog) drain(tb testing.TB, p *pipeline.Pipeline, inst ingestd.Installation) {
	tb.Helper()
	for _, j := range l.jobs {
		if j.Kind != ingestd.JobItem || j.Installation != inst.ID {
			tb.Fatalf("unexpected job %+v", j)
		}
		if _, err := p.Ingest(context.Background(), inst, *j.Item); err != nil {
			tb.Fatal(err)
		}
	}
	l.jobs, l.ids = nil, nil
}

func MustPipeline(tb testing.TB) (*pipeline.Pipeline, ingestd.Store) {
	tb.Helper()
	st := sqlitetest.MustOpen(tb)
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewLexical(64)})
	if err != nil {
		tb.Fatal(err)
	}
	return p, st
}

func item(id, text string) ingestd.Item {
	return ingestd.Item{ExternalID: id, ItemKind: "file", Title: id, Format: ingestd.FormatMarkdown, Text: text}
}

func TestSyncDispatchPublishesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	p, st := MustPipeline(t)
	inst := ingestd.Installation{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal}
	src := &listSource{items: []ingestd.Item{item("a.md", "# A\nalpha"), item("b.md", "# B\nbeta"), item("c.md", "# C\ngamma")}}
	log := &jobLog{}

	sum, err := p.SyncDispatch(ctx, inst, src, nil, log.publish)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Queued != 3 || sum.Added != 0 || !sum.Complete {
		t.Fatalf("first pass = %+v, want 3 queued and complete", sum)
	}
	if refs, _ := st.DocumentRefs(ctx, inst.ID); len(refs) != 0 {
		t.Fatalf("dispatch wrote %d documents itself", len(refs))
	}
	firstIDs := append([]string(nil), log.ids...)
	log.drain(t, p, inst)

	// The same listing again: every item is unchanged, nothing is queued.
	sum, err = p.SyncDispatch(ctx, inst, src, nil, log.publish)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Queued != 0 || sum.Unchanged != 3 {
		t.Fatalf("second pass = %+v, want 3 unchanged", sum)
	}

	// One edit, one file gone.
	src.items = []ingestd.Item{item("a.md", "# A\nalpha, edited"), item("b.md", "# B\nbeta")}
	sum, err = p.SyncDispatch(ctx, inst, src, nil, log.publish)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Queued != 1 || sum.Unchanged != 1 || sum.Deleted != 1 {
		t.Fatalf("third pass = %+v, want 1 queued, 1 unchanged, 1 deleted", sum)
	}
	if got := log.jobs[0].Item.ExternalID; got != "a.md" {
		t.Errorf("queued %q, want a.md", got)
	}
	if log.ids[0] == firstIDs[0] {
		t.Errorf("an edit reused the message id %q of the first version", log.ids[0])
	}
	c, err := st.Document(ctx, ingestd.DocumentID(inst.ID, "c.md"))
	if err != nil || c.Status != ingestd.StatusDeleted {
		t.Errorf("c.md = %+v, %v; want a tombstone", c, err)
	}
	log.drain(t, p, inst)

	// The edit reverted: a new job, not a duplicate of the first one.
	src.items[0] = item("a.md", "# A\nalpha")
	if _, err := p.SyncDispatch(ctx, inst, src, nil, log.publish); err != nil {
		t.Fatal(err)
	}
	if len(log.ids) != 1 || log.ids[0] == firstIDs[0] {
		t.Errorf("revert queued %v; want one job with a fresh id (first was %q)", log.ids, firstIDs[0])
	}
}

func TestSyncDispatchRedeliveredPassRepublishesSameIDs(t *testing.T) {
	ctx := context.Background()
	p, _ := MustPipeline(t)
	inst := ingestd.Installation{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal}
	src := &listSource{items: []ingestd.Item{item("a.md", "alpha"), item("b.md", "beta")}}
	l1, l2 := &jobLog{}, &jobLog{}
	if _, err := p.SyncDispatch(ctx, inst, src, nil, l1.publish); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SyncDispatch(ctx, inst, src, nil, l2.publish); err != nil {
		t.Fatal(err)
	}
	if len(l1.ids) != 2 || len(l2.ids) != 2 || l1.ids[0] != l2.ids[0] || l1.ids[1] != l2.ids[1] {
		t.Errorf("ids %v then %v; a repeated pass must reuse them so the queue drops it", l1.ids, l2.ids)
	}
}

func TestSyncDispatchFallbacksAndFailures(t *testing.T) {
	ctx := context.Background()
	inst := ingestd.Installation{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal}
	down := errors.New("queue down")
	tests := []struct {
		name      string
		items     []ingestd.Item
		pubErr    error
		wantErr   error
		wantSum   pipeline.Summary
		wantStore int
	}{
		{
			name:      "too large is ingested inline",
			items:     []ingestd.Item{item("big.md", "huge")},
			pubErr:    ingestd.Errorf(ingestd.ETOOLARGE, "too big"),
			wantSum:   pipeline.Summary{Added: 1},
			wantStore: 1,
		},
		{
			name:    "publish failure stops the pass",
			items:   []ingestd.Item{item("a.md", "alpha"), item("b.md", "beta")},
			pubErr:  down,
			wantErr: down,
			wantSum: pipeline.Summary{Failed: 1},
		},
		{
			name:    "item without id fails alone",
			items:   []ingestd.Item{item("", "nameless"), item("a.md", "alpha")},
			wantSum: pipeline.Summary{Failed: 1, Queued: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, st := MustPipeline(t)
			log := &jobLog{err: func(ingestd.Job) error { return tt.pubErr }}
			sum, err := p.SyncDispatch(ctx, inst, &listSource{items: tt.items}, nil, log.publish)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if sum.Added != tt.wantSum.Added || sum.Failed != tt.wantSum.Failed || sum.Queued != tt.wantSum.Queued {
				t.Errorf("summary = %+v, want %+v", sum, tt.wantSum)
			}
			refs, err := st.DocumentRefs(ctx, inst.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(refs); got != tt.wantStore {
				t.Errorf("store holds %d documents, want %d", got, tt.wantStore)
			}
		})
	}
}

func TestUnchanged(t *testing.T) {
	ctx := context.Background()
	p, st := MustPipeline(t)
	inst := ingestd.Installation{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal}
	it := item("m1", "hello")
	if u, err := p.Unchanged(ctx, inst, it); err != nil || u {
		t.Fatalf("before ingest: %v, %v; want changed", u, err)
	}
	if _, err := p.Ingest(ctx, inst, it); err != nil {
		t.Fatal(err)
	}
	if u, err := p.Unchanged(ctx, inst, it); err != nil || !u {
		t.Errorf("after ingest: %v, %v; want unchanged", u, err)
	}
	rejected := it
	rejected.Status = ingestd.StatusRejected
	if u, _ := p.Unchanged(ctx, inst, rejected); u {
		t.Error("a status change reads as unchanged")
	}
	if err := st.DeleteDocument(ctx, ingestd.DocumentID(inst.ID, "m1")); err != nil {
		t.Fatal(err)
	}
	if u, _ := p.Unchanged(ctx, inst, it); u {
		t.Error("a tombstone reads as unchanged")
	}
	if _, err := p.Unchanged(ctx, inst, item(" ", "x")); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Errorf("no external id: %v, want EINVALID", err)
	}
}
