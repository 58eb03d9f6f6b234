package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
)

// run is a pass of inst that started i minutes after t0; a non-empty
// errText makes it a failed pass.
func run(inst string, i int, errText string) ingestd.SyncRun {
	return ingestd.SyncRun{
		Installation: inst, Trigger: ingestd.TriggerSchedule,
		StartedAt: t0.Add(time.Duration(i) * time.Minute), Duration: 1500 * time.Millisecond,
		Seen: 10 + i, Added: 1, Changed: 2, Unchanged: 3 + i, Deleted: 1, Failed: 2, Skipped: 1,
		Complete: errText == "", Cursors: fmt.Sprintf("mailbox:INBOX=uid %d", i), Error: errText,
	}
}

func mustAddRun(t *testing.T, s ingestd.Store, r ingestd.SyncRun, keep int) {
	t.Helper()
	if err := s.AddRun(ctx(), r, keep); err != nil {
		t.Fatalf("AddRun(%s, %s): %v", r.Installation, r.StartedAt, err)
	}
}

func mustRuns(t *testing.T, s ingestd.Store, inst string, limit int) []ingestd.SyncRun {
	t.Helper()
	runs, err := s.Runs(ctx(), inst, limit)
	if err != nil {
		t.Fatalf("Runs(%s): %v", inst, err)
	}
	return runs
}

// runStarts lists the passes by their minute after t0.
func runStarts(runs []ingestd.SyncRun) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = fmt.Sprintf("%s@%d", r.Installation, int(r.StartedAt.Sub(t0)/time.Minute))
	}
	return out
}

func testRunsRoundTrip(t *testing.T, s ingestd.Store) {
	mustAddRun(t, s, run("support", 0, ""), 10)
	mustAddRun(t, s, run("handbook", 1, ""), 10)
	failed := run("support", 2, "imap 127.0.0.1:993: login as \"support\" refused")
	failed.Trigger, failed.Queued = ingestd.TriggerWatch, 4
	mustAddRun(t, s, failed, 10)
	mustAddRun(t, s, run("support", 3, "dial tcp: connection refused"), 10)

	runs := mustRuns(t, s, "support", 10)
	equalStrings(t, "support's passes, newest first", runStarts(runs), []string{"support@3", "support@2", "support@0"})
	for i, want := range []int{2, 1, 0} {
		if got := runs[i].FailedInRow; got != want {
			t.Errorf("pass %s: FailedInRow %d, want %d", runStarts(runs)[i], got, want)
		}
	}
	got, want := runs[1], failed
	want.FailedInRow = 1
	if !got.StartedAt.Equal(want.StartedAt) {
		t.Errorf("StartedAt %s, want %s", got.StartedAt, want.StartedAt)
	}
	got.StartedAt = want.StartedAt
	if got != want {
		t.Errorf("read back\n %+v\nwant\n %+v", got, want)
	}
	if runs := mustRuns(t, s, "support", 1); len(runs) != 1 || runs[0].Error != "dial tcp: connection refused" {
		t.Errorf("Runs(support, 1) = %v, want the newest pass only", runStarts(runs))
	}
	if runs := mustRuns(t, s, "nowhere", 10); len(runs) != 0 {
		t.Errorf("Runs of an installation without passes: %v", runStarts(runs))
	}
}

func testRunsKeep(t *testing.T, s ingestd.Store) {
	const keep = 3
	mustAddRun(t, s, run("support", 0, ""), keep)
	for i := 1; i <= 5; i++ {
		mustAddRun(t, s, run("support", i, "refused"), keep)
	}
	mustAddRun(t, s, run("handbook", 9, ""), keep)
	// The newest three and the last success, however old.
	runs := mustRuns(t, s, "support", 100)
	equalStrings(t, "after five failures", runStarts(runs), []string{"support@5", "support@4", "support@3", "support@0"})
	if got, want := runs[0].FailedInRow, 5; got != want {
		t.Errorf("newest FailedInRow %d, want %d: the count outlives the rows kept", got, want)
	}
	mustAddRun(t, s, run("support", 6, ""), keep)
	equalStrings(t, "after a success", runStarts(mustRuns(t, s, "support", 100)), []string{"support@6", "support@5", "support@4"})
	equalStrings(t, "another installation", runStarts(mustRuns(t, s, "handbook", 100)), []string{"handbook@9"})
	mustAddRun(t, s, run("support", 7, "refused again"), keep)
	if runs := mustRuns(t, s, "support", 100); runs[0].FailedInRow != 1 {
		t.Errorf("first failure after a success: FailedInRow %d, want 1", runs[0].FailedInRow)
	}
}

func testRunStates(t *testing.T, s ingestd.Store) {
	st, err := s.RunStates(ctx())
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 0 {
		t.Fatalf("RunStates of an empty store: %v", st)
	}
	mustAddRun(t, s, run("support", 0, ""), 10)
	mustAddRun(t, s, run("support", 1, ""), 10)
	mustAddRun(t, s, run("support", 2, "refused"), 10)
	mustAddRun(t, s, run("broken", 3, "files root does not exist"), 10)
	mustAddRun(t, s, run("broken", 4, "files root does not exist"), 10)
	mustAddRun(t, s, run("handbook", 5, ""), 10)
	if st, err = s.RunStates(ctx()); err != nil {
		t.Fatal(err)
	}
	state := func(id string) string {
		s, ok := st[id]
		if !ok {
			return "absent"
		}
		success := "never"
		if s.LastSuccess != nil {
			success = runStarts([]ingestd.SyncRun{*s.LastSuccess})[0]
		}
		return fmt.Sprintf("last %s (%d in a row), success %s, oldest @%d", runStarts([]ingestd.SyncRun{s.Last})[0],
			s.Last.FailedInRow, success, int(s.Oldest.Sub(t0)/time.Minute))
	}
	for id, want := range map[string]string{
		"support":  "last support@2 (1 in a row), success support@1, oldest @0",
		"broken":   "last broken@4 (2 in a row), success never, oldest @3",
		"handbook": "last handbook@5 (0 in a row), success handbook@5, oldest @5",
		"nowhere":  "absent",
	} {
		if got := state(id); got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	if got := len(st); got != 3 {
		t.Errorf("%d installations, want 3", got)
	}
}

func testRunsInvalid(t *testing.T, s ingestd.Store) {
	ok := run("support", 0, "")
	noInst, noTrigger, noStart := ok, ok, ok
	noInst.Installation, noTrigger.Trigger, noStart.StartedAt = "", "", time.Time{}
	for name, tc := range map[string]struct {
		r    ingestd.SyncRun
		keep int
	}{
		"no installation": {noInst, 10},
		"no trigger":      {noTrigger, 10},
		"no start":        {noStart, 10},
		"keep 0":          {ok, 0},
	} {
		err := s.AddRun(ctx(), tc.r, tc.keep)
		var ae *ingestd.Error
		if !errors.As(err, &ae) || ae.Code != ingestd.EINVALID {
			t.Errorf("%s: AddRun = %v, want EINVALID", name, err)
		}
	}
	if runs := mustRuns(t, s, "support", 10); len(runs) != 0 {
		t.Errorf("refused passes were recorded: %v", runStarts(runs))
	}
	_, err := s.Runs(ctx(), "support", 0)
	wantCode(t, err, ingestd.EINVALID)
}
