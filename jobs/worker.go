package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ingestd/ingestd"
)

// Handler runs one job. Returning nil acks it. An error coded EINVALID is
// permanent: the job goes to the dead letters at once. Any other error
// naks it with the BackOff delay until it has been delivered MaxDeliver
// times, then it goes to the dead letters. The context is cancelled when
// the worker drains past its DrainTimeout or loses the job's sync lease.
type Handler func(ctx context.Context, job ingestd.Job) error

// WorkerOptions configures RunWorker.
type WorkerOptions struct {
	// Concurrency bounds the jobs this worker runs at once (default 4). It
	// fetches no more than it has free slots, so no job waits in a local
	// buffer while its ack timer runs.
	Concurrency int
	// DrainTimeout is how long in-flight jobs may keep running after the
	// worker's context is cancelled (default 20s). Jobs still running then
	// have their context cancelled and are nak'd for immediate
	// redelivery to another worker.
	DrainTimeout time.Duration
	// FetchWait is how long one pull waits for jobs (default 1s); it is
	// also the longest a drain waits before it stops pulling.
	FetchWait time.Duration
	// LeaseWait is how long a sync job waits for its installation's lease
	// while another worker runs a pass (default 2×LeaseTTL, long enough for
	// a crashed holder's lease to expire). It waits with in-progress acks;
	// after LeaseWait it is nak'd with the BackOff delay like a failure.
	LeaseWait time.Duration
	// Configured reports whether this process configures the installation
	// a job names; a job for one it does not is refused
	// (ReasonUnknownInstallation) before the handler sees it, whatever
	// signed it. Nil accepts every installation.
	Configured func(installation string) bool
}

// RunWorker consumes jobs from the shared durable consumer until ctx is
// done, running at most Concurrency at once, then drains: it stops
// pulling, lets in-flight jobs finish (up to DrainTimeout) and naks what
// is left, so nothing is lost. It returns nil after a drain.
//
// Before the handler sees a job the worker admits it: with a job key the
// signature must verify, the body must decode, the subject must be the one
// the body's kind and installation name, and Configured must know the
// installation. A job that fails any of these is refused: dead-lettered
// at once with its reason (HeaderReason), counted in
// ingestd_jobs_refused_total and logged as worker.job_refused.
//
// A sync job first takes its installation's lease (see AcquireLease),
// refreshing it every LeaseTTL/3 while the handler runs; if the lease is
// lost the handler's context is cancelled and the job is retried. While a
// job runs, the worker tells the server it is in progress every AckWait/3.
// Jobs that exhaust MaxDeliver without an ack because their worker
// crashed every time are moved to the dead letters too (from the server's
// max-deliveries advisory).
func (q *Queue) RunWorker(ctx context.Context, handler Handler, o WorkerOptions) error {
	o = o.withDefaults(q.o.LeaseTTL)
	// Handlers run under hard, which outlives ctx by DrainTimeout.
	hard, hardCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer hardCancel()

	adv, err := q.nc.QueueSubscribe(
		"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+JobsStream+"."+WorkerConsumer,
		"ingestd-dlq-mover",
		func(m *nats.Msg) { q.onMaxDeliveries(hard, m) })
	if err != nil {
		return fmt.Errorf("subscribe max-deliveries advisory: %w", err)
	}
	defer func() { _ = adv.Unsubscribe() }()

	w := &worker{q: q, h: handler, o: o, hard: hard, draining: ctx}
	sem := make(chan struct{}, o.Concurrency)
	var wg sync.WaitGroup
	backoff := time.Duration(0)
pull:
	for ctx.Err() == nil {
		n, ok := acquire(ctx, sem)
		if !ok {
			break pull
		}
		batch, err := q.cons.Fetch(n, jetstream.FetchMaxWait(o.FetchWait))
		got := 0
		if err == nil {
			for msg := range batch.Messages() {
				got++
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					w.handle(msg)
				}()
			}
			err = batch.Error()
		}
		for ; got < n; got++ {
			<-sem
		}
		if err != nil && !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
			backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
			if ctx.Err() == nil {
				q.log.Warn("worker.fetch_failed", "error", err.Error(), "retry_in", backoff.String())
			}
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
	}

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(o.DrainTimeout):
		q.log.Warn("worker.drain_timeout", "timeout", o.DrainTimeout.String())
		hardCancel()
		<-done
	}
	return nil
}

