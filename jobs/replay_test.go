package jobs

import (
	"context"
	"testing"
	"time"

	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/connectors/webhook/webhooktest"
)

var _ webhook.Replays = (*Replays)(nil)

// TestReplaysConformance runs the replay-memory suite on the KV bucket,
// each handle on its own connection (as separate processes are).
func TestReplaysConformance(t *testing.T) {
	webhooktest.RunReplays(t, func(t *testing.T) func() webhook.Replays {
		e := MustEmbedded(t)
		return func() webhook.Replays {
			r, err := MustQueue(t, e, nil).OpenReplays(context.Background(), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	})
}

// TestOpenMakesTheReplayBucket: with ReplayAge, Open makes the replay
// bucket with the queue's streams (so OpenWait waits for it as for them,
// through a leader election) and Replays returns it; without, there is
// none.
func TestOpenMakesTheReplayBucket(t *testing.T) {
	e := MustEmbedded(t)
	if r := MustQueue(t, e, nil).Replays(); r != nil {
		t.Fatalf("a queue opened without ReplayAge has replay memory %v", r)
	}
	r := MustQueue(t, e, &Options{ReplayAge: 3 * time.Hour}).Replays()
	if r == nil {
		t.Fatal("a queue opened with ReplayAge has no replay memory")
	}
	st, err := r.kv.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := st.TTL(), 3*time.Hour; got != want {
		t.Errorf("the bucket keeps keys %s, want %s", got, want)
	}
	now := time.Now()
	if err := r.Remember(t.Context(), "digest", now, time.Hour); err != nil {
		t.Fatal(err)
	}
	if seen, err := r.Seen(t.Context(), "digest", now); err != nil || !seen {
		t.Errorf("Seen = %v, %v after Remember", seen, err)
	}
}
