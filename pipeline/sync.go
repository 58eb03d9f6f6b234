package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/ingestd/ingestd"
)

// Progress follows a sync pass; cmd draws it as a bar or as plain lines.
// Its methods may be called from several goroutines.
type Progress interface {
	Total(n int)
	Step(externalID string, o Outcome, err error)
}

// Summary is what a sync pass did. It adds up: every item the pass saw
// has exactly one outcome, so
//
//	Added + Changed + Unchanged + Deleted + Failed + Skipped + Queued = Seen
//
// Check says whether it does.
type Summary struct {
	Installation string `json:"installation"`
	// Seen counts every item the pass dealt with: each Put, Delete, Fail
	// and Skip the connector reported (an item Put twice counts twice),
	// and each tombstone a complete listing's reconciliation wrote.
	Seen      int `json:"seen"`
	Added     int `json:"added"`
	Changed   int `json:"changed"`
	Unchanged int `json:"unchanged"` // includes a Delete of what was not stored, or already a tombstone
	Deleted   int `json:"deleted"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	Queued    int `json:"queued,omitempty"` // item jobs published by SyncDispatch
	// Expected is the connector's last Total: what it said it would
	// report. A connector that learns of items on the way (a message's
	// attachments) raises it as it goes; 0 when it never said.
	Expected int `json:"expected"`
	// SkippedBy counts the skips by the reason the connector gave.
	SkippedBy map[string]int `json:"skipped_by,omitempty"`
	Failures  []Failure      `json:"failures,omitempty"`
	// Skips lists the first MaxListedSkips skipped items with their
	// reason; SkippedBy counts them all.
	Skips    []Failure     `json:"skips,omitempty"`
	Complete bool          `json:"complete"`
	Duration time.Duration `json:"duration_ns"`
	// StartedAt is when the pass began. Cursors summarises the sync
	// cursors it wrote, in the order first written, values shortened;
	// empty when it wrote none.
	StartedAt time.Time `json:"started_at"`
	Cursors   string    `json:"cursors,omitempty"`
}

// MaxListedSkips bounds Summary.Skips: one message with 10,000
// attachments over the cap must not make a summary of 10,000 lines.
const MaxListedSkips = 100

// Failure is one item a pass could not ingest, or left out, with the
// reason.
type Failure struct {
	ExternalID string `json:"external_id"`
	Reason     string `json:"reason"`
}

// Check returns an error naming the terms when the summary does not add
// up: when the outcomes do not sum to Seen, or the failures or skips
// listed by reason do not match their counts. A pass that reported every
// item exactly once always adds up.
func (s Summary) Check() error {
	if sum := s.Added + s.Changed + s.Unchanged + s.Deleted + s.Failed + s.Skipped + s.Queued; sum != s.Seen {
		return fmt.Errorf("%d added + %d changed + %d unchanged + %d deleted + %d failed + %d skipped + %d queued = %d, but %d items were seen",
			s.Added, s.Changed, s.Unchanged, s.Deleted, s.Failed, s.Skipped, s.Queued, sum, s.Seen)
	}
	if len(s.Failures) != s.Failed {
		return fmt.Errorf("%d failures listed for %d failed", len(s.Failures), s.Failed)
	}
	by := 0
	for _, n := range s.SkippedBy {
		by += n
	}
	if by != s.Skipped {
		return fmt.Errorf("%d skips counted by reason for %d skipped", by, s.Skipped)
	}
	return nil
}

// String is the summary a person can add up: every term, the skips by
// reason, and what the connector expected when that differs.
func (s Summary) String() string {
	var b strings.Builder
	items := "items"
	if s.Seen == 1 {
		items = "item"
	}
	fmt.Fprintf(&b, "%s: %d %s seen = ", s.Installation, s.Seen, items)
	if s.Queued > 0 {
		fmt.Fprintf(&b, "%d queued + ", s.Queued)
	}
	fmt.Fprintf(&b, "%d added + %d changed + %d unchanged + %d deleted + %d failed + %d skipped",
		s.Added, s.Changed, s.Unchanged, s.Deleted, s.Failed, s.Skipped)
	if len(s.SkippedBy) > 0 {
		reasons := make([]string, 0, len(s.SkippedBy))
		for r := range s.SkippedBy {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			if s.SkippedBy[reasons[i]] != s.SkippedBy[reasons[j]] {
				return s.SkippedBy[reasons[i]] > s.SkippedBy[reasons[j]]
			}
			return reasons[i] < reasons[j]
		})
		for i, r := range reasons {
			reasons[i] = fmt.Sprintf("%d %s", s.SkippedBy[r], r)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(reasons, ", "))
	}
	if s.Expected > 0 && s.Expected != s.Seen {
		fmt.Fprintf(&b, "; the connector expected %d", s.Expected)
	}
	fmt.Fprintf(&b, " in %s", s.Duration.Round(time.Millisecond))
	return b.String()
}

// Sync runs one pass of src for the installation. Items the connector
// cannot read, and items the pipeline refuses, are counted as failed and
// the pass goes on; a store failure stops it. When the connector says its
// listing was complete, stored documents it no longer lists are
// tombstoned — with no limit on how old they are.
func (p *Pipeline) Sync(ctx context.Context, inst ingestd.Installation, src ingestd.Source, prog Progress) (Summary, error) {
	start := p.now()
	ctx, span := p.startPass(ctx, inst, "ingest")
	ps := newPass(p, inst, prog)
	ps.span = span
	ps.batch = newBatch(ps.write)
	err := src.Sync(ctx, ps)
	if ferr := ps.batch.close(ctx); err == nil {
		err = ferr
	}
	if err == nil && ps.complete {
		err = ps.reconcile(ctx)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.end(start, err)
	endPass(span, ps.sum, err)
	p.log.Log(ctx, ps.passLevel(err), "sync.pass", "installation", inst.ID, "seen", ps.sum.Seen, "added", ps.sum.Added, "changed", ps.sum.Changed,
		"unchanged", ps.sum.Unchanged, "deleted", ps.sum.Deleted, "failed", ps.sum.Failed, "skipped", ps.sum.Skipped,
		"expected", ps.sum.Expected, "error", errString(err))
	ps.checkSum()
	if err != nil {
		return ps.sum, fmt.Errorf("sync %s: %w", inst.ID, err)
	}
	return ps.sum, nil
}

// pass implements ingestd.Pass for one Sync call. Each of its item
// methods counts the item as seen once and records exactly one outcome.
//
// Calls run one way: Sync → pass → batch. The pass runs the item stages
// (Pipeline.prepare, written, Ingest, Delete), which call neither the
// pass nor its batch, and queues the prepared documents in its batch;
// the batch calls back only the write function it was made with
// (pass.write), never another method of the pass or the Pipeline.
type pass struct {
	p    *Pipeline
	inst ingestd.Installation
	prog Progress

	// batch holds the documents waiting to be written together (see
	// batch.go); nil writes each one as it comes (SyncDispatch).
	batch *batch

	// span is the pass's trace span: a batch write is its child, not the
	// child of the item whose put happened to start it.
	span trace.Span

	mu       sync.Mutex
	sum      Summary
	listed   map[string]bool // external ids Put, Failed or Skipped: kept by reconcile
	complete bool
	whole    bool // every item reported, the connector tombstoning itself (Whole)
	cursors  cursorLog
}

var _ ingestd.Pass = (*pass)(nil)

func newPass(p *Pipeline, inst ingestd.Installation, prog Progress) *pass {
	ps := &pass{p: p, inst: inst, prog: prog, listed: map[string]bool{}}
	ps.sum.Installation = inst.ID
	return ps
}

// saw counts one item as seen.
func (ps *pass) saw() {
	ps.mu.Lock()
	ps.sum.Seen++
	ps.mu.Unlock()
}

func (ps *pass) Put(ctx context.Context, item ingestd.Item) error {
	ps.saw()
	return ps.put(ctx, item)
}

// put ingests an item already counted as seen: at once, or into the
// pass's batch.
func (ps *pass) put(ctx context.Context, item ingestd.Item) error {
	if err := ctx.Err(); err != nil {
		ps.record(item.ExternalID, Failed, err)
		return err
	}
	if ps.batch == nil {
		o, err := ps.p.Ingest(ctx, ps.inst, item)
		return ps.result(ctx, item.ExternalID, o, err)
	}
	ctx, span := ps.p.startItem(ctx, ps.inst, item)
	var o Outcome
	var err error
	defer func() { endItem(span, o, err) }()
	// The item is stamped against the store: a document of its own or of
	// its parent still waiting in the batch is written first.
	ids := []string{ingestd.DocumentID(ps.inst.ID, item.ExternalID)}
	if item.ParentExternalID != "" {
		ids = append(ids, ingestd.DocumentID(ps.inst.ID, item.ParentExternalID))
	}
	if err = ps.batch.flushFor(ctx, ids...); err != nil {
		o = Failed
		ps.record(item.ExternalID, Failed, err)
		return err
	}
	var w *write
	w, o, err = ps.p.prepare(ctx, ps.inst, item)
	if w == nil {
		return ps.result(ctx, item.ExternalID, o, err)
	}
	if err = ps.batch.add(ctx, item, w); err != nil {
		o = Failed
		ps.record(item.ExternalID, Failed, err)
		return err
	}
	o = "batched" // written by the batch, under the pass's span
	return nil
}

// result records what ingesting an item did and returns the error that
// stops the pass: a store or embedder fault, or the end of ctx. An item
// the pipeline refuses (EINVALID) is counted failed and the pass goes on.
func (ps *pass) result(ctx context.Context, externalID string, o Outcome, err error) error {
	if o == Skipped && err == nil {
		ps.record(externalID, Skipped, errErased)
		return nil
	}
	if err != nil && ingestd.ErrorCode(err) != ingestd.EINVALID {
		if ctx.Err() != nil {
			ps.record(externalID, Failed, ctx.Err())
			return ctx.Err()
		}
		// A store or embedder fault: this item is not lost (the source
		// still has it and the next pass retries), but the pass stops.
		ps.record(externalID, Failed, err)
		return err
	}
	ps.record(externalID, o, err)
	return nil
}

func (ps *pass) Delete(ctx context.Context, externalID string) error {
	ps.saw()
	if err := ps.flush(ctx); err != nil {
		ps.record(externalID, Failed, err)
		return err
	}
	o, err := ps.p.Delete(ctx, ps.inst, externalID)
	ps.record(externalID, o, err)
	return err
}

func (ps *pass) SetReaders(ctx context.Context, externalID string, readers ingestd.Readers) error {
	if err := ps.flush(ctx); err != nil {
		return err
	}
	return ps.p.SetReaders(ctx, ps.inst, externalID, readers)
}

func (ps *pass) Fail(externalID string, err error) {
	ps.saw()
	ps.record(externalID, Failed, err)
}

func (ps *pass) Skip(externalID, reason string) {
	ps.saw()
	if reason == "" {
		reason = "unspecified"
	}
	ps.record(externalID, Skipped, errors.New(reason))
}

func (ps *pass) Unchanged(externalID string) {
	ps.saw()
	ps.record(externalID, Unchanged, nil)
}

func (ps *pass) Whole() {
	ps.mu.Lock()
	ps.whole = true
	ps.mu.Unlock()
}

func (ps *pass) Cursor(ctx context.Context, key string) (string, error) {
	return ps.p.store.Cursor(ctx, ps.inst.ID, key)
}

// SetCursor writes the documents put before it first: a connector moves
// its cursor past what is stored, never past what waits.
func (ps *pass) SetCursor(ctx context.Context, key, value string) error {
	if err := ps.flush(ctx); err != nil {
		return err
	}
	if err := ps.p.store.SetCursor(ctx, ps.inst.ID, key, value); err != nil {
		return err
	}
	ps.mu.Lock()
	ps.cursors.set(key, value)
	ps.mu.Unlock()
	return nil
}

func (ps *pass) Total(n int) {
	ps.mu.Lock()
	ps.sum.Expected = n
	ps.mu.Unlock()
	if ps.prog != nil {
		ps.prog.Total(n)
	}
}

func (ps *pass) Complete() {
	ps.mu.Lock()
	ps.complete = true
	ps.mu.Unlock()
}

// flush writes the documents waiting in the pass's batch.
func (ps *pass) flush(ctx context.Context) error {
	if ps.batch == nil {
		return nil
	}
	return ps.batch.flushFor(ctx)
}

// record counts one outcome. For Failed, err is the reason; for Skipped,
// err's text is the reason the connector gave.
func (ps *pass) record(externalID string, o Outcome, err error) {
	ps.mu.Lock()
	if externalID != "" {
		ps.listed[externalID] = true
	}
	switch o {
	case Added:
		ps.sum.Added++
	case Changed:
		ps.sum.Changed++
	case Unchanged:
		ps.sum.Unchanged++
	case Deleted:
		ps.sum.Deleted++
	case Queued:
		ps.sum.Queued++
	case Skipped:
		reason := err.Error()
		ps.sum.Skipped++
		if ps.sum.SkippedBy == nil {
			ps.sum.SkippedBy = map[string]int{}
		}
		ps.sum.SkippedBy[reason]++
		if len(ps.sum.Skips) < MaxListedSkips {
			ps.sum.Skips = append(ps.sum.Skips, Failure{ExternalID: externalID, Reason: reason})
		}
		ps.p.log.Debug("ingest.item_skipped", "installation", ps.inst.ID, "external_id", externalID, "reason", reason)
	default:
		ps.sum.Failed++
		reason := "unknown"
		if err != nil {
			reason = err.Error()
		}
		ps.sum.Failures = append(ps.sum.Failures, Failure{ExternalID: externalID, Reason: reason})
		ps.p.log.Log(context.Background(), ps.failureLevel(externalID, reason), "ingest.item_failed", "installation", ps.inst.ID, "external_id", externalID, "reason", reason)
	}
	ps.mu.Unlock()
	if ps.prog != nil {
		if o == Skipped {
			err = nil
		}
		ps.prog.Step(externalID, o, err)
	}
}

// end completes the summary of a pass that started at start and ended
// with err. The caller holds ps.mu.
func (ps *pass) end(start time.Time, err error) {
	ps.sum.Complete = (ps.complete || ps.whole) && err == nil
	ps.p.failures.remember(ps.inst.ID, ps.sum.Failures)
	ps.sum.StartedAt = start
	ps.sum.Duration = ps.p.now().Sub(start)
	ps.sum.Cursors = ps.cursors.summary()
}

// checkSum logs a summary that does not add up: a bug in this package,
// never in a connector (each item method records exactly one outcome).
// The caller holds ps.mu.
func (ps *pass) checkSum() {
	if err := ps.sum.Check(); err != nil {
		ps.p.log.Error("sync.summary_does_not_add_up", "installation", ps.inst.ID, "error", err.Error())
	}
}

// reconcile tombstones what the complete listing did not name.
func (ps *pass) reconcile(ctx context.Context) error {
	refs, err := ps.p.store.DocumentRefs(ctx, ps.inst.ID)
	if err != nil {
		return fmt.Errorf("list documents: %w", err)
	}
	for _, r := range refs {
		ps.mu.Lock()
		listed := ps.listed[r.ExternalID]
		ps.mu.Unlock()
		if listed {
			continue
		}
		if err := ps.Delete(ctx, r.ExternalID); err != nil {
			return err
		}
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// write writes a batch's documents and records each one's outcome: the
// batch's one way back to its pass (see batch). Before the
// write it asks the erasure gate again about all of them at once: an
// erasure made while they waited keeps them out, as it would have kept
// out a document written the moment it was ready. It returns the first
// fault that stops the pass.
func (ps *pass) write(ctx context.Context, waiting []batched) error {
	var fault error
	keep := func(err error) {
		if err != nil && fault == nil {
			fault = err
		}
	}
	waiting, err := ps.recheck(ctx, waiting)
	keep(err)
	if len(waiting) == 0 {
		return fault
	}
	puts := make([]ingestd.DocumentPut, len(waiting))
	chunks := 0
	for i, x := range waiting {
		puts[i] = ingestd.DocumentPut{Doc: x.w.doc, Chunks: x.w.chunks, Links: x.w.links}
		chunks += len(x.w.chunks)
	}
	under := ctx // the pass's span, not the item's whose put started the write
	if ps.span.IsRecording() {
		under = trace.ContextWithSpan(ctx, ps.span)
	}
	sctx, span := ps.p.start(under, SpanStoreBatch)
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("ingestd.documents", len(puts)), attribute.Int("ingestd.chunks", chunks))
	}
	res := ps.p.store.PutDocuments(sctx, puts)
	span.End()
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
func (ps *pass) recheck(ctx context.Context, waiting []batched) ([]batched, error) {
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
