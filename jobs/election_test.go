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

	"github.com/nats-io/nats.go"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/jobs/jobstest"
)

// The tests here form a three-node JetStream cluster of in-process
// servers on loopback (jobstest: real servers, real Raft elections, no
// binary needed) and take it apart: the queue must wait for a cluster that has
// no JetStream leader yet instead of failing, and a worker must keep
// going when its consumer's leader changes under it.

// dialer connects to every node of c with its credentials.
func dialer(c *jobstest.Cluster, name string) Dialer {
	return func() (*nats.Conn, error) {
		return Connect(c.URL(), ConnectOptions{Name: name, User: jobstest.User, Password: jobstest.Password})
	}
}

// mustOpenWait opens a queue on the cluster, failing the test if it
// cannot within WaitOptions' default bound.
func mustOpenWait(tb testing.TB, c *jobstest.Cluster, o *Options) (*Queue, *nats.Conn) {
	tb.Helper()
	q, nc, err := OpenWait(context.Background(), dialer(c, tb.Name()), o, WaitOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(nc.Close)
	return q, nc
}

// TestOpenWaitsForJetStream: a process that starts while the cluster has
// no JetStream leader (one node of three up: no quorum, the same answer as
// during the election after a leader's node dies) waits, saying why at
// each attempt, and opens the queue once the other nodes come up. Open
// alone fails at once, which was how serve exited into a crash loop.
func TestOpenWaitsForJetStream(t *testing.T) {
	c := jobstest.MustCluster(t, 0)
	o := &Options{Replicas: 3}

	nc, err := dialer(c, "single-attempt")()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	began := time.Now()
	_, err = Open(ctx, nc, o)
	t.Logf("Open failed after %s: %v", time.Since(began).Round(time.Millisecond), err)
	cancel()
	nc.Close()
	if err == nil {
		t.Fatal("Open succeeded on a cluster without a JetStream leader")
	}
	if !Transient(err) {
		t.Errorf("Open failed with %v, which OpenWait would not wait out", err)
	}

	var mu sync.Mutex
	var reasons []string
	waiting := make(chan struct{})
	type result struct {
		q   *Queue
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		q, nc, err := OpenWait(context.Background(), dialer(c, t.Name()), o, WaitOptions{
			Timeout: 2 * time.Minute, Backoff: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
			OnWait: func(attempt int, err error, _ time.Duration) {
				mu.Lock()
				defer mu.Unlock()
				reasons = append(reasons, err.Error())
				if attempt == 2 {
					close(waiting)
				}
			},
		})
		done <- result{q, nc, err}
	}()
	select {
	case <-waiting:
	case r := <-done:
		t.Fatalf("OpenWait returned (%v) before the cluster had a leader", r.err)
	case <-time.After(time.Minute):
		t.Fatal("OpenWait made no second attempt within a minute")
	}
	began = time.Now()
	c.Start(t, 1)
	c.Start(t, 2)
	r := <-done
	t.Logf("OpenWait returned %s after the other nodes started", time.Since(began).Round(time.Millisecond))
	if r.err != nil {
		t.Fatalf("OpenWait after the cluster formed: %v", r.err)
	}
	defer r.nc.Close()
	mu.Lock()
	t.Logf("waited through %d attempts; first reason: %s", len(reasons), reasons[0])
	mu.Unlock()

	// The queue it opened works: a job published is stored on three replicas.
	if err := r.q.Publish(context.Background(), itemJob("handbook", "a.md", "hello"), "m1"); err != nil {
		t.Fatal(err)
	}
	info, err := r.q.jobs.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := info.Config.Replicas, 3; got != want {
		t.Errorf("replicas = %d, want %d", got, want)
	}
}

// TestOpenWaitBounds: waiting is bounded by Timeout and ends with an
// error naming the setting; what waiting cannot fix (refused credentials,
// a short job key) fails at the first attempt.
func TestOpenWaitBounds(t *testing.T) {
	c := jobstest.MustCluster(t, 0)
	var attempts atomic.Int32
	onWait := func(int, error, time.Duration) { attempts.Add(1) }

	_, _, err := OpenWait(context.Background(), dialer(c, t.Name()), &Options{Replicas: 3},
		WaitOptions{Timeout: 1500 * time.Millisecond, Backoff: 50 * time.Millisecond, OnWait: onWait})
	if got, want := ingestd.ErrorCode(err), ingestd.EUNAVAILABLE; got != want {
		t.Fatalf("error %v: code %q, want %q", err, got, want)
	}
	if !strings.Contains(err.Error(), "nats.startup_timeout") {
		t.Errorf("error %q does not name nats.startup_timeout", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, _, err = OpenWait(ctx, dialer(c, t.Name()), &Options{Replicas: 3}, WaitOptions{Timeout: time.Minute, Backoff: 50 * time.Millisecond})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v, want context.Canceled", err)
	}

	// With every node up (nats.go reports the last node's refusal, so a
	// node that is down could hide it), refused credentials end the wait.
	c.Start(t, 1)
	c.Start(t, 2)
	attempts.Store(0)
	badPassword := func() (*nats.Conn, error) {
		return Connect(c.URL(), ConnectOptions{Name: "stranger", User: jobstest.User, Password: "wrong"})
	}
	_, _, err = OpenWait(context.Background(), badPassword, nil, WaitOptions{Timeout: time.Minute, OnWait: onWait})
	if err == nil || !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("bad password: err = %v, want an authorization error", err)
	}
	if got := attempts.Load(); got != 0 {
		t.Errorf("bad password: retried %d times, want none", got)
	}

	_, _, err = OpenWait(context.Background(), dialer(c, t.Name()), &Options{JobKey: []byte("short")}, WaitOptions{Timeout: time.Minute, OnWait: onWait})
	if got, want := ingestd.ErrorCode(err), ingestd.EINVALID; got != want {
		t.Errorf("short key: err = %v, want code %q", err, want)
	}
	if got := attempts.Load(); got != 0 {
		t.Errorf("short key: retried %d times, want none", got)
	}

}

// TestWorkerKeepsGoingThroughLeaderChanges: a worker whose consumer loses
// its leader mid-run (a step-down, then the node that leads the consumer
// shut down) keeps pulling from the new leader: every job is handled,
// nothing is dead-lettered, nothing is left in the stream.
func TestWorkerKeepsGoingThroughLeaderChanges(t *testing.T) {
	c := jobstest.MustCluster(t, 0, 1, 2)
	o := &Options{Replicas: 3, MaxDeliver: 10, AckWait: 2 * time.Second, BackOff: []time.Duration{50 * time.Millisecond}}
	q, nc := mustOpenWait(t, c, o)

	const n = 600
	var mu sync.Mutex
	handled := map[string]int{}
	startWorker(t, q, func(ctx context.Context, job ingestd.Job) error {
		time.Sleep(2 * time.Millisecond)
		mu.Lock()
		handled[job.Item.ExternalID]++
		mu.Unlock()
		return nil
	}, WorkerOptions{Concurrency: 4, FetchWait: 200 * time.Millisecond})
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(handled)
	}

	publish := func(from, to int) {
		for i := from; i < to; i++ {
			id := fmt.Sprintf("doc-%04d", i)
			for {
				err := q.Publish(context.Background(), itemJob("handbook", id, "text"), id)
				if err == nil {
					break
				}
				if ingestd.ErrorCode(err) != ingestd.EUNAVAILABLE {
					t.Fatalf("publish %s: %v", id, err)
				}
				time.Sleep(100 * time.Millisecond) // an election: the publisher retries, as a sync pass does
			}
		}
	}
	publish(0, n/3)
	eventually(t, "the worker to start", func() bool { return count() > 0 })

	leader := func() string {
		info, err := q.cons.Info(context.Background())
		if err != nil || info.Cluster == nil {
			return ""
		}
		return info.Cluster.Leader
	}
	first := leader()
	if _, err := nc.Request("$JS.API.CONSUMER.LEADER.STEPDOWN."+JobsStream+"."+WorkerConsumer, nil, 5*time.Second); err != nil {
		t.Fatalf("step down the consumer leader: %v", err)
	}
	publish(n/3, 2*n/3)
	eventually(t, "a new consumer leader", func() bool { l := leader(); return l != "" && l != first })

	// Now shut down the node that leads the consumer; two of three keep quorum.
	down := c.Node(leader())
	if down < 0 {
		t.Fatalf("consumer leader %q is not a running node", leader())
	}
	atDown := count()
	c.Stop(down)
	publish(2*n/3, n)
	deadline := time.Now().Add(time.Minute)
	for count() < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := count(); got != n {
		t.Fatalf("%d of %d jobs handled (%d when node-%d went down)", got, n, atDown, down+1)
	}
	eventually(t, "the stream to empty", func() bool {
		info, err := q.jobs.Info(context.Background())
		return err == nil && info.State.Msgs == 0
	})
	if got := streamMsgs(t, q, DLQStream); got != 0 {
		t.Errorf("%d dead letters, want none", got)
	}
	t.Logf("%d jobs handled across a step-down and the loss of node-%d; %d handled after it went down", n, down+1, n-atDown)
}
