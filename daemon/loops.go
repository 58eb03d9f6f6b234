package daemon

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/jobs"
)

// warm loads the store's indexes so the first query does not pay for it.
func (d *Daemon) warm(ctx context.Context) {
	if d.maint == nil {
		return
	}
	start := time.Now()
	if err := d.maint.Warm(ctx); err != nil {
		d.log.Warn("store.warm_failed", "error", err.Error())
		return
	}
	d.log.Info("store.warm", "took", time.Since(start).Round(time.Millisecond).String())
}

// optimizeLoop optimizes the store every period in which documents were
// written, so the next start finds its index snapshot current without
// paying for one on every write.
func (d *Daemon) optimizeLoop(ctx context.Context, writes *atomic.Int64, period time.Duration) {
	if d.maint == nil {
		return
	}
	every(ctx, period, func() {
		if writes.Swap(0) == 0 {
			return
		}
		start := time.Now()
		if err := d.maint.Optimize(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("store.optimize_failed", "error", err.Error())
			return
		}
		d.log.Info("store.optimize", "took", time.Since(start).Round(time.Millisecond).String())
	})
}

// followLoop brings the store's in-memory indexes up to date every period
// (one PRAGMA when nothing changed), so that what another process erased
// leaves this process's memory within a period even when no search comes
// to catch it up.
func (d *Daemon) followLoop(ctx context.Context, period time.Duration) {
	if d.maint == nil {
		return
	}
	every(ctx, period, func() {
		if err := d.maint.Warm(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("store.catch_up_failed", "error", err.Error())
		}
	})
}

// every calls fn each period until ctx ends (not at once: the first call
// is one period in).
func every(ctx context.Context, period time.Duration, fn func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// watch runs the Watcher of every installation that has one (IMAP with
// idle: true): a change at the source queues a sync pass within seconds
// instead of at the next interval.
func (d *Daemon) watch(ctx context.Context, wg *sync.WaitGroup, q *jobs.Queue) {
	for _, id := range d.order {
		w := d.insts[id].Connector.Watcher
		if w == nil {
			continue
		}
		wg.Go(func() {
			err := w.Watch(ctx, func() {
				if err := d.QueueSync(ctx, q, id, ingestd.TriggerWatch); err != nil && ctx.Err() == nil {
					d.log.Warn("watch.queue_failed", "installation", id, "error", err.Error())
				}
			})
			if err != nil {
				d.log.Warn("watch.stopped", "installation", id, "error", err.Error())
			}
		})
	}
}
