// Package webhooktest is the conformance suite of webhook.Replays: every
// replay memory the intake can be given runs it.
package webhooktest

import (
	"context"
	"testing"
	"time"

	"github.com/ingestd/ingestd/connectors/webhook"
)

// Backing makes a fresh, empty replay memory and returns a function that
// opens a handle on it; handles opened from one backing share what they
// remember (as two processes on one NATS do).
type Backing func(t *testing.T) (open func() webhook.Replays)

var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// RunReplays runs the conformance cases against memories made by newBacking.
func RunReplays(t *testing.T, newBacking Backing) {
	ctx := context.Background()
	const key = "gh.gh.4f1c0ffee2b8a0d9e15f0b3d1c2e9a7f6b5d4c3b2a1908f7e6d5c4b3a2918070"
	seen := func(t *testing.T, r webhook.Replays, key string, now time.Time) bool {
		t.Helper()
		ok, err := r.Seen(ctx, key, now)
		if err != nil {
			t.Fatalf("Seen: %v", err)
		}
		return ok
	}
	remember := func(t *testing.T, r webhook.Replays, key string, now time.Time, ttl time.Duration) {
		t.Helper()
		if err := r.Remember(ctx, key, now, ttl); err != nil {
			t.Fatalf("Remember: %v", err)
		}
	}

	t.Run("unknown key", func(t *testing.T) {
		r := newBacking(t)()
		if seen(t, r, key, t0) {
			t.Error("an empty memory has seen a key")
		}
	})
	t.Run("remembered for its ttl", func(t *testing.T) {
		r := newBacking(t)()
		remember(t, r, key, t0, time.Hour)
		for _, tt := range []struct {
			at   time.Time
			want bool
		}{{t0, true}, {t0.Add(time.Hour - time.Nanosecond), true}, {t0.Add(time.Hour), false}, {t0.Add(48 * time.Hour), false}} {
			if got := seen(t, r, key, tt.at); got != tt.want {
				t.Errorf("Seen at %s = %v, want %v", tt.at, got, tt.want)
			}
		}
	})
	t.Run("keys are independent", func(t *testing.T) {
		r := newBacking(t)()
		remember(t, r, key, t0, time.Hour)
		if seen(t, r, key+"0", t0) || seen(t, r, "other.gh.00", t0) {
			t.Error("another key reads as seen")
		}
	})
	t.Run("remembering again replaces", func(t *testing.T) {
		r := newBacking(t)()
		remember(t, r, key, t0, time.Hour)
		remember(t, r, key, t0.Add(30*time.Minute), time.Hour)
		if !seen(t, r, key, t0.Add(80*time.Minute)) {
			t.Error("a key remembered again expired with its first memory")
		}
	})
	t.Run("shared by every handle", func(t *testing.T) {
		open := newBacking(t)
		a, b := open(), open()
		remember(t, a, key, t0, time.Hour)
		if !seen(t, b, key, t0.Add(time.Minute)) {
			t.Error("a second handle on the same memory has not seen the key")
		}
	})
}
