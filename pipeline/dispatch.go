package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/ingestd/ingestd"
)

// Publish queues a job durably. msgID names the work so that a second
// publish of the same work inside the transport's dedupe window is
// dropped. An error coded ETOOLARGE means the job cannot travel; any other
// error means it was not queued.
type Publish func(ctx context.Context, job ingestd.Job, msgID string) error

// Queued is the outcome of an item that SyncDispatch published as a job
// instead of ingesting it.
const Queued Outcome = "queued"

// Unchanged reports whether the store already holds the item as Ingest
// would store it (same content hash, tier, status and source kind), in which case
// ingesting it would write and embed nothing. It reads the store, never
// writes it. Returns EINVALID for an item without an external id.
func (p *Pipeline) Unchanged(ctx context.Context, inst ingestd.Installation, item ingestd.Item) (bool, error) {
	doc, prev, err := p.stamp(ctx, inst, clean(item))
	if errors.Is(err, errErased) {
		return true, nil // ingesting it would write nothing
	}
	if err != nil {
		return false, err
	}
	return unchanged(prev, doc), nil
}

// SyncDispatch runs one pass of src like Sync, but publishes an item job
// for each new or changed item instead of ingesting it, so every worker
// shares the installation's load; unchanged items cost one store read.
// An item too large to travel (ETOOLARGE) is ingested inline. Deletions
// the connector reports, and the tombstones of a complete listing, are
// applied directly: they embed nothing.
//
// The job's message id is "item:<document id>:<hash>" where the hash
// covers the stored hash it replaces and the new content hash, tier and
// status, so a pass that is redelivered republishes nothing new, while
// an edit that is reverted inside the dedupe window is still a new job.
//
// A pass that stops (a publish or store failure) returns the error; the
// caller's job transport redelivers it and the next pass resumes from the
// connector's cursor, which the connector only advances after Put (that
// is, after the job was durably queued) returned.
func (p *Pipeline) SyncDispatch(ctx context.Context, inst ingestd.Installation, src ingestd.Source, prog Progress, publish Publish) (Summary, error) {
	start := p.now()
	ctx, span := p.startPass(ctx, inst, "dispatch")
	ps := &dispatchPass{pass: newPass(p, inst, prog), publish: publish}
	ps.span = span
	err := src.Sync(ctx, ps)
	if err == nil && ps.complete {
		err = ps.reconcile(ctx)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.end(start, err)
	endPass(span, ps.sum, err)
	p.log.Log(ctx, ps.passLevel(err), "sync.dispatch", "installation", inst.ID, "seen", ps.sum.Seen, "queued", ps.sum.Queued, "unchanged", ps.sum.Unchanged,
		"added", ps.sum.Added, "changed", ps.sum.Changed, "deleted", ps.sum.Deleted, "failed", ps.sum.Failed,
		"skipped", ps.sum.Skipped, "expected", ps.sum.Expected, "error", errString(err))
	ps.checkSum()
	if err != nil {
		return ps.sum, fmt.Errorf("sync %s: %w", inst.ID, err)
	}
	return ps.sum, nil
}

// dispatchPass is a pass whose Put publishes instead of ingesting.
type dispatchPass struct {
	*pass
	publish Publish
}

var _ ingestd.Pass = (*dispatchPass)(nil)

func (ps *dispatchPass) Put(ctx context.Context, item ingestd.Item) error {
	ps.saw()
	ctx, span := ps.p.startItem(ctx, ps.inst, item)
	err := ps.dispatch(ctx, item)
	endItem(span, "", err)
	return err
}

// dispatch stamps an item already counted as seen and publishes it as a
// job, unless the store holds it as it is.
func (ps *dispatchPass) dispatch(ctx context.Context, item ingestd.Item) error {
	if err := ctx.Err(); err != nil {
		ps.record(item.ExternalID, Failed, err)
		return err
	}
	doc, prev, err := ps.p.stamp(ctx, ps.inst, item)
	if errors.Is(err, errErased) {
		ps.record(item.ExternalID, Skipped, errErased) // never queued: its text stays out of the job stream
		return nil
	}
	if ingestd.ErrorCode(err) == ingestd.EINVALID {
		ps.record(item.ExternalID, Failed, err)
		return nil
	}
	if err != nil {
		ps.record(item.ExternalID, Failed, err)
		return err
	}
	if unchanged(prev, doc) {
		ps.record(item.ExternalID, Unchanged, nil)
		return nil
	}
	prevHash := ""
	if prev != nil {
		prevHash = prev.ContentHash + "\x00" + string(prev.Status)
	}
	msgID := "item:" + doc.ID + ":" + ingestd.ContentHash(prevHash, doc.ContentHash, string(doc.Tier), string(doc.Status))[:32]
	it := item
	err = ps.publish(ctx, ingestd.Job{Kind: ingestd.JobItem, Installation: ps.inst.ID, Item: &it}, msgID)
	if ingestd.ErrorCode(err) == ingestd.ETOOLARGE {
		return ps.pass.put(ctx, item) // cannot travel: ingest it here
	}
	if err != nil {
		ps.record(item.ExternalID, Failed, err)
		return fmt.Errorf("queue %s: %w", item.ExternalID, err)
	}
	ps.record(item.ExternalID, Queued, nil)
	return nil
}