// withDefaults returns o with its zero fields set to their defaults; a
// lease is waited for twice leaseTTL.
func (o WorkerOptions) withDefaults(leaseTTL time.Duration) WorkerOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = 20 * time.Second
	}
	if o.FetchWait <= 0 {
		o.FetchWait = time.Second
	}
	if o.LeaseWait <= 0 {
		o.LeaseWait = 2 * leaseTTL
	}
	return o
}

// acquire takes one slot of sem, waiting for it unless ctx ends first
// (then ok is false), and then every other slot free at once: n slots,
// as many jobs as the worker fetches.
func acquire(ctx context.Context, sem chan struct{}) (n int, ok bool) {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return 0, false
	}
	n = 1
	for n < cap(sem) {
		select {
		case sem <- struct{}{}:
			n++
		default:
			return n, true
		}
	}
	return n, true
}

type worker struct {
	q        *Queue
	h        Handler
	o        WorkerOptions
	hard     context.Context // cancelled after the drain timeout
	draining context.Context // cancelled when the worker stops pulling
}

// handle runs one delivered job and settles it: ack, nak or dead letter.
func (w *worker) handle(msg jetstream.Msg) {
	q := w.q
	md, err := msg.Metadata()
	if err != nil {
		q.log.Error("worker.bad_message", "subject", msg.Subject(), "error", err.Error())
		_ = msg.Term()
		return
	}
	job, reason, err := w.admit(msg)
	if reason != "" {
		w.q.m.refused.WithLabelValues(strings.ReplaceAll(reason, " ", "_")).Inc()
		w.dead(msg, md, job, reason, err)
		return
	}

	ctx, cancel := context.WithCancel(w.hard)
	defer cancel()
	stop := w.keepAlive(ctx, msg)
	defer stop()

	if job.Kind == ingestd.JobSync {
		lease, err := w.lease(ctx, job.Installation)
		if err != nil {
			w.settle(msg, md, job, err)
			return
		}
		lost := w.refresh(ctx, lease, cancel)
		defer func() {
			lost()
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer rcancel()
			if err := lease.Release(rctx); err != nil {
				q.log.Warn("worker.lease_release_failed", "installation", job.Installation, "error", err.Error())
			}
		}()
	}
	began := time.Now()
	err = w.h(ctx, job)
	q.m.duration.WithLabelValues(job.Kind).Observe(time.Since(began).Seconds())
	w.settle(msg, md, job, err)
}

// admit checks a delivered job before any handler sees it and returns
// it, or the refusal reason and what was wrong. The body is decoded only
// once its signature verified.
func (w *worker) admit(msg jetstream.Msg) (job ingestd.Job, reason string, err error) {
	subject, hdr := msg.Subject(), msg.Headers()
	if w.q.keys.on() {
		switch r := w.q.keys.verify(subject, hdr.Get(nats.MsgIdHdr), msg.Data(), hdr.Get(HeaderSignature)); r {
		case "":
		case ReasonUnsigned:
			return job, r, fmt.Errorf("%s: the job carries no %s header; only a process holding the job key queues jobs", r, HeaderSignature)
		default:
			return job, r, fmt.Errorf("%s: the signature does not verify under any job key this worker accepts (forged, altered, moved from another subject, or signed with another key)", r)
		}
	}
	if err := json.Unmarshal(msg.Data(), &job); err != nil {
		return ingestd.Job{}, ReasonUndecodable, fmt.Errorf("%s: %v", ReasonUndecodable, err)
	}
	if want, err := JobSubject(job.Kind, job.Installation); err != nil || want != subject {
		return job, ReasonSubjectMismatch, fmt.Errorf("%s: the job travels on %s but its body is a %q job for installation %q", ReasonSubjectMismatch, subject, job.Kind, job.Installation)
	}
	if w.o.Configured != nil && !w.o.Configured(job.Installation) {
		return job, ReasonUnknownInstallation, fmt.Errorf("%s: installation %q is not configured in this worker", ReasonUnknownInstallation, job.Installation)
	}
	return job, "", nil
}

