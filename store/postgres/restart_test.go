package postgres_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/postgres/pgtest"
	"github.com/ingestd/ingestd/store/storetest"
)

// envPgvectorUp names a script the restart test calls with "stop" and then
// "start" to restart the server under test (CI sets it to the script that
// started the server).
const envPgvectorUp = "INGESTD_TEST_PGVECTOR_UP"

// TestRestart stops and starts the server while a worker writes documents,
// retrying each failed write as a redelivered job would: Ping fails during
// the outage and recovers after it, every failure meanwhile is
// EUNAVAILABLE, and every document ends up stored exactly once.
//
// It stops the server every test shares, so it runs alone: it holds the
// pgtest lock exclusively, which waits for every other package's Postgres
// test to end and keeps new ones waiting until the server is back.
func TestRestart(t *testing.T) {
	srv := serverURL(t)
	script := os.Getenv(envPgvectorUp)
	if script == "" {
		t.Skip("no way to restart the server: set " + envPgvectorUp + " to a script that takes stop|start")
	}
	pgtest.Exclusive(t)
	s := pgtest.MustOpen(t, srv, &postgres.Options{Dims: storetest.Dims, MaxConns: 4})
	// If the test fails half-way, leave the server running for the rest.
	t.Cleanup(func() { exec.Command(script, "start").Run() })

	ctx, stop := context.WithCancel(context.Background())
	var (
		mu       sync.Mutex
		written  int
		failures int
		badErr   error
	)
	writtenCount := func() int { mu.Lock(); defer mu.Unlock(); return written }
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			d := storetest.Doc("inst", fmt.Sprintf("%d.md", i), ingestd.TierTrustedInternal, fmt.Sprint(i))
			cs := storetest.Chunks(d, i, fmt.Sprintf("restart paragraph %d", i))
			for {
				if ctx.Err() != nil {
					return
				}
				wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := s.PutDocument(wctx, d, cs, nil)
				cancel()
				if err == nil {
					break
				}
				mu.Lock()
				failures++
				if code := ingestd.ErrorCode(err); code != ingestd.EUNAVAILABLE && ctx.Err() == nil && badErr == nil {
					badErr = fmt.Errorf("document %d: %w (code %q), want unavailable", i, err, code)
				}
				mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
			mu.Lock()
			written = i + 1
			mu.Unlock()
		}
	})
	waitFor(t, "20 documents before the outage", func() bool { return writtenCount() >= 20 })
	run(t, script, "stop")
	var pingErr error
	waitFor(t, "Ping to fail while the server is down", func() bool {
		pingErr = s.Ping(context.Background())
		return pingErr != nil
	})
	if code := ingestd.ErrorCode(pingErr); code != ingestd.EUNAVAILABLE {
		t.Errorf("Ping during the outage: %v (code %q), want unavailable", pingErr, code)
	}
	before := writtenCount()
	time.Sleep(500 * time.Millisecond) // let the worker hit the outage
	run(t, script, "start")
	waitFor(t, "Ping to recover", func() bool { return s.Ping(context.Background()) == nil })
	waitFor(t, "20 documents after the outage", func() bool { return writtenCount() >= before+20 })
	stop()
	wg.Wait()

	if badErr != nil {
		t.Error(badErr)
	}
	if failures == 0 {
		t.Error("no write failed during the outage: the test did not write under load")
	}
	// The write cancelled at the end may still commit on the server after
	// its caller gave up, between two reads: documents and chunks are read
	// until they agree (each document has one chunk), which they must
	// within the deadline.
	var refs []ingestd.DocumentRef
	var hits []ingestd.Hit
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var err error
		if refs, err = s.DocumentRefs(context.Background(), "inst"); err != nil {
			t.Fatal(err)
		}
		if hits, err = s.SearchText(context.Background(), "restart paragraph", ingestd.Filter{}, 10_000); err != nil {
			t.Fatal(err)
		}
		if len(hits) == len(refs) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d chunks for %d documents", len(hits), len(refs))
		}
	}
	// The cancelled write may or may not have landed.
	if n := len(refs); n != written && n != written+1 {
		t.Fatalf("%d documents stored, %d written", n, written)
	}
}

func run(t *testing.T, script string, args ...string) {
	t.Helper()
	out, err := exec.Command(script, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", script, args, err, out)
	}
}

// waitFor polls cond until it holds, failing the test after two minutes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
