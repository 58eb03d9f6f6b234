package health

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
)

// The installations' state, read from the sync history at each scrape.
// Every process reads the same store, so every process reports the same
// values (take the max over processes, not the sum), including passes
// other processes ran and passes from before this process started.
var (
	descHistoryUp = prometheus.NewDesc("ingestd_sync_history_up",
		"1 when the sync history answered this scrape; 0 when the store did not (the other ingestd_sync_* and ingestd_installation_health series are then absent).", nil, nil)
	descLastSuccess = prometheus.NewDesc("ingestd_sync_last_success_timestamp_seconds",
		"When the installation's newest successful sync pass ended (Unix time), from the sync history: any process's pass, from before a restart too. Absent until one succeeds.", []string{"installation"}, nil)
	descLastPass = prometheus.NewDesc("ingestd_sync_last_pass_timestamp_seconds",
		"When the installation's newest recorded sync pass ended (Unix time), whatever its result.", []string{"installation"}, nil)
	descFailures = prometheus.NewDesc("ingestd_sync_consecutive_failures",
		"Sync passes of the installation that failed since its last success.", []string{"installation"}, nil)
	descHealth = prometheus.NewDesc("ingestd_installation_health",
		"1 for the installation's health status (ok, failing, stale, pending; see GET /v1/installations), 0 for the others.", []string{"installation", "status"}, nil)
)

// healthStatuses are the values of descHealth's status label.
var healthStatuses = []string{ingestd.HealthOK, ingestd.HealthFailing, ingestd.HealthStale, ingestd.HealthPending}

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 3 * time.Second

// collector exports the monitor's pass counter and, read at each scrape,
// every configured installation's state.
type collector struct{ m *Monitor }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	c.m.passes.Describe(ch)
	for _, d := range []*prometheus.Desc{descHistoryUp, descLastSuccess, descLastPass, descFailures, descHealth} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.m.passes.Collect(ch)
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	insts, err := c.m.statuses(ctx, false)
	if err != nil {
		c.m.log.Warn("health.scrape_failed", "error", err.Error())
		gauge(descHistoryUp, 0)
		return
	}
	gauge(descHistoryUp, 1)
	for _, st := range insts {
		if !st.LastSuccessAt.IsZero() {
			gauge(descLastSuccess, unix(st.LastSuccessAt), st.ID)
		}
		if st.LastRun != nil {
			gauge(descLastPass, unix(st.LastRun.EndedAt()), st.ID)
		}
		gauge(descFailures, float64(st.ConsecutiveFailures), st.ID)
		for _, s := range healthStatuses {
			v := 0.0
			if s == st.Health.Status {
				v = 1
			}
			gauge(descHealth, v, st.ID, s)
		}
	}
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
