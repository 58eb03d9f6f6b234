package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ingestd/ingestd"
)

var _ ingestd.DeadLetters = (*Queue)(nil)

// dead is a dead letter with the body and signature it was queued with,
// which Replay checks before it queues the body again.
type dead struct {
	ingestd.DeadLetter
	data []byte // the body as it was queued
	sig  string // its HeaderSignature, "" if none
}

// ListDLQ returns the dead letters, oldest first.
func (q *Queue) ListDLQ(ctx context.Context) ([]ingestd.DeadLetter, error) {
	info, err := q.dlq.Info(ctx)
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "dead letters: %v", err)
	}
	var out []ingestd.DeadLetter
	if info.State.Msgs == 0 {
		return out, nil
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		dj, err := q.deadJob(ctx, seq)
		if ingestd.ErrorCode(err) == ingestd.ENOTFOUND {
			continue // replayed
		}
		if err != nil {
			return out, err
		}
		out = append(out, dj.DeadLetter)
	}
	return out, nil
}

func (q *Queue) deadJob(ctx context.Context, seq uint64) (*dead, error) {
	m, err := q.dlq.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, ingestd.Errorf(ingestd.ENOTFOUND, "no dead letter %d", seq)
	}
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "dead letter %d: %v", seq, err)
	}
	dj := &dead{DeadLetter: ingestd.DeadLetter{
		ID:              strconv.FormatUint(seq, 10),
		Subject:         m.Subject,
		OriginalSubject: m.Header.Get(HeaderSubject),
		OriginalMsgID:   m.Header.Get(HeaderMsgID),
		Error:           m.Header.Get(HeaderError),
		Reason:          m.Header.Get(HeaderReason),
		FailedAt:        m.Time,
	}, data: m.Data, sig: m.Header.Get(HeaderSignature)}
	dj.Deliveries, _ = strconv.Atoi(m.Header.Get(HeaderDeliveries))
	if t, err := time.Parse(time.RFC3339Nano, m.Header.Get(HeaderFailedAt)); err == nil {
		dj.FailedAt = t
	}
	if dj.OriginalSubject == "" {
		dj.OriginalSubject = JobsPrefix + strings.TrimPrefix(m.Subject, DLQPrefix)
	}
	if err := json.Unmarshal(m.Data, &dj.Job); err != nil {
		dj.Error += fmt.Sprintf(" (body undecodable: %v)", err)
	}
	return dj, nil
}

// Replay queues the dead letter with the id again, on its original
// subject with a fresh message id (so the dedupe window of the first
// attempt does not drop it), then removes it from the dead letters.
// Returns ENOTFOUND for an id that is not a dead letter.
//
// Replay signs what it queues, so with a job key it first checks that the
// dead letter is a job some process holding a job key signed, on the
// subject it names: a forged job (refused as unsigned or with a bad
// signature, or written straight to the dead-letter subjects) is never
// laundered into a signed one. Such a dead letter returns EINVALID and
// stays where it is; the installation's next sync pass queues its
// content again if the source still has it.
func (q *Queue) Replay(ctx context.Context, id string) error {
	seq, err := strconv.ParseUint(id, 10, 64)
	if err != nil || seq == 0 {
		return ingestd.Errorf(ingestd.ENOTFOUND, "no dead letter %q (ids are numbers; see dlq list)", id)
	}
	dj, err := q.deadJob(ctx, seq)
	if err != nil {
		return err
	}
	if dj.Job.Kind == "" || dj.Job.Installation == "" {
		return ingestd.Errorf(ingestd.EINVALID, "dead letter %s has no decodable job; it cannot be replayed", id)
	}
	if q.keys.on() {
		if r := q.keys.verify(dj.OriginalSubject, dj.OriginalMsgID, dj.data, dj.sig); r != "" {
			return ingestd.Errorf(ingestd.EINVALID, "dead letter %s cannot be replayed: %s (no process holding a job key queued it as it stands); run the installation's sync instead", id, r)
		}
	}
	if want, err := JobSubject(dj.Job.Kind, dj.Job.Installation); err != nil || want != dj.OriginalSubject {
		return ingestd.Errorf(ingestd.EINVALID, "dead letter %s cannot be replayed: it was queued on %s but its body is a %q job for installation %q", id, dj.OriginalSubject, dj.Job.Kind, dj.Job.Installation)
	}
	msgID := "replay:" + id + ":" + dj.OriginalMsgID
	if err := q.Publish(ctx, dj.Job, msgID); err != nil {
		return fmt.Errorf("replay %s: %w", id, err)
	}
	if err := q.dlq.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "replay %s: queued, but not removed from the dead letters: %v", id, err)
	}
	return nil
}

// ReplayAll replays every dead letter and returns how many it queued. A
// dead letter Replay refuses as EINVALID (unverifiable, undecodable) is
// left in place and named in the EINVALID error returned at the end; any
// other failure stops it.
func (q *Queue) ReplayAll(ctx context.Context) (int, error) {
	all, err := q.ListDLQ(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	var skipped []string
	for _, dj := range all {
		err := q.Replay(ctx, dj.ID)
		if ingestd.ErrorCode(err) == ingestd.EINVALID {
			skipped = append(skipped, dj.ID)
			continue
		}
		if err != nil {
			return n, err
		}
		n++
	}
	if len(skipped) > 0 {
		return n, ingestd.Errorf(ingestd.EINVALID, "%d dead letters cannot be replayed and were left in place (ids %s): replay one to see why", len(skipped), strings.Join(skipped, ", "))
	}
	return n, nil
}
