package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ingestd/ingestd"
)

// A sync pass (Sync) writes its documents in batches. Each item is
// stamped, chunked, fenced and embedded on its own, in the order the
// connector puts them, as Ingest does; the finished document then waits
// in the pass's batch, which the store writes in one call
// (DocumentStore.PutDocuments: one transaction on SQLite, each document
// in its own savepoint, so one refused document leaves its neighbours).
// The batch is written once it holds batchDocs documents or its oldest
// has waited batchWait, and before anything that must find its documents
// stored: a cursor the connector sets, a deletion, an item of a waiting
// document or of its parent, the reconciliation and the end of the pass.
//
// An item is counted, shown as progress and handed to OnStored only once
// its batch committed, and a connector's cursor is written only after
// every document put before it: a pass killed mid-way has reported and
// passed nothing it had not written, and the next pass redoes the rest.
const (
	batchDocs = 128
	batchWait = time.Second
)

// batch holds a pass's documents waiting to be written. Safe for
// concurrent use.
type batch struct {
	ps *pass

	mu      sync.Mutex
	waiting []batched
	ids     map[string]bool // document ids waiting
	ctx     context.Context // the last put's, for a flush the timer runs
	timer   *time.Timer
	fault   error // a flush by the timer that stopped the pass, returned by the next call
	closed  bool
}

// batched is one document waiting, with what the erasure gate asks of its
// item.
type batched struct {
	item ingestd.Item // ExternalID, ParentExternalID and Author only
	w    *write
}

func newBatch(ps *pass) *batch {
	return &batch{ps: ps, ids: map[string]bool{}}
}

// add queues w, the document of item, and writes the batch when it is
// full. It returns a fault that stops the pass (see pass.result).
func (b *batch) add(ctx context.Context, item ingestd.Item, w *write) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.takeFault(); err != nil {
		// The pass stops: this item is not written either.
		b.ps.record(item.ExternalID, Failed, err)
		return err
	}
	b.waiting = append(b.waiting, batched{
		item: ingestd.Item{ExternalID: item.ExternalID, ParentExternalID: item.ParentExternalID, Author: w.doc.Author},
		w:    w,
	})
	b.ids[w.doc.ID] = true
	b.ctx = ctx
	if len(b.waiting) >= batchDocs || b.closed {
		return b.flushLocked(ctx)
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(batchWait, b.onTimer)
	}
	return nil
}

// flushFor writes the batch first when any of ids waits in it (with none,
// it writes it whatever it holds). It returns a fault that stops the
// pass, also one of a flush the timer ran.
func (b *batch) flushFor(ctx context.Context, ids ...string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.takeFault(); err != nil {
		return err
	}
	due := len(ids) == 0
	for _, id := range ids {
		due = due || b.ids[id]
	}
	if !due {
		return nil
	}
	return b.flushLocked(ctx)
}

// close writes what waits; the batch takes no more time-outs after.
func (b *batch) close(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	err := b.flushLocked(ctx)
	if f := b.takeFault(); f != nil {
		return f
	}
	return err
}

func (b *batch) onTimer() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.timer = nil
	if b.closed || len(b.waiting) == 0 {
		return
	}
	if err := b.flushLocked(b.ctx); err != nil && b.fault == nil {
		b.fault = err
	}
}

func (b *batch) takeFault() error {
	err := b.fault
	b.fault = nil
	return err
}

// flushLocked writes the waiting documents and records each one's
// outcome. Before the write it asks the erasure gate again about all of
// them at once: an erasure made while they waited keeps them out, as it
// would have kept out a document written the moment it was ready. It
// returns the first fault that stops the pass. The caller holds b.mu.
func (b *batch) flushLocked(ctx context.Context) error {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	waiting := b.waiting
	b.waiting = nil
	clear(b.ids)
	if len(waiting) == 0 {
		return nil
	}
	ps := b.ps
	var fault error
	keep := func(err error) {
		if err != nil && fault == nil {
			fault = err
		}
	}
	waiting, err := b.recheck(ctx, waiting)
	keep(err)
	if len(waiting) == 0 {
		return fault
	}
	puts := make([]ingestd.DocumentPut, len(waiting))
	for i, x := range waiting {
		puts[i] = ingestd.DocumentPut{Doc: x.w.doc, Chunks: x.w.chunks, Links: x.w.links}
	}
	res := ps.p.store.PutDocuments(ctx, puts)
	for i, x := range waiting {
		r := ingestd.PutResult{Err: fmt.Errorf("no result for the document")}
		if i < len(res) {
			r = res[i]
		}
		o, err := ps.p.written(ctx, x.w, r.Changed, r.Err)
		keep(ps.result(ctx, x.item.ExternalID, o, err))
	}
	return fault
}

// recheck returns the waiting documents that are still not erased. The
// ones that were erased meanwhile are counted skipped; when the gate
// cannot answer, none is written, each is counted failed and the error
// stops the pass.
func (b *batch) recheck(ctx context.Context, waiting []batched) ([]batched, error) {
	ps := b.ps
	if ps.p.erasures == nil {
		return waiting, nil
	}
	items := make([]ingestd.Item, len(waiting))
	for i, x := range waiting {
		items[i] = x.item
	}
	some, err := ps.p.erasures.ErasedAny(ctx, ps.inst.ID, items)
	if err == nil && !some {
		return waiting, nil
	}
	var fault error
	kept := waiting[:0]
	for _, x := range waiting {
		erased := false
		if err == nil {
			erased, err = ps.p.erasures.Erased(ctx, ps.inst.ID, x.item)
		}
		switch {
		case err != nil:
			err := fmt.Errorf("check erasure of %s: %w", x.w.doc.ID, err)
			if fault == nil {
				fault = err
			}
			ps.record(x.item.ExternalID, Failed, err)
		case erased:
			ps.p.log.Debug("ingest.item_erased", "installation", ps.inst.ID, "document", x.w.doc.ID)
			ps.record(x.item.ExternalID, Skipped, errErased)
		default:
			kept = append(kept, x)
		}
	}
	return kept, fault
}
