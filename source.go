package ingestd

import (
	"context"
	"time"
)

// Source is one installation's connector, ready to sync. Package connectors
// builds it from configuration; package pipeline drives it.
type Source interface {
	// Sync runs one pass over the source and reports what it finds to
	// pass. It returns an error only when the pass as a whole could not
	// run or had to stop (the server is unreachable, the store failed);
	// an item that cannot be read is reported with pass.Fail and the pass
	// goes on.
	Sync(ctx context.Context, pass Pass) error
}

// Pass receives what one sync pass finds. Its methods are safe for
// concurrent use.
//
// Every item a connector meets in a pass is reported exactly once, by one
// of Put, Delete, Fail or Skip, so that the pass's summary adds up: what
// was added, changed, unchanged, deleted, failed and skipped is every
// item seen. An item met and reported by none of them is lost without a
// trace; a connector must not do that.
type Pass interface {
	// Put ingests an item. Unchanged content writes and embeds nothing.
	// An error means the pass must stop (store failure, cancelled).
	Put(ctx context.Context, item Item) error
	// Delete tombstones the item with the external id.
	Delete(ctx context.Context, externalID string) error
	// SetReaders gives the stored document of the item with the external
	// id new readers, as a source's permissions changed (a mailbox's
	// ACL), without its content: nothing is chunked or embedded. A
	// derived document's readers stay intersected with its parent's. An
	// id the store does not hold, or holds as deleted, is no error: it
	// is left alone. It does not count the item as listed (Complete).
	SetReaders(ctx context.Context, externalID string, readers Readers) error
	// Fail records an item that could not be read, with the reason; the
	// pass goes on, and the item's stored document (if any) is kept.
	Fail(externalID string, err error)
	// Skip records an item the connector met and left out on purpose, by
	// a rule: a mail filtered as auto-generated, a file over the size
	// cap, a second delivery of a message already Put in the pass, an
	// attachment over the per-message cap. reason is a short fixed
	// phrase naming the rule ("over max_attachments"), so a summary can
	// count by it; details belong in the connector's log. Like Fail, it
	// keeps the item's stored document (if any).
	Skip(externalID, reason string)
	// Unchanged records an item the connector knows is as stored without
	// reading it again (a page that answered 304 Not Modified): it counts
	// as seen and unchanged and, like a Put, as listed.
	Unchanged(externalID string)
	// Cursor and SetCursor keep per-installation sync state (a mailbox's
	// UIDVALIDITY and last UID, a repo's since-timestamp).
	Cursor(ctx context.Context, key string) (string, error)
	SetCursor(ctx context.Context, key, value string) error
	// Total tells the progress display how many items the pass expects
	// to report. A connector may call it again as it learns more (a
	// message's attachments are known once it is read); the last call
	// is what the summary compares with the items seen, and a connector
	// that can should make it exact by the end of the pass.
	Total(n int)
	// Complete says the pass listed everything the source holds: every
	// stored document of the installation that was neither Put, Failed
	// nor Skipped in this pass is gone at the source and is tombstoned.
	Complete()
	// Whole says the pass reported every item the connector knows of, for
	// a connector that tombstones what is gone itself (url, by misses):
	// the pass's record says complete, and unlike Complete nothing is
	// tombstoned by absence.
	Whole()
}

// Job is a unit of ingest work as it travels between processes.
type Job struct {
	Kind         string `json:"kind"` // JobSync, JobItem or JobDelete
	Installation string `json:"installation"`
	Item         *Item  `json:"item,omitempty"`
	ExternalID   string `json:"external_id,omitempty"`
	// At, when set, is the time of the event a pushed item or deletion
	// reports (an issue's updated_at in a webhook delivery, a signed
	// timestamp). The job then applies only if it is newer than every
	// event already applied to the document (a deletion: not older), so a
	// replayed or late delivery cannot roll a document back or bring a
	// tombstone back to life. Sync passes leave it zero.
	At time.Time `json:"at,omitzero"`
	// Trigger is what queued a sync job (one of Triggers), for the
	// pass's record; a label, never a reason to do anything.
	Trigger string `json:"trigger,omitempty"`
}

// Job kinds.
const (
	JobSync   = "sync"
	JobItem   = "item"
	JobDelete = "delete"
)

// DeadLetter is one job the queue gave up on: it failed on every delivery
// it was allowed, or a worker refused it unrun (unsigned, a bad
// signature). Its ID is the queue's, opaque to everyone else.
type DeadLetter struct {
	ID              string    `json:"id"`
	Subject         string    `json:"subject"`
	OriginalSubject string    `json:"original_subject"`
	OriginalMsgID   string    `json:"original_msg_id,omitempty"`
	Deliveries      int       `json:"deliveries"`
	Error           string    `json:"error"`
	Reason          string    `json:"reason,omitempty"` // why a worker refused it unrun: unsigned, bad signature, ...
	FailedAt        time.Time `json:"failed_at"`
	Job             Job       `json:"job"`
}

// DeadLetters is the queue's dead-letter role, which the admin surfaces
// (the HTTP API, `ingestd dlq`) take so that none of them depends on the
// queue's adapter.
type DeadLetters interface {
	// ListDLQ returns the dead letters, oldest first.
	ListDLQ(ctx context.Context) ([]DeadLetter, error)
	// Replay queues one again. Returns ENOTFOUND for an id that is not a
	// dead letter and EINVALID for one that cannot be replayed (no
	// decodable job, or one no process holding a job key signed).
	Replay(ctx context.Context, id string) error
	// ReplayAll replays every dead letter and returns how many it queued;
	// one it cannot replay is left in place and named in an EINVALID error.
	ReplayAll(ctx context.Context) (int, error)
}
