// Package clock holds the time helpers more than one package needs, so
// that each is written once.
package clock

import (
	"context"
	"time"
)

// Sleep waits for d, or until ctx ends: it returns nil after d and
// ctx.Err() when ctx ended first. A d of zero or less returns at once
// (ctx.Err(), which is nil while ctx lives).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
