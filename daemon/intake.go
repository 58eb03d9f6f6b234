package daemon

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/jobs"
	"github.com/ingestd/ingestd/pipeline"
)

var _ webhook.Replays = (*jobs.Replays)(nil)

// webhooks returns the intake handler for every installation with an
// Intake (the webhook kind's), or nil when none is configured. A delivery
// is answered 202 only once its jobs are acknowledged by JetStream
// (durably queued). Accepted deliveries are remembered in the JetStream
// replay bucket, which every process on the NATS shares and which
// survives restarts; unverified bodies past their first 64 KiB wait for
// their signature check in spool.
func (d *Daemon) webhooks(q *jobs.Queue, spool string) (http.Handler, error) {
	eps := map[string]webhook.Endpoint{}
	for id, inst := range d.insts {
		if c := inst.Connector; c.Intake != nil {
			eps[id] = *c.Intake
		}
	}
	if len(eps) == 0 {
		return nil, nil
	}
	if err := private.MkdirAll(spool); err != nil {
		return nil, fmt.Errorf("webhook spool: %w", err)
	}
	return webhook.New(webhook.Options{
		Endpoints:    eps,
		Enqueue:      d.unlessErased(q.Publish),
		Replays:      q.Replays(), // made by the queue (jobs.Options.ReplayAge = ReplayAge)
		Logger:       d.log,
		Now:          time.Now,
		MaxBodyBytes: api.MaxWebhookBodyBytes,
		SpoolDir:     spool,
	})
}

// ReplayAge is how long the replay bucket keeps a key: past the longest
// replay window and signature tolerance of the configured intakes, plus an
// hour; 0 when no installation takes webhooks.
func (d *Daemon) ReplayAge() time.Duration {
	var keep time.Duration
	intakes := 0
	for _, inst := range d.insts {
		if c := inst.Connector; c.Intake != nil {
			intakes++
			keep = max(keep, c.Intake.ReplayWindow, 2*c.Intake.Tolerance)
		}
	}
	if intakes == 0 {
		return 0
	}
	return keep + time.Hour
}

// AddURL reads one reference an API client sent into an installation
// whose ItemReader takes remote references (a url installation: a URL,
// through its guard) and ingests what it yields; the guard's refusal
// comes back as EINVALID, and so does an installation that takes no URLs.
func (d *Daemon) AddURL(ctx context.Context, installation, rawURL string) ([]string, error) {
	inst, _, err := d.Installation(installation)
	if err != nil {
		return nil, err
	}
	if c := d.insts[inst.ID].Connector; c.Reader == nil || !c.RemoteRefs {
		return nil, ingestd.Errorf(ingestd.EINVALID, "installation %q is of kind %s, which does not take URLs", installation, inst.Kind)
	}
	var ids []string
	err = d.Ingest(ctx, inst.ID, rawURL, func(it ingestd.Item, _ pipeline.Outcome) {
		ids = append(ids, ingestd.DocumentID(inst.ID, it.ExternalID))
	})
	if ids == nil {
		ids = []string{}
	}
	return ids, err
}

// Ingest reads one reference with the installation's ItemReader and
// ingests each item it yields in the foreground, telling each (when
// stored is set) as it is done. It stops at the first item that fails,
// naming it. Returns EINVALID for an installation whose kind reads no
// single item.
func (d *Daemon) Ingest(ctx context.Context, installation, ref string, stored func(ingestd.Item, pipeline.Outcome)) error {
	inst, _, err := d.Installation(installation)
	if err != nil {
		return err
	}
	r := d.insts[inst.ID].Connector.Reader
	if r == nil {
		return ingestd.Errorf(ingestd.EINVALID, "installation %q is of kind %s, which reads no single item", installation, inst.Kind)
	}
	items, err := r.ReadOne(ctx, ref)
	if err != nil {
		return err
	}
	for _, it := range items {
		o, err := d.pipe.Ingest(ctx, inst, it)
		if err != nil {
			return fmt.Errorf("%s: %w", it.ExternalID, err)
		}
		if stored != nil {
			stored(it, o)
		}
	}
	return nil
}

// unlessErased wraps publish so that an item job whose item was erased is
// dropped before it is queued: the pipeline would skip it, but its text
// would have reached the job stream's files. The intake answers as if it
// were queued; the pass that meets it again counts it "skipped: erased".
func (d *Daemon) unlessErased(publish func(ctx context.Context, job ingestd.Job, msgID string) error) func(ctx context.Context, job ingestd.Job, msgID string) error {
	return func(ctx context.Context, job ingestd.Job, msgID string) error {
		erased, err := d.gate.ErasedJob(ctx, job)
		if err != nil {
			return err
		}
		if erased {
			d.log.Info("webhook.item_erased", "installation", job.Installation)
			return nil
		}
		return publish(ctx, job, msgID)
	}
}
