package jobs

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
)

func TestNextScheduled(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		interval time.Duration
		now      time.Time
		want     time.Time
	}{
		{"inside a bucket", 10 * time.Minute, t0.Add(3 * time.Minute), t0.Add(10 * time.Minute)},
		{"at a bucket's start: the next one", 10 * time.Minute, t0, t0.Add(10 * time.Minute)},
		{"sub-second intervals count as a second", 300 * time.Millisecond, t0.Add(1500 * time.Millisecond), t0.Add(2 * time.Second)},
		{"never scheduled", 0, t0, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NextScheduled(tt.interval, tt.now); !got.Equal(tt.want) {
				t.Errorf("NextScheduled(%s, %s) = %s, want %s", tt.interval, tt.now, got, tt.want)
			}
		})
	}
}

// TestScheduledJobSaysSchedule: a scheduled pass's job carries its
// trigger, so the pass's record says what started it.
func TestScheduledJobSaysSchedule(t *testing.T) {
	q := MustQueue(t, MustEmbedded(t), nil)
	ctx := context.Background()
	if _, err := q.ScheduleOnce(ctx, []ingestd.Installation{{ID: "handbook", Kind: "files", Interval: time.Hour}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	m, err := q.jobs.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var job ingestd.Job
	if err := json.Unmarshal(m.Data, &job); err != nil {
		t.Fatal(err)
	}
	if got, want := job.Trigger, ingestd.TriggerSchedule; got != want {
		t.Errorf("scheduled job's trigger %q, want %q", got, want)
	}
}
