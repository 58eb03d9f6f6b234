package jobs

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

// mustFindBytes returns the files under dir that hold needle.
func mustFindBytes(tb testing.TB, dir string, needle []byte) []string {
	tb.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return found
}

// canaryJob reports whether a job's item holds the canary.
func canaryJob(_ context.Context, j ingestd.Job) (bool, error) {
	return j.Item != nil && strings.Contains(j.Item.Text, canary), nil
}

const canary = "canaryq7z3x9k2"

// TestScrubErasesJobsDeadLettersAndEvents: an erased item's pending job
// and dead letter are overwritten in the stream files (a plain delete
// leaves them there), its events go, other messages stay; a job consumed
// before the erasure leaves nothing once the stream is empty. The files
// of the stopped server are read raw.
func TestScrubErasesJobsDeadLettersAndEvents(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		consume bool // a worker runs the canary job first
	}{
		{"pending", false},
		{"consumed", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			e, err := StartEmbedded(EmbeddedOptions{StoreDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			stopped := false
			stop := func() {
				if !stopped {
					stopped = true
					e.Shutdown()
				}
			}
			t.Cleanup(stop)
			q := MustQueue(t, e, fast())
			if tt.consume {
				stopWorker := startWorker(t, q, func(context.Context, ingestd.Job) error { return nil }, WorkerOptions{})
				if err := q.Publish(ctx, itemJob("support", "<a@x>", "the secret is "+canary), "a"); err != nil {
					t.Fatal(err)
				}
				eventually(t, "the job consumed", func() bool { return streamMsgs(t, q, JobsStream) == 0 })
				stopWorker()
			} else {
				for _, j := range []struct{ ext, text string }{{"<a@x>", "the secret is " + canary}, {"<b@x>", "ordinary words"}} {
					if err := q.Publish(ctx, itemJob("support", j.ext, j.text), j.ext); err != nil {
						t.Fatal(err)
					}
				}
			}
			// A dead letter carrying the canary, and one of another installation.
			for i, inst := range []string{"support", "other"} {
				data := []byte(`{"kind":"item","installation":"` + inst + `","item":{"external_id":"<d@x>","text":"dead ` + canary + `"}}`)
				if err := q.deadLetter(ctx, JobsPrefix+"item."+inst, nil, uint64(100+i), 5, data, "", ingestd.Errorf(ingestd.EINVALID, "poison")); err != nil {
					t.Fatal(err)
				}
			}
			for _, id := range []string{"dgone", "dkept"} {
				if err := q.PublishStored(ctx, &ingestd.Document{ID: id, Installation: "support", ContentHash: "h", Status: ingestd.StatusActive}); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.Flush(ctx); err != nil {
				t.Fatal(err)
			}

			r, err := q.Scrub(ctx, []string{"support"}, []string{"dgone"}, canaryJob)
			if err != nil {
				t.Fatalf("Scrub: %v", err)
			}
			wantJobs := 1
			if tt.consume {
				wantJobs = 0
			}
			if r.Jobs != wantJobs || r.DeadLetters != 1 || r.Events != 1 {
				t.Fatalf("Scrub = %+v, want %d job, 1 dead letter, 1 event", r, wantJobs)
			}
			if got := streamMsgs(t, q, DLQStream); got != 1 {
				t.Fatalf("dead letters left: %d, want the other installation's", got)
			}
			if got := streamMsgs(t, q, EventsStream); got != 1 {
				t.Fatalf("events left: %d, want 1", got)
			}
			if !tt.consume && (streamMsgs(t, q, JobsStream) != 1 || !slices.Contains(r.Busy, JobsStream)) {
				t.Fatalf("the other job is gone, or the busy jobs stream is not reported: %+v", r)
			}
			stop()
			// The other installation's dead letter was not ours to erase.
			found := mustFindBytes(t, dir, []byte(canary))
			for _, f := range found {
				if !strings.Contains(f, DLQStream) {
					t.Errorf("%s still holds the erased text", f)
				}
			}
			if len(found) != 1 {
				t.Errorf("the canary is in %q; want it only in the other installation's dead letter", found)
			}
			if tt.consume {
				return
			}
			if got := mustFindBytes(t, dir, []byte("ordinary words")); len(got) == 0 {
				t.Error("the other job's text is gone from the files")
			}
		})
	}
}
