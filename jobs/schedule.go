package jobs

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ingestd/ingestd"
)

// SyncMsgID is the message id of the scheduled sync pass of the
// installation for the interval bucket that starts at bucket.
func SyncMsgID(installation string, bucket time.Time) string {
	return "sync:" + installation + ":" + strconv.FormatInt(bucket.Unix(), 10)
}

// bucketStart is the start of the interval bucket t falls in: buckets are
// aligned to the Unix epoch, so every scheduler computes the same ones
// whatever time it started. Intervals below a second count as a second.
func bucketStart(t time.Time, interval time.Duration) time.Time {
	secs := max(int64(interval/time.Second), 1)
	u := t.Unix()
	return time.Unix(u-u%secs, 0).UTC()
}

// NextScheduled is when the scheduler queues the next pass of an
// installation synced every interval, after now: the start of the next
// interval bucket (intervals are counted in whole seconds, at least one).
// Zero for an interval of 0, which is never scheduled.
func NextScheduled(interval time.Duration, now time.Time) time.Time {
	if interval <= 0 {
		return time.Time{}
	}
	iv := max(interval.Truncate(time.Second), time.Second)
	return bucketStart(now, iv).Add(iv)
}

// ScheduleOnce queues the sync pass that is due at now for each
// installation with an Interval, unless that bucket was queued already.
// It returns how many jobs it queued (a publish the server dropped as a
// duplicate does not count).
//
// Every instance may call it at the same time: two things keep it to one
// job per (installation, bucket). The message id SyncMsgID makes the
// server drop concurrent publishes inside the Duplicates window, which
// must therefore exceed the clock skew between instances; and the bucket
// is recorded in the INGESTD_SCHEDULE bucket, so an instance that starts
// (or wakes) later in the bucket, after the window, does not queue it
// again. A scheduler that crashes between the publish and the record
// costs at most one extra, harmless pass.
func (q *Queue) ScheduleOnce(ctx context.Context, insts []ingestd.Installation, now time.Time) (int, error) {
	queued := 0
	var errs []error
	for _, inst := range insts {
		if inst.Interval <= 0 {
			continue
		}
		b := bucketStart(now, inst.Interval)
		key := "sched." + inst.ID
		if err := CheckToken("installation id", inst.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		if last, _, err := q.mark(ctx, key); err != nil {
			errs = append(errs, err)
			continue
		} else if last >= b.Unix() {
			continue
		}
		dup, err := q.publish(ctx, ingestd.Job{Kind: ingestd.JobSync, Installation: inst.ID, Trigger: ingestd.TriggerSchedule}, SyncMsgID(inst.ID, b))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !dup {
			queued++
		}
		if err := q.setMark(ctx, key, b.Unix()); err != nil {
			errs = append(errs, err)
		}
	}
	return queued, errors.Join(errs...)
}

// mark reads the last bucket queued under key (0 if none).
func (q *Queue) mark(ctx context.Context, key string) (int64, uint64, error) {
	e, err := q.marks.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, ingestd.Errorf(ingestd.EUNAVAILABLE, "schedule mark %s: %v", key, err)
	}
	v, _ := strconv.ParseInt(string(e.Value()), 10, 64)
	return v, e.Revision(), nil
}

// setMark raises the mark under key to bucket; it never lowers it, and a
// concurrent writer with a later bucket wins.
func (q *Queue) setMark(ctx context.Context, key string, bucket int64) error {
	val := []byte(strconv.FormatInt(bucket, 10))
	for range 5 {
		last, rev, err := q.mark(ctx, key)
		if err != nil {
			return err
		}
		if last >= bucket {
			return nil
		}
		if rev == 0 {
			_, err = q.marks.Create(ctx, key, val)
		} else {
			_, err = q.marks.Update(ctx, key, val, rev)
		}
		if err == nil {
			return nil
		}
	}
	return ingestd.Errorf(ingestd.ECONFLICT, "schedule mark %s: too many concurrent writers", key)
}

// Schedule runs ScheduleOnce now and at every bucket boundary of every
// installation's Interval until ctx is done; now is the clock (time.Now in
// production). It is leaderless: run it in every instance. Errors are
// logged and retried at the next wake-up, at most a minute later.
func (q *Queue) Schedule(ctx context.Context, insts []ingestd.Installation, now func() time.Time) {
	if now == nil {
		now = time.Now
	}
	for {
		t := now()
		if n, err := q.ScheduleOnce(ctx, insts, t); err != nil && ctx.Err() == nil {
			q.log.Warn("schedule.failed", "error", err.Error())
		} else if n > 0 {
			q.log.Info("schedule.queued", "jobs", n)
		}
		next := time.Duration(0)
		for _, inst := range insts {
			if inst.Interval <= 0 {
				continue
			}
			d := NextScheduled(inst.Interval, t).Sub(t)
			if next == 0 || d < next {
				next = d
			}
		}
		if next == 0 {
			return // nothing is periodic
		}
		next = min(next, time.Minute) + 10*time.Millisecond
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		}
	}
}
