package daemon

import (
	"context"
	"slices"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/jobs"
	"github.com/ingestd/ingestd/pipeline"
)

// TriggerUnknown records a pass whose job names no trigger this build
// knows (queued by an older version).
const TriggerUnknown = "unknown"

// JobHandler runs one job in a worker. A sync job fans out: it publishes
// one item job per new or changed document, so every worker shares the
// pass; item and delete jobs go to the pipeline. Every sync pass is
// recorded in the history, a failed one with its error: one that fails
// for good (EINVALID, a refused login) is then dead-lettered, and the
// history is where its failure shows.
func (d *Daemon) JobHandler(q *jobs.Queue) jobs.Handler {
	return func(ctx context.Context, job ingestd.Job) error {
		if job.Kind != ingestd.JobSync {
			return d.pipe.Handle(ctx, job, d)
		}
		inst, src, err := d.Installation(job.Installation)
		if err != nil {
			return err
		}
		sum, err := d.pipe.SyncDispatch(ctx, inst, src, nil, q.Publish)
		d.recordPass(ctx, sum, job.Trigger, err)
		return err
	}
}

// Sync runs one pass of the installation in this process, reporting to
// prog (nil for none), and records it in the history under trigger. A
// pass that changed the store is a bulk write: the store then readies
// itself for the searches that follow.
func (d *Daemon) Sync(ctx context.Context, id, trigger string, prog pipeline.Progress) (pipeline.Summary, error) {
	inst, src, err := d.Installation(id)
	if err != nil {
		return pipeline.Summary{}, err
	}
	sum, err := d.pipe.Sync(ctx, inst, src, prog)
	d.recordPass(ctx, sum, trigger, err)
	if d.maint != nil && err == nil && sum.Added+sum.Changed+sum.Deleted > 0 {
		if oerr := d.maint.Optimize(ctx); oerr != nil {
			d.log.Warn("store.optimize_failed", "error", oerr.Error())
		}
	}
	return sum, err
}

// recordPass adds a finished pass to the sync history. A pass stopped
// because its context ended (serve draining, a lost lease, Ctrl-C) is not
// recorded: it did not fail, and its job runs again. Failing to record is
// logged; the pass's own result stands.
func (d *Daemon) recordPass(ctx context.Context, sum pipeline.Summary, trigger string, err error) {
	if ctx.Err() != nil {
		return
	}
	if !slices.Contains(ingestd.Triggers, trigger) {
		trigger = TriggerUnknown
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if rerr := d.health.Record(ctx, sum.Run(trigger, err)); rerr != nil {
		d.log.Warn("sync.record_failed", "installation", sum.Installation, "error", rerr.Error())
	}
}
