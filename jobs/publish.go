package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ingestd/ingestd"
)

// Publish queues the job on ingestd.jobs.<kind>.<installation> and returns
// once JetStream has stored it (the PubAck): that is what lets a webhook
// answer 202 only after the job is durable.
//
// msgID becomes the Nats-Msg-Id header; a second publish with the same id
// inside the Duplicates window is dropped by the server and Publish
// returns nil. Use an id that names the work, not the attempt: the
// document id and content hash for an item job, the delivery id for a
// webhook, "sync:<installation>:<bucket start unix>" for a scheduled pass.
// An empty msgID disables dedupe for this job.
//
// With a job key the job is signed (HeaderSignature) over the subject,
// msgID and the exact body bytes.
//
// Returns EINVALID for a kind or installation that cannot be a subject
// token, ETOOLARGE for a job larger than MaxMsgSize, EUNAVAILABLE when the
// stream is full or JetStream does not answer.
func (q *Queue) Publish(ctx context.Context, job ingestd.Job, msgID string) error {
	_, err := q.publish(ctx, job, msgID)
	return err
}

// publish is Publish reporting whether the server dropped a duplicate.
func (q *Queue) publish(ctx context.Context, job ingestd.Job, msgID string) (duplicate bool, err error) {
	subject, err := JobSubject(job.Kind, job.Installation)
	if err != nil {
		return false, err
	}
	data, err := json.Marshal(job)
	if err != nil {
		return false, fmt.Errorf("encode job: %w", err)
	}
	if len(data) > int(q.o.MaxMsgSize) {
		return false, ingestd.Errorf(ingestd.ETOOLARGE, "job %s is %d bytes; the limit (nats.max_msg_size) is %d", subject, len(data), q.o.MaxMsgSize)
	}
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	if sig := q.keys.sign(subject, msgID, data); sig != "" {
		m.Header.Set(HeaderSignature, sig)
	}
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	ack, err := q.js.PublishMsg(ctx, m, opts...)
	if err != nil {
		return false, publishErr(subject, err)
	}
	return ack.Duplicate, nil
}

// StoredEvent is the body of an ingestd.events.document.stored message.
type StoredEvent struct {
	ID           string         `json:"id"`
	Installation string         `json:"installation"`
	Tier         ingestd.Tier   `json:"tier"`
	ContentHash  string         `json:"content_hash"`
	Status       ingestd.Status `json:"status"`
	At           time.Time      `json:"at"`
}

// PublishStored announces a stored document on
// ingestd.events.document.stored, for the pipeline's OnStored hook. The
// message id is the document id, content hash and status, so a job that is
// redelivered after it stored announces it once.
//
// It does not wait for the server: events are notifications, and the
// document is stored whatever becomes of them. A publish the server
// refuses is logged (store.event_failed). Flush waits for the pending ones;
// a process that crashes may lose the last few events, never a document.
func (q *Queue) PublishStored(ctx context.Context, doc *ingestd.Document) error {
	ev := StoredEvent{ID: doc.ID, Installation: doc.Installation, Tier: doc.Tier,
		ContentHash: doc.ContentHash, Status: doc.Status, At: q.o.Now().UTC()}
	data, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	id := "stored:" + doc.ID + ":" + doc.ContentHash + ":" + string(doc.Status)
	if _, err := q.js.PublishMsgAsync(&nats.Msg{Subject: StoredSubject, Data: data}, jetstream.WithMsgID(id)); err != nil {
		return publishErr(StoredSubject, err)
	}
	return nil
}

// Flush waits until every event PublishStored sent was acknowledged or
// failed, or ctx is done.
func (q *Queue) Flush(ctx context.Context) error {
	select {
	case <-q.js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("flush events: %d pending: %w", q.js.PublishAsyncPending(), ctx.Err())
	}
}
