package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ingestd/ingestd"
)

// ScrubReport is what Scrub removed from the streams.
type ScrubReport struct {
	// Jobs, DeadLetters and Events count the messages erased.
	Jobs        int `json:"jobs"`
	DeadLetters int `json:"dead_letters"`
	Events      int `json:"events"`
	// Busy names the streams that still held other messages, so their
	// files were not dropped: a message acknowledged or deleted earlier
	// may linger there (without being readable through NATS) until the
	// stream empties and the next Scrub drops them.
	Busy []string `json:"busy,omitempty"`
}

// Scrub removes from the job streams what an erasure must not leave: each
// job and dead letter of the installations whose body erased reports (an
// item whose text was erased) and each stored-document event naming one
// of docIDs. Messages are found by subject and sequence and erased with
// JetStream's secure delete, which overwrites them in the stream's files
// rather than only marking them deleted.
//
// A work queue keeps the bytes of a job its worker acknowledged in the
// block file while the block holds other messages (or the server's
// markers of earlier blocks). So a stream left empty is then purged below
// its last sequence, which drops its block files whole (a job published
// meanwhile is above that sequence and stays); a stream that still holds
// other messages is named in ScrubReport.Busy. Returns EUNAVAILABLE when
// JetStream does not answer.
func (q *Queue) Scrub(ctx context.Context, installations []string, docIDs []string, erased func(context.Context, ingestd.Job) (bool, error)) (ScrubReport, error) {
	var r ScrubReport
	ids := make(map[string]bool, len(docIDs))
	for _, id := range docIDs {
		ids[id] = true
	}
	byJob := func(data []byte) (bool, error) {
		var job ingestd.Job
		if json.Unmarshal(data, &job) != nil {
			return false, nil // not a job: it carries nothing an erasure can name
		}
		return erased(ctx, job)
	}
	events, err := q.js.Stream(ctx, EventsStream)
	if err != nil {
		return r, ingestd.Errorf(ingestd.EUNAVAILABLE, "stream %s: %v", EventsStream, err)
	}
	for _, inst := range installations {
		if err := CheckToken("installation id", inst); err != nil {
			return r, err
		}
		n, err := scrubSubject(ctx, q.jobs, JobsPrefix+"*."+inst, byJob)
		r.Jobs += n
		if err != nil {
			return r, err
		}
		n, err = scrubSubject(ctx, q.dlq, DLQPrefix+"*."+inst, byJob)
		r.DeadLetters += n
		if err != nil {
			return r, err
		}
	}
	if len(ids) > 0 {
		n, err := scrubSubject(ctx, events, StoredSubject, func(data []byte) (bool, error) {
			var ev StoredEvent
			return json.Unmarshal(data, &ev) == nil && ids[ev.ID], nil
		})
		r.Events += n
		if err != nil {
			return r, err
		}
	}
	for _, s := range []jetstream.Stream{q.jobs, q.dlq, events} {
		busy, err := dropIfEmpty(ctx, s)
		if err != nil {
			return r, err
		}
		if busy {
			r.Busy = append(r.Busy, s.CachedInfo().Config.Name)
		}
	}
	return r, nil
}

// scrubSubject erases, with a secure delete, each message on subject
// (wildcards allowed) whose body match reports.
func scrubSubject(ctx context.Context, s jetstream.Stream, subject string, match func([]byte) (bool, error)) (int, error) {
	n := 0
	for seq := uint64(1); ; {
		m, err := s.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return n, nil
		}
		if err != nil {
			return n, ingestd.Errorf(ingestd.EUNAVAILABLE, "read %s: %v", subject, err)
		}
		hit, err := match(m.Data)
		if err != nil {
			return n, fmt.Errorf("scrub %s: %w", subject, err)
		}
		if hit {
			if err := s.SecureDeleteMsg(ctx, m.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
				return n, ingestd.Errorf(ingestd.EUNAVAILABLE, "erase message %d of %s: %v", m.Sequence, subject, err)
			}
			n++
		}
		seq = m.Sequence + 1
	}
}

// dropIfEmpty purges a stream that holds no message below its last
// sequence, which removes its block files, and reports whether it held
// messages (and was left as it was).
func dropIfEmpty(ctx context.Context, s jetstream.Stream) (busy bool, err error) {
	info, err := s.Info(ctx)
	if err != nil {
		return false, ingestd.Errorf(ingestd.EUNAVAILABLE, "stream info: %v", err)
	}
	if info.State.Msgs > 0 {
		return true, nil
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSequence(info.State.LastSeq+1)); err != nil {
		return false, ingestd.Errorf(ingestd.EUNAVAILABLE, "purge %s: %v", info.Config.Name, err)
	}
	return false, nil
}
