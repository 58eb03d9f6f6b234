package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/jobs"
	"github.com/ingestd/ingestd/retrieval/api"
)

// webhooks returns the intake handler for every webhook installation, or
// nil when none is configured. A delivery is answered 202 only once its
// jobs are acknowledged by JetStream (durably queued); the delivery id is
// the message id, so a sender's retry is dropped as a duplicate.
func (a *app) webhooks(q *jobs.Queue) (http.Handler, error) {
	eps := map[string]webhook.Endpoint{}
	for id, src := range a.sources {
		if ep, ok := webhook.EndpointOf(src); ok {
			eps[id] = ep
		}
	}
	if len(eps) == 0 {
		return nil, nil
	}
	return webhook.New(webhook.Options{
		Endpoints:    eps,
		Enqueue:      q.Publish,
		Logger:       a.log,
		Now:          time.Now,
		MaxBodyBytes: api.MaxWebhookBodyBytes,
	})
}

// addURL fetches one URL into a url installation in the foreground and
// ingests what it yields; the guard's refusal comes back as EINVALID.
func (a *app) addURL(ctx context.Context, installation, rawURL string) ([]string, error) {
	inst, src, err := a.Installation(installation)
	if err != nil {
		return nil, err
	}
	f, ok := src.(urlFetcher)
	if !ok {
		return nil, ingestd.Errorf(ingestd.EINVALID, "installation %q is of kind %s, which does not take URLs", installation, inst.Kind)
	}
	items, err := f.Fetch(ctx, rawURL)
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
