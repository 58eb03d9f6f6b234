package health_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/health"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
	"github.com/ingestd/ingestd/store/storetest"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// pass is a pass of inst that started ago before now and took a second;
// a non-empty errText makes it fail.
func pass(inst string, ago time.Duration, errText string) ingestd.SyncRun {
	return ingestd.SyncRun{Installation: inst, Trigger: ingestd.TriggerSchedule, StartedAt: now.Add(-ago), Duration: time.Second, Error: errText}
}

// mustMonitor returns a monitor over a new store holding the passes.
func mustMonitor(t *testing.T, o health.Options, passes ...ingestd.SyncRun) *health.Monitor {
	t.Helper()
	if o.Store == nil {
		o.Store = sqlitetest.MustOpen(t)
	}
	o.Now = func() time.Time { return now }
	m, err := health.New(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range passes {
		if err := m.Record(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func TestHealth(t *testing.T) {
	const iv = 10 * time.Minute
	tests := []struct {
		name        string
		interval    time.Duration
		opts        health.Options
		passes      []ingestd.SyncRun
		want        string
		wantReasons []string // each a substring of one reason, in order
	}{
		{"no pass yet", iv, health.Options{}, nil, ingestd.HealthPending, []string{"no sync pass is recorded yet"}},
		{"last pass succeeded", iv, health.Options{},
			[]ingestd.SyncRun{pass("x", 15*time.Minute, "refused"), pass("x", 5*time.Minute, "")}, ingestd.HealthOK, nil},
		{"last pass failed", iv, health.Options{},
			[]ingestd.SyncRun{pass("x", 15*time.Minute, ""), pass("x", 5*time.Minute, `files root "/srv/handbook" does not exist`)},
			ingestd.HealthFailing, []string{`the last pass failed: files root "/srv/handbook" does not exist`}},
		{"three failed in a row", iv, health.Options{},
			[]ingestd.SyncRun{pass("x", 9*time.Minute, "a"), pass("x", 6*time.Minute, "b"), pass("x", 3*time.Minute, "c")},
			ingestd.HealthFailing, []string{"the last 3 passes failed: c"}},
		{"fewer failures than failed_passes", iv, health.Options{FailedPasses: 3},
			[]ingestd.SyncRun{pass("x", 9*time.Minute, ""), pass("x", 6*time.Minute, "b"), pass("x", 3*time.Minute, "c")},
			ingestd.HealthOK, nil},
		{"failed_passes reached", iv, health.Options{FailedPasses: 2},
			[]ingestd.SyncRun{pass("x", 6*time.Minute, "b"), pass("x", 3*time.Minute, "c")},
			ingestd.HealthFailing, []string{"the last 2 passes failed: c"}},
		{"no success within three intervals", iv, health.Options{},
			[]ingestd.SyncRun{pass("x", 40*time.Minute, "")}, ingestd.HealthStale,
			[]string{"the last successful pass ended at 2026-06-01T11:20:01Z, more than 3 × its interval of 10m0s ago"}},
		{"stale_intervals widens it", iv, health.Options{StaleIntervals: 5},
			[]ingestd.SyncRun{pass("x", 40*time.Minute, "")}, ingestd.HealthOK, nil},
		{"never succeeded, first pass long ago", iv, health.Options{FailedPasses: 9},
			[]ingestd.SyncRun{pass("x", 50*time.Minute, "a"), pass("x", 5*time.Minute, "b")}, ingestd.HealthStale,
			[]string{"no pass has succeeded since the first recorded one at 2026-06-01T11:10:00Z"}},
		{"failing and stale", iv, health.Options{},
			[]ingestd.SyncRun{pass("x", 50*time.Minute, ""), pass("x", 5*time.Minute, "dial tcp: refused")}, ingestd.HealthFailing,
			[]string{"the last pass failed: dial tcp: refused", "the last successful pass ended"}},
		{"on demand only: never stale", 0, health.Options{},
			[]ingestd.SyncRun{pass("x", 1000*time.Hour, "")}, ingestd.HealthOK, nil},
		{"another installation's failure is not its own", iv, health.Options{},
			[]ingestd.SyncRun{pass("x", 5*time.Minute, ""), pass("y", 4*time.Minute, "refused")}, ingestd.HealthOK, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.opts
			o.Installations = []ingestd.Installation{{ID: "x", Kind: "files", Tier: ingestd.TierTrustedInternal, Interval: tt.interval}}
			sts, err := mustMonitor(t, o, tt.passes...).Installations(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			h := sts[0].Health
			if got, want := h.Status, tt.want; got != want {
				t.Errorf("status %s, want %s (reasons %q)", got, want, h.Reasons)
			}
			if got, want := len(h.Reasons), len(tt.wantReasons); got != want {
				t.Fatalf("reasons %q, want %d like %q", h.Reasons, want, tt.wantReasons)
			}
			for i, want := range tt.wantReasons {
				if !strings.Contains(h.Reasons[i], want) {
					t.Errorf("reason %d %q, want it to say %q", i, h.Reasons[i], want)
				}
			}
		})
	}
}

// TestInstallations: the view names every configured installation in
// configuration order, with its declaration, documents, newest pass, last
// success, failures in a row and next scheduled pass; the history of an
// installation no longer configured is not shown.
func TestInstallations(t *testing.T) {
	st := sqlitetest.MustOpen(t)
	storetest.MustPut(t, st, storetest.Doc("support", "a", ingestd.TierUntrustedExternal, "a"), nil, nil)
	storetest.MustPut(t, st, storetest.Doc("support", "b", ingestd.TierUntrustedExternal, "b"), nil, nil)
	mapped := storetest.Doc("support", "c", ingestd.TierUntrustedExternal, "c")
	mapped.Readers = ingestd.ReadersOf("user:alice@example.com")
	storetest.MustPut(t, st, mapped, nil, nil)
	if err := st.DeleteDocument(context.Background(), ingestd.DocumentID("support", "b")); err != nil {
		t.Fatal(err)
	}
	insts := []ingestd.Installation{
		{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal, Interval: 5 * time.Minute},
		{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal},
	}
	m := mustMonitor(t, health.Options{Store: st, Installations: insts,
		Next: func(inst ingestd.Installation, at time.Time) time.Time { return at.Add(inst.Interval) }},
		pass("support", 20*time.Minute, ""), pass("support", 10*time.Minute, "login refused"),
		pass("support", 5*time.Minute, "login refused"), pass("gone", time.Minute, ""))
	sts, err := m.Installations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 2 || sts[0].ID != "support" || sts[1].ID != "handbook" {
		t.Fatalf("installations %+v, want support and handbook in that order", sts)
	}
	s := sts[0]
	if s.Kind != "imap" || s.Tier != "untrusted-external" || s.IntervalSeconds != 300 || s.Documents != 2 || s.Unmapped != 1 {
		t.Errorf("support: kind %s, tier %s, interval %ds, %d documents (%d unmapped); want imap, untrusted-external, 300s, 2 (1 unmapped)",
			s.Kind, s.Tier, s.IntervalSeconds, s.Documents, s.Unmapped)
	}
	if s.LastRun == nil || s.LastRun.Error != "login refused" || !s.LastRun.StartedAt.Equal(now.Add(-5*time.Minute)) {
		t.Errorf("support's last pass %+v, want the one 5 minutes ago", s.LastRun)
	}
	if got, want := s.LastSuccessAt, now.Add(-20*time.Minute+time.Second); !got.Equal(want) {
		t.Errorf("last success %s, want %s (when that pass ended)", got, want)
	}
	if got, want := s.ConsecutiveFailures, 2; got != want {
		t.Errorf("consecutive failures %d, want %d", got, want)
	}
	if got, want := s.NextRunAt, now.Add(5*time.Minute); !got.Equal(want) {
		t.Errorf("next pass %s, want %s", got, want)
	}
	h := sts[1]
	if h.LastRun != nil || !h.LastSuccessAt.IsZero() || !h.NextRunAt.IsZero() || h.Health.Status != ingestd.HealthPending {
		t.Errorf("handbook (no pass, no interval): %+v", h)
	}
}

func TestRuns(t *testing.T) {
	insts := []ingestd.Installation{{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal}, {ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal}}
	m := mustMonitor(t, health.Options{Installations: insts, Keep: 2},
		pass("support", 4*time.Minute, ""), pass("support", 3*time.Minute, "a"), pass("support", 2*time.Minute, "b"), pass("support", time.Minute, "c"))
	ctx := context.Background()
	tests := []struct {
		name     string
		inst     string
		limit    int
		want     []string // errors, newest first
		wantCode string
	}{
		{"everything kept: the newest two and the last success", "support", 0, []string{"c", "b", ""}, ""},
		{"a limit", "support", 1, []string{"c"}, ""},
		{"none yet", "handbook", 0, []string{}, ""},
		{"not configured", "gone", 0, nil, ingestd.ENOTFOUND},
		{"negative limit", "support", -1, nil, ingestd.EINVALID},
		{"limit too large", "support", health.MaxRuns + 1, nil, ingestd.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs, err := m.Runs(ctx, tt.inst, tt.limit)
			if got := ingestd.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("error %v, want code %q", err, tt.wantCode)
			}
			if err != nil {
				if tt.wantCode == ingestd.ENOTFOUND && !strings.Contains(err.Error(), "configured: support, handbook") {
					t.Errorf("error %q does not name the configured installations", err)
				}
				return
			}
			got := []string{}
			for _, r := range runs {
				got = append(got, r.Error)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") || runs == nil {
				t.Errorf("runs %q, want %q (never nil)", got, tt.want)
			}
		})
	}
}

// TestMetrics: recorded passes are counted by result; the state of every
// configured installation is read from the history at each scrape.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	insts := []ingestd.Installation{
		{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal, Interval: time.Hour},
		{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal, Interval: time.Hour},
		{ID: "hooks", Kind: "webhook", Tier: ingestd.TierUntrustedExternal},
	}
	m := mustMonitor(t, health.Options{Installations: insts},
		pass("handbook", 3*time.Minute, ""), pass("support", 2*time.Minute, "login refused"), pass("support", time.Minute, "login refused"))
	reg.MustRegister(m.Collector())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			got[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	for name, want := range map[string]float64{
		`ingestd_sync_history_up{}`: 1,
		`ingestd_sync_passes_total{installation="support",result="failed",trigger="schedule"}`: 2,
		`ingestd_sync_passes_total{installation="handbook",result="ok",trigger="schedule"}`:    1,
		`ingestd_sync_last_success_timestamp_seconds{installation="handbook"}`:                 float64(now.Add(-3*time.Minute + time.Second).Unix()),
		`ingestd_sync_last_pass_timestamp_seconds{installation="support"}`:                     float64(now.Add(-time.Minute + time.Second).Unix()),
		`ingestd_sync_consecutive_failures{installation="support"}`:                            2,
		`ingestd_sync_consecutive_failures{installation="handbook"}`:                           0,
		`ingestd_installation_health{installation="support",status="failing"}`:                 1,
		`ingestd_installation_health{installation="support",status="ok"}`:                      0,
		`ingestd_installation_health{installation="handbook",status="ok"}`:                     1,
		`ingestd_installation_health{installation="hooks",status="pending"}`:                   1,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	if _, ok := got[`ingestd_sync_last_success_timestamp_seconds{installation="support"}`]; ok {
		t.Errorf("support never succeeded, yet it has a last success timestamp")
	}
}