// settle acks, naks or dead-letters a job by the handler's result.
func (w *worker) settle(msg jetstream.Msg, md *jetstream.MsgMetadata, job ingestd.Job, err error) {
	q := w.q
	count := func(result string) { q.m.processed.WithLabelValues(job.Kind, result).Inc() }
	switch {
	case err == nil:
		count(ResultOK)
		if aerr := msg.Ack(); aerr != nil {
			// The job is done; the server redelivers it and the pipeline
			// finds it unchanged.
			q.log.Warn("worker.ack_failed", "subject", msg.Subject(), "error", aerr.Error())
		}
	case ingestd.ErrorCode(err) == ingestd.EINVALID:
		count(ResultDeadLetter)
		w.dead(msg, md, job, "", err)
	case w.draining.Err() != nil:
		count(ResultHandedBack)
		_ = msg.Nak() // draining: another worker takes it now
	case int(md.NumDelivered) >= q.o.MaxDeliver:
		count(ResultDeadLetter)
		w.dead(msg, md, job, "", err)
	default:
		count(ResultRetry)
		delay := q.o.BackOff[min(int(md.NumDelivered), len(q.o.BackOff))-1]
		q.log.Warn("worker.job_failed", "subject", msg.Subject(), "delivery", md.NumDelivered,
			"retry_in", delay.String(), "error", err.Error())
		_ = msg.NakWithDelay(delay)
	}
}

// lease takes the installation's sync lease, waiting up to LeaseWait while
// another holder has it.
func (w *worker) lease(ctx context.Context, installation string) (*Lease, error) {
	deadline := time.Now().Add(w.o.LeaseWait)
	poll := max(min(w.q.o.LeaseTTL/4, 5*time.Second), 50*time.Millisecond)
	for {
		l, err := w.q.AcquireLease(ctx, installation)
		if ingestd.ErrorCode(err) != ingestd.ECONFLICT || time.Now().After(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-w.draining.Done():
			return nil, fmt.Errorf("draining while waiting for the lease of %q: %w", installation, err)
		case <-time.After(poll):
		}
	}
}

// refresh renews the lease every LeaseTTL/3 and cancels the job if it is
// lost. The returned func stops it.
func (w *worker) refresh(ctx context.Context, l *Lease, cancel context.CancelFunc) (stop func()) {
	return every(ctx, w.q.o.LeaseTTL/3, func(ctx context.Context) bool {
		err := l.Refresh(ctx)
		switch {
		case ingestd.ErrorCode(err) == ingestd.ECONFLICT:
			w.q.log.Warn("worker.lease_lost", "lease", l.key)
			cancel()
			return false
		case err != nil && ctx.Err() == nil:
			w.q.log.Warn("worker.lease_refresh_failed", "lease", l.key, "error", err.Error())
		}
		return true
	})
}

// keepAlive signals in-progress every AckWait/3 until stopped.
func (w *worker) keepAlive(ctx context.Context, msg jetstream.Msg) (stop func()) {
	return every(ctx, w.q.o.AckWait/3, func(context.Context) bool {
		_ = msg.InProgress()
		return true
	})
}

// every runs fn each period (at least 10ms) in a goroutine until fn
// returns false or the returned stop func is called; stop waits for it.
func every(ctx context.Context, period time.Duration, fn func(ctx context.Context) bool) (stop func()) {
	tctx, tcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(period, 10*time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-tctx.Done():
				return
			case <-t.C:
				if !fn(tctx) {
					return
				}
			}
		}
	}()
	return func() { tcancel(); <-done }
}

