// Package jobs carries ingest jobs on NATS JetStream: the subjects, the
// streams and the shared durable consumer, the embedded server, the
// publisher (with Nats-Msg-Id dedupe), the worker loop (in-progress acks,
// nak with backoff, dead letters), the leaderless scheduler and the
// per-installation sync lease. OpenWait opens it at start, waiting out a
// cluster that has no JetStream leader yet; the queue's state is exported
// as Prometheus metrics (metrics.go).
//
// It moves jobs; it never ingests, stamps or fences anything itself (that is
// package pipeline, behind the handler RunWorker is given) and never reads
// configuration or the environment (package main passes Options).
//
// A job is believed for what it proves, nothing more: with a job key
// (Options.JobKey) every publish is signed over the subject, message id
// and body, and a worker refuses a job it cannot verify; a worker also
// refuses a job whose subject and body name different jobs, or whose
// installation its process does not configure (WorkerOptions.Configured).
// A refused job is a dead letter with its reason, never a handler call.
//
// Subjects:
//
//	ingestd.jobs.<kind>.<installation>   jobs (stream INGESTD_JOBS, work queue)
//	ingestd.dlq.<kind>.<installation>    dead letters (stream INGESTD_DLQ)
//	ingestd.events.document.stored       stored-document events (stream INGESTD_EVENTS)
//
// Installation ids and job kinds become subject tokens and KV keys, so they
// must match [A-Za-z0-9_-]{1,128} (see CheckToken): a dot, a wildcard or a
// space would change the subject's meaning.
package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
)

// Stream, consumer and bucket names, and subject prefixes.
const (
	JobsStream     = "INGESTD_JOBS"
	DLQStream      = "INGESTD_DLQ"
	EventsStream   = "INGESTD_EVENTS"
	WorkerConsumer = "ingestd-workers"
	LeaseBucket    = "INGESTD_LEASES"
	ScheduleBucket = "INGESTD_SCHEDULE"

	JobsPrefix    = "ingestd.jobs."
	DLQPrefix     = "ingestd.dlq."
	StoredSubject = "ingestd.events.document.stored"
)

// Headers set on dead letters.
const (
	HeaderError      = "Ingestd-Error"
	HeaderSubject    = "Ingestd-Subject"
	HeaderDeliveries = "Ingestd-Deliveries"
	HeaderMsgID      = "Ingestd-Msg-Id"
	HeaderFailedAt   = "Ingestd-Failed-At"
	// HeaderReason is set on the dead letter of a refused job: one of the
	// Reason constants.
	HeaderReason = "Ingestd-Reason"
)

