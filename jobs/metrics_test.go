package jobs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
)

// gauge returns the value of the metric name with the labels (name=value
// pairs) from reg, and whether it was there.
func gauge(tb testing.TB, reg prometheus.Gatherer, name string, labels ...string) (float64, bool) {
	tb.Helper()
	fams, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, l := range m.GetLabel() {
					found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
				}
				if !found {
					continue metric
				}
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			case m.Histogram != nil:
				return float64(m.Histogram.GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// TestMetrics: the queue's depth, ack-pending and dead letters are read
// from JetStream at a scrape; workers count what they ran by kind and
// result, and when a sync pass last succeeded.
func TestMetrics(t *testing.T) {
	e := MustEmbedded(t)
	reg := prometheus.NewRegistry()
	o := fast()
	o.Registerer = reg
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	o.Now = func() time.Time { return now }
	q := MustQueue(t, e, o)
	ctx := context.Background()

	if v, ok := gauge(t, reg, "ingestd_jobs_stream_up"); !ok || v != 1 {
		t.Errorf("ingestd_jobs_stream_up = %v (present %v), want 1", v, ok)
	}
	if v, _ := gauge(t, reg, "ingestd_nats_connected"); v != 1 {
		t.Errorf("ingestd_nats_connected = %v, want 1", v)
	}
	for i, id := range []string{"a", "b", "poison"} {
		job := itemJob("handbook", id, "text")
		if id == "poison" {
			job.Item.Text = "invalid"
		}
		if err := q.Publish(ctx, job, id); err != nil {
			t.Fatal(err)
		}
		// The consumer counts a stored message a moment after the
		// publish is acknowledged: on a loaded machine a scrape can come
		// first.
		eventually(t, fmt.Sprintf("ingestd_jobs_pending = %d after %d publishes", i+1, i+1), func() bool {
			v, _ := gauge(t, reg, "ingestd_jobs_pending")
			return v == float64(i+1)
		})
	}
	if err := q.Publish(ctx, ingestd.Job{Kind: ingestd.JobSync, Installation: "handbook"}, "sync-1"); err != nil {
		t.Fatal(err)
	}
	if v, _ := gauge(t, reg, "ingestd_jobs_stream_bytes"); v <= 0 {
		t.Errorf("ingestd_jobs_stream_bytes = %v with 4 jobs queued", v)
	}

	startWorker(t, q, func(ctx context.Context, job ingestd.Job) error {
		if job.Item != nil && job.Item.Text == "invalid" {
			return ingestd.Errorf(ingestd.EINVALID, "cannot be ingested")
		}
		return nil
	}, WorkerOptions{Concurrency: 2})
	eventually(t, "the queue to empty and the poison job to be a dead letter", func() bool {
		pending, _ := gauge(t, reg, "ingestd_jobs_pending")
		acking, _ := gauge(t, reg, "ingestd_jobs_ack_pending")
		dead, _ := gauge(t, reg, "ingestd_jobs_dead_letters")
		return pending == 0 && acking == 0 && dead == 1
	})
	for _, c := range []struct {
		kind, result string
		want         float64
	}{
		{"item", ResultOK, 2}, {"item", ResultDeadLetter, 1}, {"sync", ResultOK, 1}, {"item", ResultRetry, 0},
	} {
		if got, _ := gauge(t, reg, "ingestd_jobs_processed_total", "kind", c.kind, "result", c.result); got != c.want {
			t.Errorf("ingestd_jobs_processed_total{kind=%s,result=%s} = %v, want %v", c.kind, c.result, got, c.want)
		}
	}
	if got, _ := gauge(t, reg, "ingestd_jobs_duration_seconds", "kind", "item"); got != 3 {
		t.Errorf("ingestd_jobs_duration_seconds{kind=item} counts %v jobs, want 3", got)
	}

	// A scrape when JetStream does not answer says so instead of failing.
	e.Shutdown()
	if v, ok := gauge(t, reg, "ingestd_jobs_stream_up"); !ok || v != 0 {
		t.Errorf("after the server stopped ingestd_jobs_stream_up = %v (present %v), want 0", v, ok)
	}
	if _, ok := gauge(t, reg, "ingestd_jobs_pending"); ok {
		t.Error("ingestd_jobs_pending reported without an answer from JetStream")
	}
}
