package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ingestd/ingestd"
)

// ReplayBucket holds the webhook intake's memory of accepted deliveries.
const ReplayBucket = "INGESTD_WEBHOOK_REPLAY"

// Replays is the webhook replay memory in a JetStream KV bucket: every
// process on the same NATS shares it, and it is on disk, so a replay sent
// to another api process or after a restart is still known. A key's
// value is the time its memory ends (unix nanoseconds), compared with the
// caller's clock; the bucket's max age only clears old keys away.
// Safe for concurrent use.
type Replays struct {
	kv jetstream.KeyValue
}

// Replays returns the replay memory Open made (Options.ReplayAge), or nil
// when none was asked for.
func (q *Queue) Replays() *Replays { return q.replays }

// OpenReplays creates or updates the replay bucket. maxAge is how long
// the server keeps any key (at least the longest replay window in use;
// default 72h); like every bucket setting, the last process to start
// wins. Returns the server's error, wrapped, if the bucket cannot be made
// (OpenWait tells a transient one from the rest).
func (q *Queue) OpenReplays(ctx context.Context, maxAge time.Duration) (*Replays, error) {
	if maxAge <= 0 {
		maxAge = 72 * time.Hour
	}
	kv, err := q.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      ReplayBucket,
		Description: "ingestd webhook intake: digests of accepted signed deliveries",
		History:     1,
		TTL:         maxAge,
		Storage:     jetstream.FileStorage,
		Replicas:    q.o.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("kv %s: %w", ReplayBucket, err)
	}
	return &Replays{kv: kv}, nil
}

// Seen reports whether key is remembered past now. A value this code did
// not write reads as forgotten (the next Remember replaces it). Returns
// EUNAVAILABLE when the bucket does not answer.
func (r *Replays) Seen(ctx context.Context, key string, now time.Time) (bool, error) {
	e, err := r.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, ingestd.Errorf(ingestd.EUNAVAILABLE, "replay memory: %v", err)
	}
	until, err := strconv.ParseInt(string(e.Value()), 10, 64)
	if err != nil {
		return false, nil
	}
	return time.Unix(0, until).After(now), nil
}

// Remember records key until now+ttl. Returns EUNAVAILABLE when the
// bucket does not answer.
func (r *Replays) Remember(ctx context.Context, key string, now time.Time, ttl time.Duration) error {
	if _, err := r.kv.Put(ctx, key, []byte(strconv.FormatInt(now.Add(ttl).UnixNano(), 10))); err != nil {
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "replay memory: %v", err)
	}
	return nil
}
