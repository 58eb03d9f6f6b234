package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/jobs"
)

var _ webhook.Replays = (*jobs.Replays)(nil)

// webhooks returns the intake handler for every installation with an
// Intake (the webhook kind's), or nil when none is configured. A delivery is answered 202 only once its
// jobs are acknowledged by JetStream (durably queued). Accepted deliveries
// are remembered in the JetStream replay bucket, which every process on
// the NATS shares and which survives restarts; unverified bodies past
// their first 64 KiB wait for their signature check in <data_dir>/spool.
func (a *app) webhooks(ctx context.Context, q *jobs.Queue) (http.Handler, error) {
	eps := map[string]webhook.Endpoint{}
	for id, c := range a.sources {
		if c.Intake != nil {
			eps[id] = *c.Intake
		}
	}
	if len(eps) == 0 {
		return nil, nil
	}
	replays := q.Replays() // made by openQueue (jobs.Options.ReplayAge = replayAge)
	spool := filepath.Join(a.cfg.Path(a.cfg.DataDir), "spool")
	if err := private.MkdirAll(spool); err != nil {
		return nil, fmt.Errorf("webhook spool: %w", err)
	}
	return webhook.New(webhook.Options{
		Endpoints:    eps,
		Enqueue:      a.unlessErased(q.Publish),
		Replays:      replays,
		Logger:       a.log,
		Now:          time.Now,
		MaxBodyBytes: api.MaxWebhookBodyBytes,
		SpoolDir:     spool,
	})
}

// replayAge is how long the replay bucket keeps a key: past the longest
// replay window and signature tolerance of the configured intakes, plus an
// hour; 0 when no installation takes webhooks.
func (a *app) replayAge() time.Duration {
	var keep time.Duration
	intakes := 0
	for _, c := range a.sources {
		if c.Intake != nil {
			intakes++
			keep = max(keep, c.Intake.ReplayWindow, 2*c.Intake.Tolerance)
		}
	}
	if intakes == 0 {
		return 0
	}
	return keep + time.Hour
}

// addURL reads one reference an API client sent into an installation whose
// ItemReader takes remote references (a url installation: a URL, through
// its guard) and ingests what it yields; the guard's refusal comes back as
// EINVALID.
func (a *app) addURL(ctx context.Context, installation, rawURL string) ([]string, error) {
	inst, _, err := a.Installation(installation)
	if err != nil {
		return nil, err
	}
	c := a.sources[inst.ID]
	if c.Reader == nil || !c.RemoteRefs {
		return nil, ingestd.Errorf(ingestd.EINVALID, "installation %q is of kind %s, which does not take URLs", installation, inst.Kind)
	}
	items, err := c.Reader.ReadOne(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(items))
	for _, it := range items {
		if _, err := a.pipe.Ingest(ctx, inst, it); err != nil {
			return ids, fmt.Errorf("%s: %w", it.ExternalID, err)
		}
		ids = append(ids, ingestd.DocumentID(inst.ID, it.ExternalID))
	}
	return ids, nil
}

// unlessErased wraps publish so that an item job whose item was erased is
// dropped before it is queued: the pipeline would skip it, but its text
// would have reached the job stream's files. The intake answers as if it
// were queued; the pass that meets it again counts it "skipped: erased".
func (a *app) unlessErased(publish func(ctx context.Context, job ingestd.Job, msgID string) error) func(ctx context.Context, job ingestd.Job, msgID string) error {
	return func(ctx context.Context, job ingestd.Job, msgID string) error {
		erased, err := a.gate.ErasedJob(ctx, job)
		if err != nil {
			return err
		}
		if erased {
			a.log.Info("webhook.item_erased", "installation", job.Installation)
			return nil
		}
		return publish(ctx, job, msgID)
	}
}
