package pipeline

import (
	"context"

	"github.com/ingestd/ingestd"
)

// Installations finds a configured installation and its source by id;
// returns ENOTFOUND for an id that is not configured.
type Installations interface {
	Installation(id string) (ingestd.Installation, ingestd.Source, error)
}

// Handle runs one job: the seam between a job transport (in-process or
// NATS) and the pipeline. A sync job runs a whole pass; an item job ingests
// one item; a delete job tombstones one. An item or delete job with At set
// (a pushed event) goes through IngestAt or DeleteAt, so it cannot roll
// its document back. The error is nil when the job is done (including
// items refused as invalid, which retrying cannot fix and which are
// logged, and stale events), and non-nil when it should be retried.
func (p *Pipeline) Handle(ctx context.Context, job ingestd.Job, insts Installations) error {
	inst, src, err := insts.Installation(job.Installation)
	if err != nil {
		return err
	}
	switch job.Kind {
	case ingestd.JobSync:
		_, err := p.Sync(ctx, inst, src, nil)
		return err
	case ingestd.JobItem:
		if job.Item == nil {
			return ingestd.Errorf(ingestd.EINVALID, "item job for %q without an item", job.Installation)
		}
		var err error
		if job.At.IsZero() {
			_, err = p.Ingest(ctx, inst, *job.Item)
		} else {
			_, err = p.IngestAt(ctx, inst, *job.Item, job.At)
		}
		if ingestd.ErrorCode(err) == ingestd.EINVALID {
			p.log.Warn("ingest.item_failed", "installation", inst.ID, "external_id", job.Item.ExternalID, "reason", err.Error())
			return nil
		}
		return err
	case ingestd.JobDelete:
		if job.At.IsZero() {
			_, err := p.Delete(ctx, inst, job.ExternalID)
			return err
		}
		_, err := p.DeleteAt(ctx, inst, job.ExternalID, job.At)
		return err
	default:
		return ingestd.Errorf(ingestd.EINVALID, "unknown job kind %q", job.Kind)
	}
}
