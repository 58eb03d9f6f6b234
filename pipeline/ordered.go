package pipeline

import (
	"context"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
)

// Stale is the outcome of a pushed item or deletion older than what was
// already applied to its document: nothing is written.
const Stale Outcome = "stale"

// eventCursorPrefix names, in the installation's cursors, the newest event
// time applied to a document by IngestAt or DeleteAt. It outlives the
// document's row state (a tombstone keeps it), so a replayed "opened"
// after a "deleted" finds it.
const eventCursorPrefix = "event-at:"

// EventCursorKey is the cursor key under which IngestAt and DeleteAt keep
// the newest event time applied to the document with the external id
// (package erasure removes it with the document).
func EventCursorKey(externalID string) string { return eventCursorPrefix + externalID }

// IngestAt ingests item as its document's state at time at (the event
// time a webhook delivery reports), unless a state as new or newer was
// already applied: then it is Stale and nothing is written. "Applied"
// is the newest of the document's stored UpdatedAt and the event time
// recorded by earlier IngestAt and DeleteAt calls, tombstones included,
// so neither a replayed delivery nor an old one that arrives late can
// roll the document back or bring a deleted one back to life. At the
// same instant the stored state stands. A zero at applies only to a
// document nothing was ever applied to.
//
// Calls for one document are serialised within the process; across
// processes two deliveries of one document applied in the same instant
// can still race (the next newer delivery repairs it).
func (p *Pipeline) IngestAt(ctx context.Context, inst ingestd.Installation, item ingestd.Item, at time.Time) (Outcome, error) {
	if strings.TrimSpace(item.ExternalID) == "" {
		return p.Ingest(ctx, inst, item) // refused there, with its message
	}
	id := ingestd.DocumentID(inst.ID, item.ExternalID)
	unlock := p.lockDoc(id)
	defer unlock()
	newest, known, err := p.applied(ctx, inst, item.ExternalID, id)
	if err != nil {
		return Failed, err
	}
	if known && !at.After(newest) {
		p.log.Info("ingest.stale", "installation", inst.ID, "external_id", item.ExternalID, "at", at, "applied", newest)
		return Stale, nil
	}
	out, err := p.Ingest(ctx, inst, item)
	if err != nil || out == Skipped {
		return out, err // an erased item leaves no event time behind either
	}
	return out, p.markApplied(ctx, inst, item.ExternalID, at)
}

// DeleteAt tombstones the document with the external id as of time at,
// unless a newer state was already applied (then it is Stale). A deletion
// at the same instant as the stored state wins. The time is recorded
// even when the store holds no such document, so an item older than the
// deletion that arrives after it is Stale too.
func (p *Pipeline) DeleteAt(ctx context.Context, inst ingestd.Installation, externalID string, at time.Time) (Outcome, error) {
	if strings.TrimSpace(externalID) == "" {
		return Failed, ingestd.Errorf(ingestd.EINVALID, "installation %q: delete without an external id", inst.ID)
	}
	id := ingestd.DocumentID(inst.ID, externalID)
	unlock := p.lockDoc(id)
	defer unlock()
	newest, known, err := p.applied(ctx, inst, externalID, id)
	if err != nil {
		return Failed, err
	}
	if known && at.Before(newest) {
		p.log.Info("ingest.stale", "installation", inst.ID, "external_id", externalID, "at", at, "applied", newest)
		return Stale, nil
	}
	out, err := p.Delete(ctx, inst, externalID)
	if err != nil {
		return out, err
	}
	if p.erasures != nil {
		// An erased document's identity is kept nowhere in clear, not in
		// an event time either.
		erased, err := p.erasures.Erased(ctx, inst.ID, ingestd.Item{ExternalID: externalID})
		if err != nil || erased {
			return out, err
		}
	}
	return out, p.markApplied(ctx, inst, externalID, at)
}

// applied returns the newest event time applied to the document, and
// whether anything was (a stored document, or a recorded event time).
func (p *Pipeline) applied(ctx context.Context, inst ingestd.Installation, externalID, id string) (newest time.Time, known bool, err error) {
	raw, err := p.store.Cursor(ctx, inst.ID, eventCursorPrefix+externalID)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("event time of %s: %w", id, err)
	}
	if raw != "" {
		t, err := time.Parse(time.RFC3339Nano, raw)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("event time of %s: %q: %w", id, raw, err)
		}
		newest, known = t, true
	}
	doc, err := p.store.Document(ctx, id)
	switch {
	case ingestd.ErrorCode(err) == ingestd.ENOTFOUND:
	case err != nil:
		return time.Time{}, false, fmt.Errorf("load %s: %w", id, err)
	default:
		known = true
		if doc.UpdatedAt.After(newest) {
			newest = doc.UpdatedAt
		}
	}
	return newest, known, nil
}

// markApplied records at as the newest event time applied to the
// document, if it is.
func (p *Pipeline) markApplied(ctx context.Context, inst ingestd.Installation, externalID string, at time.Time) error {
	if at.IsZero() {
		return nil
	}
	key := eventCursorPrefix + externalID
	raw, err := p.store.Cursor(ctx, inst.ID, key)
	if err != nil {
		return fmt.Errorf("event time of %s: %w", externalID, err)
	}
	if t, err := time.Parse(time.RFC3339Nano, raw); err == nil && !at.After(t) {
		return nil
	}
	if err := p.store.SetCursor(ctx, inst.ID, key, at.UTC().Format(time.RFC3339Nano)); err != nil {
		return fmt.Errorf("event time of %s: %w", externalID, err)
	}
	return nil
}

// lockDoc serialises the ordered writes of one document in this process.
func (p *Pipeline) lockDoc(id string) (unlock func()) {
	h := fnv.New32a()
	h.Write([]byte(id))
	mu := &p.docLocks[h.Sum32()%uint32(len(p.docLocks))]
	mu.Lock()
	return mu.Unlock
}
