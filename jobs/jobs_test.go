package jobs

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/ingestd/ingestd"
)

// MustEmbedded starts an embedded server storing in a temp dir.
func MustEmbedded(tb testing.TB) *Embedded {
	tb.Helper()
	e, err := StartEmbedded(EmbeddedOptions{StoreDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Shutdown)
	return e
}

// MustQueue opens a Queue on its own in-process connection to e.
func MustQueue(tb testing.TB, e *Embedded, o *Options) *Queue {
	tb.Helper()
	nc, err := e.Connect(tb.Name())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	q, err := Open(context.Background(), nc, o)
	if err != nil {
		tb.Fatal(err)
	}
	return q
}

// fast are options that keep retries short in tests.
func fast() *Options {
	return &Options{MaxDeliver: 3, BackOff: []time.Duration{20 * time.Millisecond}, AckWait: 2 * time.Second}
}

// startWorker runs a worker until the test ends; stop stops it and waits.
func startWorker(tb testing.TB, q *Queue, h Handler, o WorkerOptions) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- q.RunWorker(ctx, h, o) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				tb.Errorf("RunWorker: %v", err)
			}
		})
	}
	tb.Cleanup(stop)
	return stop
}

// eventually polls cond until it holds or 20s pass (a liveness bound, not
// a speed assertion).
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func streamMsgs(tb testing.TB, q *Queue, name string) uint64 {
	tb.Helper()
	s, err := q.js.Stream(context.Background(), name)
	if err != nil {
		tb.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return info.State.Msgs
}

func itemJob(inst, ext, text string) ingestd.Job {
	return ingestd.Job{Kind: ingestd.JobItem, Installation: inst, Item: &ingestd.Item{ExternalID: ext, Text: text}}
}

func TestPublishConsume(t *testing.T) {
	e := MustEmbedded(t)
	q := MustQueue(t, e, fast())
	got := make(chan ingestd.Job, 1)
	startWorker(t, q, func(ctx context.Context, job ingestd.Job) error {
		got <- job
		return nil
	}, WorkerOptions{Concurrency: 2})

	if err := q.Publish(context.Background(), itemJob("handbook", "a.md", "hello"), "m1"); err != nil {
		t.Fatal(err)
	}
	select {
	case job := <-got:
		if got, want := job.Installation, "handbook"; got != want {
			t.Errorf("installation = %q, want %q", got, want)
		}
		if job.Item == nil || job.Item.Text != "hello" {
			t.Errorf("item = %+v, want text hello", job.Item)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("handler not called")
	}
	eventually(t, "the acked job to leave the work queue", func() bool { return streamMsgs(t, q, JobsStream) == 0 })
}

func TestPublishDuplicateDropped(t *testing.T) {
	e := MustEmbedded(t)
	q := MustQueue(t, e, nil)
	ctx := context.Background()
	job := itemJob("handbook", "a.md", "hello")
	if dup, err := q.publish(ctx, job, "d1:hash"); err != nil || dup {
		t.Fatalf("first publish: dup=%v err=%v", dup, err)
	}
	if dup, err := q.publish(ctx, job, "d1:hash"); err != nil || !dup {
		t.Fatalf("second publish: dup=%v err=%v, want a dropped duplicate", dup, err)
	}
	if err := q.Publish(ctx, job, "d1:hash2"); err != nil {
		t.Fatal(err)
	}
	if got, want := streamMsgs(t, q, JobsStream), uint64(2); got != want {
		t.Errorf("stream holds %d jobs, want %d", got, want)
	}
}

func TestPublishRefuses(t *testing.T) {
	e := MustEmbedded(t)
	q := MustQueue(t, e, &Options{MaxMsgSize: 400})
	ctx := context.Background()
	tests := []struct {
		name     string
		job      ingestd.Job
		wantCode string
	}{
		{"dot in installation", itemJob("a.b", "x", ""), ingestd.EINVALID},
		{"wildcard installation", itemJob("*", "x", ""), ingestd.EINVALID},
		{"empty installation", itemJob("", "x", ""), ingestd.EINVALID},
		{"space in kind", ingestd.Job{Kind: "sy nc", Installation: "a"}, ingestd.EINVALID},
		{"too large", itemJob("a", "x", strings.Repeat("x", 500)), ingestd.ETOOLARGE},
		{"fits", itemJob("a", "x", "small"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := q.Publish(ctx, tt.job, "")
			if got := ingestd.ErrorCode(err); got != tt.wantCode {
				t.Errorf("code = %q (%v), want %q", got, err, tt.wantCode)
			}
		})
	}
}

func TestPublishStreamFull(t *testing.T) {
	e := MustEmbedded(t)
	q := MustQueue(t, e, &Options{MaxBytes: 4096})
	ctx := context.Background()
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		err = q.Publish(ctx, itemJob("a", fmt.Sprint(i), strings.Repeat("x", 200)), "")
	}
	if got, want := ingestd.ErrorCode(err), ingestd.EUNAVAILABLE; got != want {
		t.Fatalf("code = %q (%v), want %q after filling the stream", got, err, want)
	}
	if !strings.Contains(err.Error(), "full") {
		t.Errorf("error %q does not say the queue is full", err)
	}
}

func TestPoisonJobDeadLettersAndReplays(t *testing.T) {
	e := MustEmbedded(t)
	q := MustQueue(t, e, fast())
	ctx := context.Background()
	var healed atomic.Bool
	var calls atomic.Int32
	ran := make(chan struct{}, 10)
	startWorker(t, q, func(ctx context.Context, job ingestd.Job) error {
		calls.Add(1)
		if !healed.Load() {
			return errors.New("store is down")
		}
		ran <- struct{}{}
		return nil
	}, WorkerOptions{Concurrency: 2})

	if err := q.Publish(ctx, itemJob("support", "m1", "poison"), "m1:h"); err != nil {
		t.Fatal(err)
	}
	var dead []ingestd.DeadLetter
	eventually(t, "the job in the DLQ", func() bool {
		var err error
		dead, err = q.ListDLQ(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(dead) == 1
	})
	if got, want := calls.Load(), int32(3); got != want {
		t.Errorf("handler called %d times, want MaxDeliver = %d", got, want)
	}
	d := dead[0]
	if got, want := d.Subject, "ingestd.dlq.item.support"; got != want {
		t.Errorf("subject = %q, want %q", got, want)
	}
	if got, want := d.OriginalSubject, "ingestd.jobs.item.support"; got != want {
		t.Errorf("original subject = %q, want %q", got, want)
	}
	if d.Deliveries != 3 || d.OriginalMsgID != "m1:h" || !strings.Contains(d.Error, "store is down") {
		t.Errorf("dead letter = %+v", d)
	}
	if d.Job.Item == nil || d.Job.Item.ExternalID != "m1" {
		t.Errorf("dead letter job = %+v", d.Job)
	}
	eventually(t, "the original to leave the work queue", func() bool { return streamMsgs(t, q, JobsStream) == 0 })

	healed.Store(true)
	if err := q.Replay(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(20 * time.Second):
		t.Fatal("replayed job not run")
	}
	if dead, err := q.ListDLQ(ctx); err != nil || len(dead) != 0 {
		t.Errorf("DLQ after replay = %v, %v; want empty", dead, err)
	}
	if err := q.Replay(ctx, d.ID); ingestd.ErrorCode(err) != ingestd.ENOTFOUND {
		t.Errorf("second replay: %v, want ENOTFOUND", err)
	}
}

func TestInvalidJobDeadLettersAtOnce(t *testing.T) {
	e := MustEmbedded(t)
	q := MustQueue(t, e, fast())
	ctx := context.Background()
	var calls atomic.Int32
	startWorker(t, q, func(ctx context.Context, job ingestd.Job) error {
		calls.Add(1)
		return ingestd.Errorf(ingestd.EINVALID, "no such kind")
	}, WorkerOptions{})
	for i := range 3 {
		if err := q.Publish(ctx, itemJob("a", fmt.Sprint(i), "x"), ""); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "three dead letters", func() bool {
		dead, err := q.ListDLQ(ctx)
		return err == nil && len(dead) == 3
	})
	if got, want := calls.Load(), int32(3); got != want {
		t.Errorf("handler called %d times, want one per job", got)
	}
	n, err := q.ReplayAll(ctx)
	if err != nil || n != 3 {
		t.Fatalf("ReplayAll = %d, %v", n, err)
	}
	eventually(t, "replayed jobs to die again", func() bool {
		dead, err := q.ListDLQ(ctx)
		return err == nil && len(dead) == 3
	})
}

func TestCrashedDeliveriesDeadLetter(t *testing.T) {
	e := MustEmbedded(t)
	q := MustQueue(t, e, &Options{MaxDeliver: 2, AckWait: 500 * time.Millisecond})
	ctx := context.Background()

	// The worker's only slot is held by a blocker, so the test can play a
	// worker that crashes: it pulls the poison job and never answers.
	release := make(chan struct{})
	started := make(chan struct{})
	startWorker(t, q, func(ctx context.Context, job ingestd.Job) error {
		close(started)
		<-release
		return nil
	}, WorkerOptions{Concurrency: 1})
	defer close(release)
	if err := q.Publish(ctx, itemJob("a", "blocker", "x"), ""); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := q.Publish(ctx, itemJob("a", "poison", "x"), ""); err != nil {
		t.Fatal(err)
	}
	// Pull the poison job and crash (no ack) until the server gives up on
	// it; it announces max deliveries on a pull after the last one.
	poisoned := 0
	pull := func() {
		b, err := q.cons.Fetch(1, jetstream.FetchMaxWait(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for m := range b.Messages() {
			if strings.Contains(string(m.Data()), "poison") {
				poisoned++
			}
		}
	}
	var dead []ingestd.DeadLetter
	eventually(t, "the crashed job in the DLQ", func() bool {
		pull()
		dead, _ = q.ListDLQ(ctx)
		return len(dead) == 1
	})
	if poisoned != 2 {
		t.Errorf("poison job delivered %d times, want MaxDeliver = 2", poisoned)
	}
	if got := dead[0]; got.Job.Item == nil || got.Job.Item.ExternalID != "poison" || got.Deliveries != 2 {
		t.Errorf("dead letter = %+v", got)
	}
}

func TestDrainFinishesInFlight(t *testing.T) {
	e := MustEmbedded(t)
	q := MustQueue(t, e, fast())
	ctx := context.Background()
	started := make(chan struct{})
	release := make(chan struct{})
	var handlerCtxErr atomic.Value
	stop := startWorker(t, q, func(ctx context.Context, job ingestd.Job) error {
		close(started)
		<-release
		handlerCtxErr.Store(fmt.Sprint(ctx.Err()))
		return nil
	}, WorkerOptions{DrainTimeout: time.Minute})
	if err := q.Publish(ctx, itemJob("a", "x", "x"), ""); err != nil {
		t.Fatal(err)
	}
	<-started
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	close(release)
	<-stopped
	if got := handlerCtxErr.Load(); got != "<nil>" {
		t.Errorf("handler context = %v during drain, want live", got)
	}
	if got := streamMsgs(t, q, JobsStream); got != 0 {
		t.Errorf("%d jobs left after a drain that finished them", got)
	}
}

func TestDrainTimeoutNaksForAnotherWorker(t *testing.T) {
	e := MustEmbedded(t)
	q := MustQueue(t, e, fast())
	ctx := context.Background()
	started := make(chan struct{})
	stop := startWorker(t, q, func(ctx context.Context, job ingestd.Job) error {
		close(started)
		<-ctx.Done() // a job that only stops when told
		return ctx.Err()
	}, WorkerOptions{DrainTimeout: 50 * time.Millisecond})
	if err := q.Publish(ctx, itemJob("a", "x", "x"), ""); err != nil {
		t.Fatal(err)
	}
	<-started
	stop()

	q2 := MustQueue(t, e, fast())
	got := make(chan string, 1)
	startWorker(t, q2, func(ctx context.Context, job ingestd.Job) error {
		got <- job.Item.ExternalID
		return nil
	}, WorkerOptions{})
	select {
	case id := <-got:
		if id != "x" {
			t.Errorf("second worker got %q", id)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("nak'd job never reached the second worker")
	}
	if dead, _ := q.ListDLQ(ctx); len(dead) != 0 {
		t.Errorf("drained job dead-lettered: %+v", dead)
	}
}

func TestScheduleThreeSchedulersOneJobPerBucket(t *testing.T) {
	e := MustEmbedded(t)
	qs := []*Queue{MustQueue(t, e, nil), MustQueue(t, e, nil), MustQueue(t, e, nil)}
	ctx := context.Background()
	insts := []ingestd.Installation{
		{ID: "handbook", Kind: "files", Interval: 10 * time.Minute},
		{ID: "support", Kind: "imap", Interval: time.Hour},
		{ID: "manual", Kind: "files"}, // no interval: never scheduled
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	run := func(at ...time.Time) int {
		var wg sync.WaitGroup
		var total atomic.Int32
		for i, q := range qs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n, err := q.ScheduleOnce(ctx, insts, at[i%len(at)])
				if err != nil {
					t.Error(err)
				}
				total.Add(int32(n))
			}()
		}
		wg.Wait()
		return int(total.Load())
	}
	// Three schedulers with a few seconds of clock skew in one bucket.
	if got, want := run(t0.Add(time.Second), t0.Add(3*time.Second), t0.Add(2*time.Second)), 2; got != want {
		t.Errorf("first bucket: %d jobs queued, want %d", got, want)
	}
	// Later in the same bucket (a scheduler that started late): nothing.
	if got := run(t0.Add(7 * time.Minute)); got != 0 {
		t.Errorf("same bucket later: %d jobs queued, want 0", got)
	}
	// Next handbook bucket.
	if got, want := run(t0.Add(10*time.Minute), t0.Add(10*time.Minute+time.Second)), 1; got != want {
		t.Errorf("next bucket: %d jobs queued, want %d", got, want)
	}
	if got, want := streamMsgs(t, qs[0], JobsStream), uint64(3); got != want {
		t.Errorf("stream holds %d sync jobs, want %d", got, want)
	}
}

func TestLeaseExclusiveAndExpires(t *testing.T) {
	e := MustEmbedded(t)
	ctx := context.Background()
	a := MustQueue(t, e, &Options{LeaseTTL: time.Second, Holder: "a"})
	b := MustQueue(t, e, &Options{LeaseTTL: time.Second, Holder: "b"})

	la, err := a.AcquireLease(ctx, "handbook")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.AcquireLease(ctx, "handbook"); ingestd.ErrorCode(err) != ingestd.ECONFLICT {
		t.Fatalf("second holder: %v, want ECONFLICT", err)
	}
	if _, err := b.AcquireLease(ctx, "support"); err != nil {
		t.Fatalf("another installation's lease: %v", err)
	}
	if err := la.Refresh(ctx); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lb, err := b.AcquireLease(ctx, "handbook")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}

	// b crashes: it never refreshes. Its lease expires and a takes it.
	var la2 *Lease
	eventually(t, "the crashed holder's lease to expire", func() bool {
		la2, err = a.AcquireLease(ctx, "handbook")
		return err == nil
	})
	if err := lb.Refresh(ctx); ingestd.ErrorCode(err) != ingestd.ECONFLICT {
		t.Errorf("crashed holder's refresh: %v, want ECONFLICT", err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Errorf("stale release: %v", err)
	}
	if _, err := b.AcquireLease(ctx, "handbook"); ingestd.ErrorCode(err) != ingestd.ECONFLICT {
		t.Errorf("a stale release freed the new holder's lease: %v", err)
	}
	_ = la2.Release(ctx)
}

func TestSyncJobsOfOneInstallationNeverOverlap(t *testing.T) {
	e := MustEmbedded(t)
	ctx := context.Background()
	var running, maxRunning, done atomic.Int32
	h := func(ctx context.Context, job ingestd.Job) error {
		n := running.Add(1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond)
		running.Add(-1)
		done.Add(1)
		return nil
	}
	o := &Options{LeaseTTL: 2 * time.Second}
	q1, q2 := MustQueue(t, e, o), MustQueue(t, e, o)
	startWorker(t, q1, h, WorkerOptions{Concurrency: 3})
	startWorker(t, q2, h, WorkerOptions{Concurrency: 3})
	for i := range 6 {
		if err := q1.Publish(ctx, ingestd.Job{Kind: ingestd.JobSync, Installation: "handbook"}, fmt.Sprint("s", i)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "six passes", func() bool { return done.Load() == 6 })
	if got := maxRunning.Load(); got != 1 {
		t.Errorf("%d passes of one installation ran at once, want 1", got)
	}
}

func TestPublishStored(t *testing.T) {
	e := MustEmbedded(t)
	q := MustQueue(t, e, nil)
	ctx := context.Background()
	doc := &ingestd.Document{ID: "d1", Installation: "support", Tier: ingestd.TierUntrustedExternal, ContentHash: "h", Status: ingestd.StatusActive}
	for range 2 { // a redelivered job announces once
		if err := q.PublishStored(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := streamMsgs(t, q, EventsStream), uint64(1); got != want {
		t.Errorf("%d events, want %d", got, want)
	}
	s, _ := q.js.Stream(ctx, EventsStream)
	m, err := s.GetLastMsgForSubject(ctx, StoredSubject)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"id":"d1"`, `"installation":"support"`, `"tier":"untrusted-external"`, `"content_hash":"h"`} {
		if !strings.Contains(string(m.Data), want) {
			t.Errorf("event %s lacks %s", m.Data, want)
		}
	}
}

func TestOpenIsIdempotent(t *testing.T) {
	e := MustEmbedded(t)
	MustQueue(t, e, nil)
	MustQueue(t, e, &Options{MaxDeliver: 7})
	q := MustQueue(t, e, &Options{MaxDeliver: 7})
	info, err := q.cons.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := info.Config.MaxDeliver, 7; got != want {
		t.Errorf("MaxDeliver = %d after an update, want %d", got, want)
	}
}
