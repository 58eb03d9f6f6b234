package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// cursorSource writes cursors, puts one item, then stops with err.
type cursorSource struct {
	cursors [][2]string
	err     error
}

func (s cursorSource) Sync(ctx context.Context, p ingestd.Pass) error {
	for _, c := range s.cursors {
		if err := p.SetCursor(ctx, c[0], c[1]); err != nil {
			return err
		}
	}
	if err := p.Put(ctx, doc("a.md", "alpha")); err != nil {
		return err
	}
	return s.err
}

// TestSummaryRun: the record of a pass carries its start (on the
// pipeline's clock), its counts, a short summary of the cursors it wrote
// and its error as a person reads it.
func TestSummaryRun(t *testing.T) {
	st := sqlitetest.MustOpen(t)
	t0 := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	clock := t0
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewLexical(64),
		Now: func() time.Time { c := clock; clock = clock.Add(1500 * time.Millisecond); return c }})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("9", 200)
	tests := []struct {
		name        string
		src         cursorSource
		wantCursors string
		wantErr     string
	}{
		{"no cursors, success", cursorSource{}, "", ""},
		{"cursors in the order first written, the last value of each",
			cursorSource{cursors: [][2]string{{"mailbox:INBOX", `{"last_uid":1}`}, {"mailbox:Sent", "x"}, {"mailbox:INBOX", `{"last_uid":2}`}}},
			`mailbox:INBOX={"last_uid":2}; mailbox:Sent=x`, ""},
		{"long values cut, keys beyond four counted",
			cursorSource{cursors: [][2]string{{"a", long}, {"b", "1"}, {"c", "2"}, {"d", "3\nnext"}, {"e", "4"}, {"f", "5"}}},
			"a=" + strings.Repeat("9", 93) + "…; b=1; c=2; d=3 next (+2 more)", ""},
		{"an application error, without its code or the pass's name",
			cursorSource{err: ingestd.Errorf(ingestd.EINVALID, "imap 127.0.0.1:993: login as %q refused: bad credentials", "support")},
			"", `imap 127.0.0.1:993: login as "support" refused: bad credentials`},
		{"a wrapped error, control characters as spaces",
			cursorSource{err: fmt.Errorf("list: %w", ingestd.Errorf(ingestd.EUNAVAILABLE, "dial tcp\x00: refused"))},
			"", "list: dial tcp : refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := clock
			sum, err := p.Sync(context.Background(), handbook, tt.src, nil)
			r := sum.Run(ingestd.TriggerWatch, err)
			if got, want := r.StartedAt, start; !got.Equal(want) {
				t.Errorf("StartedAt %s, want %s", got, want)
			}
			if got, want := r.Duration, sum.Duration; got != want || got < 1500*time.Millisecond {
				t.Errorf("Duration %s, want the summary's %s, at least one tick of the clock", got, want)
			}
			if r.Installation != "handbook" || r.Trigger != ingestd.TriggerWatch || r.Seen != 1 || r.Added+r.Unchanged != 1 {
				t.Errorf("record %+v: want handbook's watch pass with its one item", r)
			}
			if got, want := r.Cursors, tt.wantCursors; got != want {
				t.Errorf("Cursors\n %q, want\n %q", got, want)
			}
			if got, want := r.Error, tt.wantErr; got != want {
				t.Errorf("Error %q, want %q", got, want)
			}
			if got, want := r.OK(), tt.wantErr == ""; got != want {
				t.Errorf("OK() = %v, want %v", got, want)
			}
		})
	}
}