// Options configures a Queue; the zero value of every field means its
// default. Every stream, consumer and bucket is created or updated to these
// settings when a Queue opens, so the last process to start wins a change.
type Options struct {
	// Replicas of every stream and bucket: 1 (default) for a single server
	// or the embedded one, 3 for a three-node cluster.
	Replicas int
	// MaxDeliver is how many times a job is delivered before it is a dead
	// letter (default 5). A handler error coded EINVALID is a dead letter
	// at once: retrying cannot fix it.
	MaxDeliver int
	// AckWait is how long a delivered job may go without an ack or an
	// in-progress signal before it is redelivered (default 30s). Workers
	// signal in-progress every AckWait/3 while a job runs, so this bounds
	// how long a crashed worker's job waits, not how long a job may take.
	AckWait time.Duration
	// BackOff is the nak delay after the nth failed delivery (the last
	// entry repeats); default 5s, 30s, 2m, 5m. It is applied by the worker
	// with NakWithDelay rather than as the consumer's server-side BackOff,
	// which would replace AckWait for every delivery.
	BackOff []time.Duration
	// MaxMsgSize is the largest job body (default 1 MiB, the default
	// max_payload of a NATS server). Publish refuses larger jobs with
	// ETOOLARGE before they reach the server.
	MaxMsgSize int32
	// MaxBytes caps the jobs stream (default 1 GiB). The stream discards
	// new messages when full, so Publish returns EUNAVAILABLE ("job queue
	// is full") instead of losing old jobs.
	MaxBytes int64
	// Duplicates is the Nats-Msg-Id dedupe window of the jobs stream
	// (default 2m): a second publish with the same id inside it is
	// dropped. It must cover the clock skew between schedulers and the
	// retry time of a publisher.
	Duplicates time.Duration
	// EventsMaxAge is how long stored-document events are kept (default 24h).
	EventsMaxAge time.Duration
	// LeaseTTL is how long a sync lease lives without a refresh (default
	// 2m). A holder refreshes it every LeaseTTL/3; a crashed holder's lease
	// expires after at most LeaseTTL.
	LeaseTTL time.Duration
	// ReplayAge, when positive, makes Open also create or update the
	// webhook replay bucket (see Replays) with this max age, under the
	// same wait as the streams: an intake's memory is part of the queue it
	// feeds, and a start during a leader election waits for both.
	ReplayAge time.Duration
	// Holder names this process in leases (default a random id).
	Holder string
	// JobKey signs every job this queue publishes and verifies every job
	// its workers run: a worker dead-letters a job without a valid
	// signature (ReasonUnsigned, ReasonBadSignature) and Replay refuses a
	// dead letter that was never validly signed. Every process of a
	// deployment needs the same key. Empty (the default) turns signing off:
	// right only when nothing outside the process can publish (the
	// embedded server without a listener). At least MinJobKeyBytes.
	JobKey []byte
	// AcceptJobKeys are further keys workers accept but never sign with,
	// for a rotation: add the new key here everywhere, then make it the
	// JobKey (and the old one accepted) everywhere, then drop the old one.
	AcceptJobKeys [][]byte
	// Registerer receives the queue's metrics (see metrics.go: jobs
	// processed, refused and their durations, the last successful sync,
	// and the queue's depth, redeliveries and dead letters read from
	// JetStream at each scrape); nil means no metrics.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Now        func() time.Time
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
	}
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	if len(c.BackOff) == 0 {
		c.BackOff = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 5 * time.Minute}
	}
	if c.MaxMsgSize <= 0 {
		c.MaxMsgSize = 1 << 20
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 30
	}
	if c.Duplicates <= 0 {
		c.Duplicates = 2 * time.Minute
	}
	if c.EventsMaxAge <= 0 {
		c.EventsMaxAge = 24 * time.Hour
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 2 * time.Minute
	}
	if c.Holder == "" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		c.Holder = "w-" + hex.EncodeToString(b[:])
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Queue is the job transport over one NATS connection. It is safe for
// concurrent use. Close does not close the connection it was given.
type Queue struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	jobs   jetstream.Stream
	dlq    jetstream.Stream
	cons   jetstream.Consumer
	leases jetstream.KeyValue
	marks  jetstream.KeyValue
	// replays is the webhook replay memory; nil without Options.ReplayAge.
	replays *Replays
	o       Options
	log     *slog.Logger
	keys    keys
	m       *metrics
}

// Open creates or updates the streams, the shared consumer and the KV
// buckets (idempotent: every process may call it at start) and returns a
// Queue on nc. It fails if JetStream is not enabled on the server, and
// with EINVALID for a job key shorter than MinJobKeyBytes.
func Open(ctx context.Context, nc *nats.Conn, o *Options) (*Queue, error) {
	opts := o.withDefaults()
	k, err := checkKeys(opts.JobKey, opts.AcceptJobKeys)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(4096),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			log.Warn("store.event_failed", "subject", m.Subject, "error", err.Error())
		}))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	q := &Queue{nc: nc, js: js, o: opts, log: log, keys: k, m: m}
	if err := q.setup(ctx); err != nil {
		return nil, err
	}
	if opts.Registerer != nil {
		// The first queue of a registry reports the state; a second one
		// (tests) would report the same stream.
		var are prometheus.AlreadyRegisteredError
		if err := opts.Registerer.Register(stateCollector{q}); err != nil && !errors.As(err, &are) {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return q, nil
}

// setup creates or updates what the queue runs on: its streams, then
// the consumer and buckets that read them.
func (q *Queue) setup(ctx context.Context) error {
	if err := q.setupStreams(ctx); err != nil {
		return err
	}
	return q.setupState(ctx)
}

// setupStreams creates or updates the jobs, dead-letter and events
// streams.
func (q *Queue) setupStreams(ctx context.Context) error {
	var err error
	q.jobs, err = q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        JobsStream,
		Description: "ingestd jobs: sync passes, items, deletes",
		Subjects:    []string{JobsPrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    q.o.Replicas,
		Discard:     jetstream.DiscardNew,
		MaxBytes:    q.o.MaxBytes,
		MaxMsgSize:  q.o.MaxMsgSize + 4096, // room for headers
		Duplicates:  q.o.Duplicates,
	})
	if err != nil {
		return fmt.Errorf("stream %s: %w", JobsStream, err)
	}
	q.dlq, err = q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        DLQStream,
		Description: "ingestd dead letters: jobs that failed MaxDeliver times or permanently",
		Subjects:    []string{DLQPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    q.o.Replicas,
		Discard:     jetstream.DiscardOld,
		MaxBytes:    q.o.MaxBytes,
		Duplicates:  q.o.Duplicates,
	})
	if err != nil {
		return fmt.Errorf("stream %s: %w", DLQStream, err)
	}
	_, err = q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        EventsStream,
		Description: "ingestd events: documents stored",
		Subjects:    []string{"ingestd.events.>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    q.o.Replicas,
		Discard:     jetstream.DiscardOld,
		MaxAge:      q.o.EventsMaxAge,
		MaxBytes:    q.o.MaxBytes,
		Duplicates:  min(q.o.Duplicates, q.o.EventsMaxAge),
	})
	if err != nil {
		return fmt.Errorf("stream %s: %w", EventsStream, err)
	}
	return nil
}

