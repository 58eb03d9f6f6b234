package postgres

import (
	"sync"
	"time"
)

// cached is a value read from the database and kept for a while: the
// planner's reader statistics, the list of reader indexes. One caller
// reads it again once it is older than its age, outside the lock; the
// others go on with the value before (the zero value before the first
// read). A read that fails keeps the value before, so that nothing that
// depends on it fails a search.
type cached[T any] struct {
	mu    sync.Mutex
	until time.Time
	val   T
}

// load returns the value, read by fetch when it is older than age.
func (c *cached[T]) load(age time.Duration, fetch func() (T, error)) T {
	c.mu.Lock()
	val := c.val
	if time.Now().Before(c.until) { // the cache's age, not a stored time
		c.mu.Unlock()
		return val
	}
	c.until = time.Now().Add(age)
	c.mu.Unlock()
	fresh, err := fetch()
	if err != nil {
		return val
	}
	c.mu.Lock()
	c.val = fresh
	c.mu.Unlock()
	return fresh
}

// forget makes the next load read the value again.
func (c *cached[T]) forget() {
	c.mu.Lock()
	c.until = time.Time{}
	c.mu.Unlock()
}
