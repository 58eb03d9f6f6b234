package daemon_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/files"
	"github.com/ingestd/ingestd/daemon"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/erasure"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/jobs"
	"github.com/ingestd/ingestd/store/sqlite"
)

// MustOpen opens a daemon over a new SQLite store with one files
// installation, "docs", over a folder holding one handbook page, and
// closes it when the test ends.
func MustOpen(tb testing.TB) *daemon.Daemon {
	tb.Helper()
	return mustOpenLogged(tb, nil)
}

// mustOpenLogged is MustOpen with the daemon's logger (nil: none).
func mustOpenLogged(tb testing.TB, log *slog.Logger) *daemon.Daemon {
	tb.Helper()
	dir := tb.TempDir()
	root := filepath.Join(dir, "docs")
	if err := os.MkdirAll(root, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "refunds.md"), []byte("# Refunds\n\nA refund by bank transfer takes five days.\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	inst := ingestd.Installation{ID: "docs", Kind: "files", Tier: ingestd.TierTrustedInternal}
	conn, err := files.New(inst, filesSettings(root))
	if err != nil {
		tb.Fatal(err)
	}
	s, err := sqlite.Open(context.Background(), filepath.Join(dir, "ingestd.db"), &sqlite.Options{FenceCheck: firewall.Check})
	if err != nil {
		tb.Fatal(err)
	}
	keys, err := erasure.NewKeyer([]byte(strings.Repeat("k", erasure.MinKeyBytes)))
	if err != nil {
		tb.Fatal(err)
	}
	d, err := daemon.Open(context.Background(), daemon.Options{
		Store: s, Maintainer: s, Embedder: embedder.NewLexical(0), Keys: keys,
		Installations: []daemon.Installation{{Installation: inst, Connector: conn}},
		Logger:        log,
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := d.Close(context.Background()); err != nil {
			tb.Error(err)
		}
	})
	return d
}

// TestSyncRecordsPass: a foreground pass stores the folder's page and is
// recorded in the sync history under its trigger.
func TestSyncRecordsPass(t *testing.T) {
	d := MustOpen(t)
	sum, err := d.Sync(t.Context(), "docs", ingestd.TriggerManual, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sum.Added, 1; got != want {
		t.Errorf("added %d, want %d", got, want)
	}
	runs, err := d.Health().Runs(t.Context(), "docs", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Trigger != ingestd.TriggerManual || !runs[0].OK() {
		t.Errorf("runs %+v, want one successful manual pass", runs)
	}
	if _, err := d.Sync(t.Context(), "nope", ingestd.TriggerManual, nil); ingestd.ErrorCode(err) != ingestd.ENOTFOUND {
		t.Errorf("sync of an unknown installation: %v, want ENOTFOUND", err)
	}
}

// TestRunServesSyncsAndErases runs the daemon in-process in role all over
// an embedded NATS: the API answers readiness once the queue is open, a
// sync asked of the API goes through the queue to a worker and the
// pipeline, and an erasure asked of the API leaves the store with a
// tombstone and no document. Cancelling the context stops Run cleanly.
func TestRunServesSyncsAndErases(t *testing.T) {
	d := MustOpen(t)
	ctx, cancel := context.WithCancel(t.Context())
	addr := make(chan string, 1)
	natsDir := t.TempDir()
	so := daemon.ServeOptions{
		Listen: "127.0.0.1:0",
		Queue: func(ctx context.Context, reg prometheus.Registerer) (*daemon.Queue, error) {
			return daemon.OpenQueue(ctx, daemon.QueueOptions{
				Embedded: &jobs.EmbeddedOptions{StoreDir: natsDir},
				Jobs:     jobs.Options{ReplayAge: d.ReplayAge(), Registerer: reg},
				Wait:     jobs.WaitOptions{Timeout: time.Minute},
			})
		},
		SpoolDir:  filepath.Join(t.TempDir(), "spool"),
		Listening: func(a string) { addr <- a },
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, daemon.RoleAll, so) }()
	base := "http://" + <-addr
	waitFor(t, func() bool { return status(t, http.MethodGet, base+"/readyz", "") == http.StatusOK })

	if got := status(t, http.MethodPost, base+"/v1/installations/docs/sync", ""); got != http.StatusAccepted {
		t.Fatalf("POST sync: %d, want 202", got)
	}
	id := ingestd.DocumentID("docs", "refunds.md")
	waitFor(t, func() bool {
		_, err := d.Store().Document(t.Context(), id)
		return err == nil
	})

	if got := status(t, http.MethodPost, base+"/v1/erasures", `{"document_ids": ["`+id+`"]}`); got != http.StatusOK {
		t.Fatalf("POST erasures: %d, want 200", got)
	}
	if _, err := d.Store().Document(t.Context(), id); ingestd.ErrorCode(err) != ingestd.ENOTFOUND {
		t.Errorf("document after the erasure: %v, want ENOTFOUND", err)
	}
	if ts, err := d.Store().Tombstones(t.Context()); err != nil || len(ts) == 0 {
		t.Errorf("tombstones after the erasure: %v (%v), want some", ts, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v, want nil once its context ends", err)
	}
}

func status(t *testing.T, method, url, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusServiceUnavailable {
		var v any
		_ = json.Unmarshal(b, &v)
		t.Logf("%s %s: %d %v", method, url, resp.StatusCode, v)
	}
	return resp.StatusCode
}

// waitFor polls cond for up to a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within a minute")
}
