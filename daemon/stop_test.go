package daemon_test

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd/daemon"
	"github.com/ingestd/ingestd/jobs"
)

// syncBuffer is a buffer the daemon's goroutines may log to at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunLogsStopped: serve.stopping is followed, once everything is
// closed, by serve.stopped, the last line of a serve.
func TestRunLogsStopped(t *testing.T) {
	var buf syncBuffer
	d := mustOpenLogged(t, slog.New(slog.NewTextHandler(&buf, nil)))
	ctx, cancel := context.WithCancel(t.Context())
	listening := make(chan string, 1)
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
		Listening: func(a string) { listening <- a },
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, daemon.RoleAll, so) }()
	<-listening
	waitFor(t, func() bool { return strings.Contains(buf.String(), "serve.listening") })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	logs := buf.String()
	stopping, stopped := strings.Index(logs, "msg=serve.stopping"), strings.Index(logs, "msg=serve.stopped")
	if stopping < 0 || stopped < stopping {
		t.Fatalf("logs:\n%s\nwant serve.stopping, then serve.stopped", logs)
	}
	if rest := strings.TrimSpace(logs[stopped:]); strings.Contains(rest, "\n") {
		t.Errorf("lines after serve.stopped:\n%s", rest)
	}
}
