package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/pipeline"
)

// scriptSource reports one pass as a script of calls: Put, Delete, Fail
// and Skip in the order given, then Complete when complete is set.
type scriptSource struct {
	total    int
	calls    []call
	complete bool
}

type call struct {
	op     string // put, delete, fail, skip
	item   ingestd.Item
	reason string
}

func (s *scriptSource) Sync(ctx context.Context, p ingestd.Pass) error {
	p.Total(s.total)
	for _, c := range s.calls {
		switch c.op {
		case "put":
			if err := p.Put(ctx, c.item); err != nil {
				return err
			}
		case "delete":
			if err := p.Delete(ctx, c.item.ExternalID); err != nil {
				return err
			}
		case "fail":
			p.Fail(c.item.ExternalID, errors.New(c.reason))
		case "skip":
			p.Skip(c.item.ExternalID, c.reason)
		}
	}
	if s.complete {
		p.Complete()
	}
	return nil
}

// check fails the test unless sum adds up and has the counts of want
// (Installation, Seen and the outcome counts are compared).
func check(tb testing.TB, sum, want pipeline.Summary) {
	tb.Helper()
	if err := sum.Check(); err != nil {
		tb.Errorf("summary does not add up: %v\n%s", err, sum)
	}
	got := [...]int{sum.Seen, sum.Added, sum.Changed, sum.Unchanged, sum.Deleted, sum.Failed, sum.Skipped, sum.Queued, sum.Expected}
	exp := [...]int{want.Seen, want.Added, want.Changed, want.Unchanged, want.Deleted, want.Failed, want.Skipped, want.Queued, want.Expected}
	if got != exp {
		tb.Errorf("seen, added, changed, unchanged, deleted, failed, skipped, queued, expected = %v, want %v\n%s", got, exp, sum)
	}
}

// TestSummaryAddsUp runs a pass with every kind of report, including a
// skip that must keep its stored document when the listing is complete
// and a tombstone written by reconciliation, which counts as seen.
func TestSummaryAddsUp(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	first := &scriptSource{total: 4, complete: true, calls: []call{
		{op: "put", item: doc("a.md", "alpha")},
		{op: "put", item: doc("b.md", "beta")},
		{op: "put", item: doc("c.md", "gamma")},
		{op: "put", item: doc("d.md", "delta")},
	}}
	sum, err := f.pipe.Sync(ctx, handbook, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, sum, pipeline.Summary{Seen: 4, Added: 4, Expected: 4})

	second := &scriptSource{total: 7, complete: true, calls: []call{
		{op: "put", item: doc("a.md", "alpha")},          // unchanged
		{op: "put", item: doc("b.md", "beta, edited")},   // changed
		{op: "put", item: doc("e.md", "epsilon")},        // added
		{op: "fail", item: doc("f.md", ""), reason: "x"}, // failed
		{op: "skip", item: doc("c.md", ""), reason: "over max_file_bytes"},
		{op: "skip", item: doc("g.md", ""), reason: "over max_file_bytes"},
		{op: "delete", item: doc("never-stored.md", "")}, // unchanged: nothing to delete
		// d.md is not listed: reconciliation tombstones it.
	}}
	sum, err = f.pipe.Sync(ctx, handbook, second, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, sum, pipeline.Summary{Seen: 8, Added: 1, Changed: 1, Unchanged: 2, Deleted: 1, Failed: 1, Skipped: 2, Expected: 7})
	if got, want := sum.SkippedBy["over max_file_bytes"], 2; got != want {
		t.Errorf("SkippedBy = %v, want %d over max_file_bytes", sum.SkippedBy, want)
	}
	if len(sum.Skips) != 2 || sum.Skips[0].ExternalID != "c.md" {
		t.Errorf("Skips = %+v", sum.Skips)
	}
	c, err := f.store.Document(ctx, ingestd.DocumentID(handbook.ID, "c.md"))
	if err != nil || c.Status != ingestd.StatusActive {
		t.Errorf("skipped c.md: %v, %v; a skip must keep the stored document", c, err)
	}
	d, err := f.store.Document(ctx, ingestd.DocumentID(handbook.ID, "d.md"))
	if err != nil || d.Status != ingestd.StatusDeleted {
		t.Errorf("unlisted d.md: %v, %v; want a tombstone", d, err)
	}

	// Every term is in the line a person reads, and the connector's
	// expectation where it differs from what was seen.
	line := sum.String()
	for _, want := range []string{"8 items seen = ", "1 added", "1 changed", "2 unchanged", "1 deleted", "1 failed", "2 skipped (2 over max_file_bytes)", "the connector expected 7"} {
		if !strings.Contains(line, want) {
			t.Errorf("summary line %q lacks %q", line, want)
		}
	}
}

func TestSummaryListsAtMostMaxSkips(t *testing.T) {
	f := mustPipeline(t)
	src := &scriptSource{}
	for i := range pipeline.MaxListedSkips + 5 {
		src.calls = append(src.calls, call{op: "skip", item: doc(strings.Repeat("x", i+1), ""), reason: "over max_attachments"})
	}
	sum, err := f.pipe.Sync(context.Background(), handbook, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, sum, pipeline.Summary{Seen: pipeline.MaxListedSkips + 5, Skipped: pipeline.MaxListedSkips + 5})
	if got, want := len(sum.Skips), pipeline.MaxListedSkips; got != want {
		t.Errorf("%d skips listed, want %d", got, want)
	}
}

func TestSyncDispatchSummaryAddsUp(t *testing.T) {
	ctx := context.Background()
	p, _ := MustPipeline(t)
	tooLarge := ingestd.Errorf(ingestd.ETOOLARGE, "too big")
	log := &jobLog{err: func(j ingestd.Job) error {
		if j.Item.ExternalID == "big.md" {
			return tooLarge
		}
		return nil
	}}
	src := &scriptSource{total: 5, complete: true, calls: []call{
		{op: "put", item: item("a.md", "alpha")},
		{op: "put", item: item("big.md", "huge")}, // cannot travel: ingested here, counted once
		{op: "put", item: item("", "nameless")},
		{op: "skip", item: item("s.md", ""), reason: "auto-generated"},
		{op: "fail", item: item("f.md", ""), reason: "unreadable"},
	}}
	sum, err := p.SyncDispatch(ctx, handbook, src, nil, log.publish)
	if err != nil {
		t.Fatal(err)
	}
	check(t, sum, pipeline.Summary{Seen: 5, Queued: 1, Added: 1, Failed: 2, Skipped: 1, Expected: 5})
}

// TestSummaryCheckNamesTheGap shows Check catching a summary whose terms
// do not reach Seen.
func TestSummaryCheckNamesTheGap(t *testing.T) {
	for _, tt := range []struct {
		name string
		sum  pipeline.Summary
		want string
	}{
		{"item not counted", pipeline.Summary{Seen: 3, Added: 2}, "but 3 items were seen"},
		{"failure not listed", pipeline.Summary{Seen: 1, Failed: 1}, "0 failures listed for 1 failed"},
		{"skip without reason", pipeline.Summary{Seen: 1, Skipped: 1}, "0 skips counted by reason for 1 skipped"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.sum.Check()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check() = %v, want an error with %q", err, tt.want)
			}
		})
	}
	if err := (pipeline.Summary{Seen: 2, Added: 1, Skipped: 1, SkippedBy: map[string]int{"r": 1}}).Check(); err != nil {
		t.Errorf("Check() of a summary that adds up = %v", err)
	}
}