// dead moves the job to ingestd.dlq.<kind>.<installation> with the error
// (and the refusal reason, for a refused job) and terminates the
// original. If the dead letter cannot be written the job is nak'd
// instead: it is never dropped.
func (w *worker) dead(msg jetstream.Msg, md *jetstream.MsgMetadata, job ingestd.Job, reason string, cause error) {
	q := w.q
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.hard), 10*time.Second)
	defer cancel()
	err := q.deadLetter(ctx, msg.Subject(), msg.Headers(), md.Sequence.Stream,
		int(md.NumDelivered), msg.Data(), reason, cause)
	if err != nil {
		q.log.Error("worker.dlq_failed", "subject", msg.Subject(), "error", err.Error())
		_ = msg.NakWithDelay(q.o.BackOff[0])
		return
	}
	if reason != "" {
		// Never the key or the signature: the subject says what was claimed.
		q.log.Warn("worker.job_refused", "subject", msg.Subject(), "reason", reason,
			"stream_seq", md.Sequence.Stream, "error", cause.Error())
	} else {
		q.log.Warn("worker.dead_letter", "subject", msg.Subject(), "installation", job.Installation,
			"deliveries", md.NumDelivered, "error", cause.Error())
	}
	_ = msg.TermWithReason("dead letter: " + firstLine(cause.Error()))
}

// deadLetter publishes a job's body to the dead letters with the headers
// that say why, keeping its message id and signature so Replay can check
// that a process holding the job key queued it. The dead letter's own
// message id is derived from the job's stream sequence, so moving the same
// job twice stores it once.
func (q *Queue) deadLetter(ctx context.Context, subject string, orig nats.Header, seq uint64, deliveries int, data []byte, reason string, cause error) error {
	rest := strings.TrimPrefix(subject, JobsPrefix)
	m := &nats.Msg{Subject: DLQPrefix + rest, Data: data, Header: nats.Header{}}
	m.Header.Set(HeaderError, firstLine(cause.Error()))
	m.Header.Set(HeaderSubject, subject)
	m.Header.Set(HeaderDeliveries, strconv.Itoa(deliveries))
	msgID := orig.Get(nats.MsgIdHdr)
	if msgID != "" {
		m.Header.Set(HeaderMsgID, msgID)
	}
	if sig := orig.Get(HeaderSignature); sig != "" {
		m.Header.Set(HeaderSignature, sig)
	}
	if reason != "" {
		m.Header.Set(HeaderReason, reason)
	}
	m.Header.Set(HeaderFailedAt, q.o.Now().UTC().Format(time.RFC3339Nano))
	if _, err := q.js.PublishMsg(ctx, m, jetstream.WithMsgID("dlq:"+strconv.FormatUint(seq, 10)+":"+msgID)); err != nil {
		return publishErr(m.Subject, err)
	}
	return nil
}

// onMaxDeliveries moves a job the server stopped delivering (every
// delivery timed out: its workers crashed or hung) to the dead letters.
func (q *Queue) onMaxDeliveries(ctx context.Context, m *nats.Msg) {
	var adv struct {
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries int    `json:"deliveries"`
	}
	if err := json.Unmarshal(m.Data, &adv); err != nil || adv.StreamSeq == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	raw, err := q.jobs.GetMsg(ctx, adv.StreamSeq)
	if err != nil {
		return // acked or moved meanwhile
	}
	cause := fmt.Errorf("delivered %d times without an ack (worker crashed or timed out)", adv.Deliveries)
	if err := q.deadLetter(ctx, raw.Subject, raw.Header, raw.Sequence, adv.Deliveries, raw.Data, "", cause); err != nil {
		q.log.Error("worker.dlq_failed", "subject", raw.Subject, "error", err.Error())
		return
	}
	if err := q.jobs.DeleteMsg(ctx, raw.Sequence); err != nil {
		q.log.Warn("worker.dlq_delete_failed", "seq", raw.Sequence, "error", err.Error())
	}
	q.log.Warn("worker.dead_letter", "subject", raw.Subject, "deliveries", adv.Deliveries, "error", cause.Error())
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 1000 {
		s = s[:1000]
	}
	return s
}
