package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/pipeline"
)

var hooks = ingestd.Installation{ID: "hooks", Kind: "webhook", Tier: ingestd.TierUntrustedExternal}

// event is one pushed job: an item with its text, or a deletion (text "").
type event struct {
	text string
	at   int // minutes after tEvents
}

var tEvents = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

func (e event) job() ingestd.Job {
	at := tEvents.Add(time.Duration(e.at) * time.Minute)
	if e.text == "" {
		return ingestd.Job{Kind: ingestd.JobDelete, Installation: hooks.ID, ExternalID: "o/r#1", At: at}
	}
	return ingestd.Job{Kind: ingestd.JobItem, Installation: hooks.ID, At: at,
		Item: &ingestd.Item{ExternalID: "o/r#1", ItemKind: "issue", Title: "issue", Text: e.text, UpdatedAt: at}}
}

type oneInstallation ingestd.Installation

func (o oneInstallation) Installation(id string) (ingestd.Installation, ingestd.Source, error) {
	if id != o.ID {
		return ingestd.Installation{}, nil, ingestd.Errorf(ingestd.ENOTFOUND, "no installation %q", id)
	}
	return ingestd.Installation(o), nil, nil
}

// TestEventTimeNeverRollsBack applies pushed events in the order they
// arrive and checks the document ends in the state of the newest one:
// replays, late arrivals and resurrections are stale.
func TestEventTimeNeverRollsBack(t *testing.T) {
	tests := []struct {
		name       string
		events     []event
		wantText   string // "" means deleted (or never stored)
		wantStatus ingestd.Status
	}{
		{"in order", []event{{"v1", 0}, {"v2", 1}}, "v2", ingestd.StatusActive},
		{"reverse order: the newer wins", []event{{"v2", 1}, {"v1", 0}}, "v2", ingestd.StatusActive},
		{"replayed older edit", []event{{"v1", 0}, {"v2", 2}, {"v1", 0}}, "v2", ingestd.StatusActive},
		{"same instant: the stored state stands", []event{{"v1", 1}, {"v2", 1}}, "v1", ingestd.StatusActive},
		{"opened replayed after deleted", []event{{"v1", 0}, {"", 1}, {"v1", 0}}, "", ingestd.StatusDeleted},
		{"opened replayed after a deletion at the same instant", []event{{"v1", 0}, {"", 0}, {"v1", 0}}, "", ingestd.StatusDeleted},
		{"an edit seen only after the deletion", []event{{"v1", 0}, {"", 2}, {"v2", 1}}, "", ingestd.StatusDeleted},
		{"deletion arrives before the opening", []event{{"", 1}, {"v1", 0}}, "", ""},
		{"old deletion replayed after a re-creation", []event{{"v1", 0}, {"", 1}, {"v3", 2}, {"", 1}}, "v3", ingestd.StatusActive},
		{"re-created after the deletion", []event{{"v1", 0}, {"", 1}, {"v3", 2}}, "v3", ingestd.StatusActive},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustPipeline(t)
			for _, e := range tt.events {
				if err := f.pipe.Handle(context.Background(), e.job(), oneInstallation(hooks)); err != nil {
					t.Fatalf("%+v: %v", e, err)
				}
			}
			gotText, gotStatus := docState(t, f.store)
			if gotText != tt.wantText || gotStatus != tt.wantStatus {
				t.Errorf("document = %q %q, want %q %q", gotText, gotStatus, tt.wantText, tt.wantStatus)
			}
		})
	}
}

// docState returns the text and status of o/r#1 ("" text when deleted).
func docState(tb testing.TB, st ingestd.Store) (string, ingestd.Status) {
	tb.Helper()
	id := ingestd.DocumentID(hooks.ID, "o/r#1")
	doc, err := st.Document(context.Background(), id)
	if ingestd.ErrorCode(err) == ingestd.ENOTFOUND {
		return "", ""
	}
	if err != nil {
		tb.Fatal(err)
	}
	if doc.Status == ingestd.StatusDeleted {
		return "", doc.Status
	}
	chunks, err := st.DocumentChunks(context.Background(), []string{id})
	if err != nil {
		tb.Fatal(err)
	}
	var text string
	for _, c := range chunks {
		text += c.Text
	}
	return text, doc.Status
}

func TestIngestAtOutcomes(t *testing.T) {
	f := mustPipeline(t)
	ctx := context.Background()
	it := *event{"v1", 0}.job().Item
	if got, err := f.pipe.IngestAt(ctx, hooks, it, tEvents); err != nil || got != pipeline.Added {
		t.Fatalf("first = %s %v, want added", got, err)
	}
	if got, err := f.pipe.IngestAt(ctx, hooks, it, tEvents); err != nil || got != pipeline.Stale {
		t.Errorf("replay = %s %v, want stale", got, err)
	}
	if got, err := f.pipe.DeleteAt(ctx, hooks, "o/r#1", tEvents.Add(-time.Second)); err != nil || got != pipeline.Stale {
		t.Errorf("older deletion = %s %v, want stale", got, err)
	}
	if got, err := f.pipe.DeleteAt(ctx, hooks, "o/r#1", tEvents); err != nil || got != pipeline.Deleted {
		t.Errorf("deletion = %s %v, want deleted", got, err)
	}
	if _, err := f.pipe.IngestAt(ctx, hooks, ingestd.Item{Text: "x"}, tEvents); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Errorf("item without id: %v, want EINVALID", err)
	}
	if _, err := f.pipe.DeleteAt(ctx, hooks, " ", tEvents); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Errorf("delete without id: %v, want EINVALID", err)
	}
}

// TestEventTimeConcurrent applies many events of one document at once: the
// newest must be what is stored, whatever order the goroutines run in.
func TestEventTimeConcurrent(t *testing.T) {
	f := mustPipeline(t)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			e := event{text: "v" + string(rune('a'+i)), at: i}
			if err := f.pipe.Handle(context.Background(), e.job(), oneInstallation(hooks)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, _ := docState(t, f.store); got != "vp" {
		t.Errorf("stored %q, want the newest (vp)", got)
	}
}
