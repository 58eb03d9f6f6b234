package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

func mustLoggedPipeline(tb testing.TB) (*pipeline.Pipeline, *bytes.Buffer) {
	tb.Helper()
	var buf bytes.Buffer
	p, err := pipeline.New(pipeline.Options{Store: sqlitetest.MustOpen(tb), Embedder: embedder.NewLexical(64),
		Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		tb.Fatal(err)
	}
	return p, &buf
}

// warnings returns the WARN lines of buf and empties it.
func warnings(buf *bytes.Buffer) []string {
	var out []string
	for line := range strings.Lines(buf.String()) {
		if strings.Contains(line, "level=WARN") {
			out = append(out, line)
		}
	}
	buf.Reset()
	return out
}

// TestFailedItemWarnedOnce: an item that fails is warned about once, the
// first pass it fails; passes in which it fails the same way again say
// so at DEBUG. A pass a person watches (with a Progress, whose command
// prints the failures) warns about none. It fails anew, with another
// reason, and it is warned about again.
func TestFailedItemWarnedOnce(t *testing.T) {
	p, buf := mustLoggedPipeline(t)
	inst := ingestd.Installation{ID: "docs", Kind: "files", Tier: ingestd.TierTrustedInternal}
	reason := errors.New("permission denied")
	src := funcSource(func(ctx context.Context, pass ingestd.Pass) error {
		pass.Fail("locked.md", reason)
		return nil
	})
	for i := range 3 {
		if _, err := p.Sync(t.Context(), inst, src, nil); err != nil {
			t.Fatal(err)
		}
		w := warnings(buf)
		if want := map[bool]int{true: 1, false: 0}[i == 0]; len(w) != want {
			t.Errorf("pass %d: %d WARN lines, want %d: %q", i+1, len(w), want, w)
		}
	}
	reason = errors.New("not valid UTF-8")
	if _, err := p.Sync(t.Context(), inst, src, nil); err != nil {
		t.Fatal(err)
	}
	if w := warnings(buf); len(w) != 1 {
		t.Errorf("a new reason: %d WARN lines, want 1: %q", len(w), w)
	}

	watched, buf := mustLoggedPipeline(t)
	if _, err := watched.Sync(t.Context(), inst, src, &storedWhenReported{}); err != nil {
		t.Fatal(err)
	}
	if w := warnings(buf); len(w) != 0 {
		t.Errorf("a watched pass: %q, want no WARN (its command prints the failures)", w)
	}
}

// TestPassThatFailsLogsAtWarn: the line that closes a pass that stopped
// on an error is a WARN, on both kinds of pass, unless a person watches
// it (its command reports the error).
func TestPassThatFailsLogsAtWarn(t *testing.T) {
	p, buf := mustLoggedPipeline(t)
	inst := ingestd.Installation{ID: "docs", Kind: "files", Tier: ingestd.TierTrustedInternal}
	src := funcSource(func(ctx context.Context, pass ingestd.Pass) error { return errors.New("the share went away") })
	_, _ = p.Sync(t.Context(), inst, src, nil)
	_, _ = p.SyncDispatch(t.Context(), inst, src, nil, func(context.Context, ingestd.Job, string) error { return nil })
	w := warnings(buf)
	if len(w) != 2 || !strings.Contains(w[0], "sync.pass") || !strings.Contains(w[1], "sync.dispatch") {
		t.Errorf("WARN lines %q, want sync.pass and sync.dispatch", w)
	}
	_, _ = p.Sync(t.Context(), inst, src, &storedWhenReported{})
	if w := warnings(buf); len(w) != 0 {
		t.Errorf("a watched pass: WARN lines %q, want none", w)
	}
}
