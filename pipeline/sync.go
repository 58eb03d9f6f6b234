package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ingestd/ingestd"
)

// Progress follows a sync pass; cmd draws it as a bar or as plain lines.
// Its methods may be called from several goroutines.
type Progress interface {
	Total(n int)
	Step(externalID string, o Outcome, err error)
}

// Summary is what a sync pass did.
type Summary struct {
	Installation string        `json:"installation"`
	Added        int           `json:"added"`
	Changed      int           `json:"changed"`
	Unchanged    int           `json:"unchanged"`
	Deleted      int           `json:"deleted"`
	Failed       int           `json:"failed"`
	Queued       int           `json:"queued,omitempty"` // item jobs published by SyncDispatch
	Failures     []Failure     `json:"failures,omitempty"`
	Complete     bool          `json:"complete"`
	Duration     time.Duration `json:"duration_ns"`
}

// Failure is one item a pass could not ingest, with the reason.
type Failure struct {
	ExternalID string `json:"external_id"`
	Reason     string `json:"reason"`
}

func (s Summary) String() string {
	if s.Queued > 0 {
		return fmt.Sprintf("%s: %d queued, %d unchanged, %d deleted, %d failed in %s",
			s.Installation, s.Queued, s.Unchanged, s.Deleted, s.Failed, s.Duration.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: %d added, %d changed, %d unchanged, %d deleted, %d failed in %s",
		s.Installation, s.Added, s.Changed, s.Unchanged, s.Deleted, s.Failed, s.Duration.Round(time.Millisecond))
}

// Sync runs one pass of src for the installation. Items the connector
// cannot read, and items the pipeline refuses, are counted as failed and
// the pass goes on; a store failure stops it. When the connector says its
// listing was complete, stored documents it no longer lists are
// tombstoned — with no limit on how old they are.
func (p *Pipeline) Sync(ctx context.Context, inst ingestd.Installation, src ingestd.Source, prog Progress) (Summary, error) {
	start := p.now()
	ps := &pass{p: p, inst: inst, prog: prog, seen: map[string]bool{}}
	ps.sum.Installation = inst.ID
	err := src.Sync(ctx, ps)
	if err == nil && ps.complete {
		err = ps.reconcile(ctx)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.sum.Complete = ps.complete && err == nil
	ps.sum.Duration = p.now().Sub(start)
	p.log.Info("sync.pass", "installation", inst.ID, "added", ps.sum.Added, "changed", ps.sum.Changed,
		"unchanged", ps.sum.Unchanged, "deleted", ps.sum.Deleted, "failed", ps.sum.Failed, "error", errString(err))
	if err != nil {
		return ps.sum, fmt.Errorf("sync %s: %w", inst.ID, err)
	}
	return ps.sum, nil
}

// pass implements ingestd.Pass for one Sync call.
type pass struct {
	p    *Pipeline
	inst ingestd.Installation
	prog Progress

	mu       sync.Mutex
	sum      Summary
	seen     map[string]bool
	complete bool
}

var _ ingestd.Pass = (*pass)(nil)

func (ps *pass) Put(ctx context.Context, item ingestd.Item) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	o, err := ps.p.Ingest(ctx, ps.inst, item)
	if err != nil && ingestd.ErrorCode(err) != ingestd.EINVALID {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		// A store or embedder fault: this item is not lost (the source
		// still has it and the next pass retries), but the pass stops.
		ps.record(item.ExternalID, Failed, err)
		return err
	}
	ps.record(item.ExternalID, o, err)
	return nil
}

func (ps *pass) Delete(ctx context.Context, externalID string) error {
	o, err := ps.p.Delete(ctx, ps.inst, externalID)
	ps.record(externalID, o, err)
	return err
}

func (ps *pass) Fail(externalID string, err error) {
	ps.record(externalID, Failed, err)
}

func (ps *pass) Cursor(ctx context.Context, key string) (string, error) {
	return ps.p.store.Cursor(ctx, ps.inst.ID, key)
}

func (ps *pass) SetCursor(ctx context.Context, key, value string) error {
	return ps.p.store.SetCursor(ctx, ps.inst.ID, key, value)
}

func (ps *pass) Total(n int) {
	if ps.prog != nil {
		ps.prog.Total(n)
	}
}

func (ps *pass) Complete() {
	ps.mu.Lock()
	ps.complete = true
	ps.mu.Unlock()
}

func (ps *pass) record(externalID string, o Outcome, err error) {
	ps.mu.Lock()
	if externalID != "" {
		ps.seen[externalID] = true
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
	default:
		ps.sum.Failed++
		reason := "unknown"
		if err != nil {
			reason = err.Error()
		}
		ps.sum.Failures = append(ps.sum.Failures, Failure{ExternalID: externalID, Reason: reason})
		ps.p.log.Warn("ingest.item_failed", "installation", ps.inst.ID, "external_id", externalID, "reason", reason)
	}
	ps.mu.Unlock()
	if ps.prog != nil {
		ps.prog.Step(externalID, o, err)
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
		seen := ps.seen[r.ExternalID]
		ps.mu.Unlock()
		if seen {
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
