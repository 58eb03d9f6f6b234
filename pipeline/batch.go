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
// (DocumentStore.PutDocuments: one transaction on SQLite, in which one
// refused document leaves its neighbours).
// A batch is written once it holds batchDocs documents or batchChunks
// chunks, or its oldest has waited batchWait, in the background while the pass prepares the next
// one (one write at a time, so the store's work and the pass's overlap on
// two cores), and every document put so far is written before anything
// that must find it stored: a cursor the connector sets, a deletion, an
// item of a waiting document or of its parent, the reconciliation and
// the end of the pass.
//
// An item is counted, shown as progress and handed to OnStored only once
// its batch committed, and a connector's cursor is written only after
// every document put before it: a pass killed mid-way has reported and
// passed nothing it had not written, and the next pass redoes the rest.
//
// A bigger batch rewrites the pages every transaction touches (the
// indexes' leaves) fewer times: 256 documents of four chunks wrote 22 %
// fewer bytes than 64 in `ingestd-bench store ingest`. batchChunks keeps
// a batch of long documents (a PDF of a thousand chunks) from holding
// hundreds of megabytes of vectors.
const (
	batchDocs   = 256
	batchChunks = 2048
	batchWait   = time.Second
)

// batch holds a pass's documents waiting to be written. Safe for
// concurrent use.
type batch struct {
	ps *pass

	mu       sync.Mutex
	waiting  []batched
	ids      map[string]bool // document ids waiting
	chunks   int             // chunks waiting
	writing  chan struct{}   // closed when the write in flight ends; nil when none
	inflight map[string]bool // document ids of the write in flight
	ctx      context.Context // the last put's, for a write the timer starts
	timer    *time.Timer
	fault    error // the first fault of a write, which stops the pass: the next call returns it
	closed   bool
}

// batched is one document waiting, with what the erasure gate asks of its
// item.
type batched struct {
	item ingestd.Item // ExternalID, ParentExternalID and Author only
	w    *write
}

func newBatch(ps *pass) *batch {
	return &batch{ps: ps, ids: map[string]bool{}, inflight: map[string]bool{}}
}

// add queues w, the document of item, and starts writing the batch when
// it is full. It returns a fault that stops the pass (see pass.result):
// then the item is counted failed and not queued.
func (b *batch) add(ctx context.Context, item ingestd.Item, w *write) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.takeFault(); err != nil {
		b.ps.record(item.ExternalID, Failed, err)
		return err
	}
	b.waiting = append(b.waiting, batched{
		item: ingestd.Item{ExternalID: item.ExternalID, ParentExternalID: item.ParentExternalID, Author: w.doc.Author},
		w:    w,
	})
	b.ids[w.doc.ID] = true
	b.chunks += len(w.chunks)
	b.ctx = ctx
	if len(b.waiting) >= batchDocs || b.chunks >= batchChunks || b.closed {
		b.startLocked(ctx)
	} else if b.timer == nil {
		b.timer = time.AfterFunc(batchWait, b.onTimer)
	}
	return nil
}

// flushFor writes every document put so far and waits for the writes
// when any of ids waits or is being written (with no ids, in any case).
// It returns a fault that stops the pass.
func (b *batch) flushFor(ctx context.Context, ids ...string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	due := len(ids) == 0
	for _, id := range ids {
		due = due || b.ids[id] || b.inflight[id]
	}
	if due {
		b.startLocked(ctx)
		b.waitLocked()
	}
	return b.takeFault()
}

// close writes what waits and waits for the writes; the batch starts no
// write on a timer after.
func (b *batch) close(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	b.startLocked(ctx)
	b.waitLocked()
	return b.takeFault()
}

func (b *batch) onTimer() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.timer = nil
	if !b.closed {
		b.startLocked(b.ctx)
	}
}

func (b *batch) takeFault() error {
	err := b.fault
	b.fault = nil
	return err
}

// waitLocked waits until no write is in flight. The caller holds b.mu,
// which is released while it waits.
func (b *batch) waitLocked() {
	for b.writing != nil {
		done := b.writing
		b.mu.Unlock()
		<-done
		b.mu.Lock()
	}
}

// startLocked starts writing the waiting documents, once the write in
// flight, if any, has ended. The caller holds b.mu.
func (b *batch) startLocked(ctx context.Context) {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.waitLocked()
	if len(b.waiting) == 0 {
		return
	}
	waiting := b.waiting
	b.waiting, b.chunks = nil, 0
	b.ids, b.inflight = b.inflight, b.ids
	done := make(chan struct{})
	b.writing = done
	go func() {
		err := b.write(ctx, waiting)
		b.mu.Lock()
		if err != nil && b.fault == nil {
			b.fault = err
		}
		clear(b.inflight)
		b.writing = nil
		close(done)
		b.mu.Unlock()
	}()
}

// write writes the documents and records each one's outcome. Before the
// write it asks the erasure gate again about all of them at once: an
// erasure made while they waited keeps them out, as it would have kept
// out a document written the moment it was ready. It returns the first
// fault that stops the pass.
func (b *batch) write(ctx context.Context, waiting []batched) error {
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