// setupState creates or updates the workers' consumer, the lease and
// schedule buckets, and opens the replay guard when ReplayAge is set.
func (q *Queue) setupState(ctx context.Context) error {
	var err error
	q.cons, err = q.js.CreateOrUpdateConsumer(ctx, JobsStream, jetstream.ConsumerConfig{
		Durable:       WorkerConsumer,
		Description:   "ingestd workers (shared by every worker process)",
		FilterSubject: JobsPrefix + ">",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       q.o.AckWait,
		MaxDeliver:    q.o.MaxDeliver,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		Replicas:      q.o.Replicas,
	})
	if err != nil {
		return fmt.Errorf("consumer %s: %w", WorkerConsumer, err)
	}
	q.leases, err = q.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      LeaseBucket,
		Description: "ingestd sync leases: one running pass per installation",
		History:     1,
		TTL:         q.o.LeaseTTL,
		Storage:     jetstream.FileStorage,
		Replicas:    q.o.Replicas,
	})
	if err != nil {
		return fmt.Errorf("kv %s: %w", LeaseBucket, err)
	}
	q.marks, err = q.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      ScheduleBucket,
		Description: "ingestd scheduler: the last interval bucket queued per installation",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    q.o.Replicas,
	})
	if err != nil {
		return fmt.Errorf("kv %s: %w", ScheduleBucket, err)
	}
	if q.o.ReplayAge > 0 {
		if q.replays, err = q.OpenReplays(ctx, q.o.ReplayAge); err != nil {
			return err
		}
	}
	return nil
}

// Close waits for the stored-document events still in flight until they
// are acknowledged or ctx ends (then it returns ctx's error; the events
// are best effort). The connection belongs to the caller and stays open;
// workers stop with their context.
func (q *Queue) Close(ctx context.Context) error {
	return q.Flush(ctx)
}

// Options returns the settings the queue runs with, defaults filled in.
func (q *Queue) Options() Options { return q.o }

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// CheckToken returns EINVALID unless s may be a subject token and a KV key
// part: 1 to 128 characters of [A-Za-z0-9_-]. Installation ids and job
// kinds are checked with it before they become part of a subject.
func CheckToken(what, s string) error {
	if !tokenRE.MatchString(s) {
		return ingestd.Errorf(ingestd.EINVALID, "%s %q cannot travel on NATS: use 1 to 128 of A-Z a-z 0-9 _ -", what, s)
	}
	return nil
}

// JobSubject is the subject a job travels on.
func JobSubject(kind, installation string) (string, error) {
	if err := CheckToken("job kind", kind); err != nil {
		return "", err
	}
	if err := CheckToken("installation id", installation); err != nil {
		return "", err
	}
	return JobsPrefix + kind + "." + installation, nil
}

// publishErr translates a JetStream publish failure into an application
// error where the caller can act on it.
func publishErr(subject string, err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch {
		case apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum:
			return ingestd.Errorf(ingestd.ETOOLARGE, "publish %s: message exceeds the stream's max message size", subject)
		case strings.Contains(apiErr.Description, "maximum bytes exceeded") || strings.Contains(apiErr.Description, "maximum messages exceeded"):
			return ingestd.Errorf(ingestd.EUNAVAILABLE, "publish %s: job queue is full (stream %s at its max_bytes limit); add workers or raise nats.max_bytes", subject, JobsStream)
		}
	}
	if errors.Is(err, nats.ErrMaxPayload) {
		return ingestd.Errorf(ingestd.ETOOLARGE, "publish %s: message exceeds the server's max_payload", subject)
	}
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "publish %s: JetStream did not acknowledge: %v", subject, err)
	}
	return fmt.Errorf("publish %s: %w", subject, err)
}
