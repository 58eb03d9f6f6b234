package pipeline

import (
	"context"
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

// batch holds a pass's documents waiting to be written and decides when
// they are: it is the bottom of a sync pass's calls, which run one way —
// Pipeline.Sync makes a pass and hands it to the connector; the pass
// prepares each item (Pipeline.prepare) and queues it here; the batch
// writes through the one function it was made with, pass.write, which
// records each document's outcome. The batch knows neither the pass nor
// the Pipeline: it schedules writes (full, timed, flushed, closed; one at
// a time) and keeps the first fault a write returned. Safe for
// concurrent use.
type batch struct {
	write func(ctx context.Context, waiting []batched) error // writes one batch; runs without b.mu

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

// newBatch returns a batch that writes with write: called from one
// goroutine at a time, it returns the fault that stops the pass.
func newBatch(write func(ctx context.Context, waiting []batched) error) *batch {
	return &batch{write: write, ids: map[string]bool{}, inflight: map[string]bool{}}
}

// add queues w, the document of item, and starts writing the batch when
// it is full. It returns a fault of an earlier write, which stops the
// pass (see pass.result): then the item is not queued, and the caller
// counts it failed.
func (b *batch) add(ctx context.Context, item ingestd.Item, w *write) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.takeFault(); err != nil {
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
