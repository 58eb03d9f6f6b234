package webhook

import (
	"context"
	"sync"
	"time"
)

// Replays remembers the deliveries the handler accepted, keyed on what
// their signature covers (never on an unsigned header), so the same
// signed bytes presented again are acknowledged and dropped. To protect
// anything it must be shared by every process serving the same
// installations and survive restarts: serve uses a JetStream KV bucket
// (jobs.Replays). MemoryReplays is the in-process default.
//
// Keys are 1 to 200 characters of [A-Za-z0-9_.-]. Errors mean the memory
// could not be read or written; the handler then answers 503 (Seen) so
// the sender retries, or logs (Remember) once the jobs are queued.
type Replays interface {
	// Seen reports whether key was remembered with a memory that runs
	// past now.
	Seen(ctx context.Context, key string, now time.Time) (bool, error)
	// Remember records key from now for ttl, replacing what was there.
	Remember(ctx context.Context, key string, now time.Time, ttl time.Duration) error
}

// MemoryReplays is a Replays in this process's memory: right for tests
// and a single process that never restarts, blind to a replay sent to
// another process or after a restart. Safe for concurrent use; expired
// keys are swept as time passes.
type MemoryReplays struct {
	mu        sync.Mutex
	until     map[string]time.Time
	nextSweep time.Time
}

var _ Replays = (*MemoryReplays)(nil)

// NewMemoryReplays returns an empty in-process replay memory.
func NewMemoryReplays() *MemoryReplays {
	return &MemoryReplays{until: map[string]time.Time{}}
}

// Seen reports whether key is remembered past now.
func (m *MemoryReplays) Seen(_ context.Context, key string, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if now.After(m.nextSweep) {
		for k, u := range m.until {
			if !u.After(now) {
				delete(m.until, k)
			}
		}
		m.nextSweep = now.Add(time.Minute)
	}
	u, ok := m.until[key]
	return ok && u.After(now), nil
}

// Remember records key until now+ttl.
func (m *MemoryReplays) Remember(_ context.Context, key string, now time.Time, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.until[key] = now.Add(ttl)
	return nil
}
