package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a job, the result label of ingestd_jobs_processed_total.
const (
	ResultOK         = "ok"          // the handler succeeded; the job is acked
	ResultRetry      = "retry"       // the handler failed; nak'd with the backoff delay
	ResultDeadLetter = "dead_letter" // failed permanently or for the last allowed time
	ResultHandedBack = "handed_back" // the worker was draining; nak'd for another worker
)

// metrics are the series a queue's workers count. Every process of a
// deployment exports them for itself: sum them over processes. How the
// sync passes went (last success, failures, health) is not counted here
// but read from the sync-pass history, which every process shares
// (package health).
type metrics struct {
	// refused counts jobs workers refused, by reason.
	refused *prometheus.CounterVec
	// processed counts jobs the handler ran, by kind and result.
	processed *prometheus.CounterVec
	// duration is how long the handler ran, by kind.
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestd_jobs_refused_total",
			Help: "Jobs a worker refused before running them (dead-lettered), by reason: unsigned, bad_signature, undecodable, subject_mismatch, unknown_installation.",
		}, []string{"reason"}),
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestd_jobs_processed_total",
			Help: "Jobs this worker ran, by kind (sync, item, delete) and result: ok, retry (nak'd with backoff), dead_letter, handed_back (nak'd while draining).",
		}, []string{"kind", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ingestd_jobs_duration_seconds",
			Help:    "How long this worker's handler ran a job, by kind (a sync job lists its source and queues item jobs; an item job chunks, embeds and stores one document).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"kind"}),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.refused, err = register(reg, m.refused); err != nil {
		return nil, err
	}
	if m.processed, err = register(reg, m.processed); err != nil {
		return nil, err
	}
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or returns the collector already registered
// under its name (a second queue in one process shares the series).
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("register metrics: %w", err)
	}
	return c, nil
}

// The queue's state, read from JetStream at each scrape. Every process
// reports the same stream: take the max over processes, not the sum.
var (
	descUp = prometheus.NewDesc("ingestd_jobs_stream_up",
		"1 when the job stream, its consumer and the dead letters answered this scrape, 0 when they did not (no leader elected, or NATS unreachable).", nil, nil)
	descPending = prometheus.NewDesc("ingestd_jobs_pending",
		"Jobs queued and not yet delivered to a worker (the consumer's num_pending): the queue depth.", nil, nil)
	descAckPending = prometheus.NewDesc("ingestd_jobs_ack_pending",
		"Jobs delivered and not yet acknowledged: running, or waiting out ack_wait after their worker died.", nil, nil)
	descRedelivered = prometheus.NewDesc("ingestd_jobs_redelivered",
		"Jobs delivered more than once and not yet acknowledged (the consumer's num_redelivered).", nil, nil)
	descStreamBytes = prometheus.NewDesc("ingestd_jobs_stream_bytes",
		"Bytes the job stream holds; at ingestd_jobs_stream_max_bytes publishes fail with \"job queue is full\".", nil, nil)
	descStreamMaxBytes = prometheus.NewDesc("ingestd_jobs_stream_max_bytes",
		"The job stream's limit (nats.max_bytes).", nil, nil)
	descDeadLetters = prometheus.NewDesc("ingestd_jobs_dead_letters",
		"Dead letters held (stream INGESTD_DLQ); `ingestd dlq list` shows them.", nil, nil)
	descConnected = prometheus.NewDesc("ingestd_nats_connected",
		"1 while this process is connected to NATS.", nil, nil)
	descReconnects = prometheus.NewDesc("ingestd_nats_reconnects_total",
		"Times this process reconnected to NATS (a node restarted, or the network dropped).", nil, nil)
)

// stateCollector reads the queue's state from JetStream when scraped, at
// most for scrapeTimeout.
type stateCollector struct{ q *Queue }

const scrapeTimeout = 3 * time.Second

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descPending, descAckPending, descRedelivered,
		descStreamBytes, descStreamMaxBytes, descDeadLetters, descConnected, descReconnects} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	q := c.q
	gauge := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	connected := 0.0
	if q.nc.IsConnected() {
		connected = 1
	}
	gauge(descConnected, connected)
	ch <- prometheus.MustNewConstMetric(descReconnects, prometheus.CounterValue, float64(q.nc.Stats().Reconnects))
	gauge(descStreamMaxBytes, float64(q.o.MaxBytes))

	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	up := 1.0
	if info, err := q.jobs.Info(ctx); err == nil {
		gauge(descStreamBytes, float64(info.State.Bytes))
	} else {
		up = 0
	}
	if info, err := q.cons.Info(ctx); err == nil {
		gauge(descPending, float64(info.NumPending))
		gauge(descAckPending, float64(info.NumAckPending))
		gauge(descRedelivered, float64(info.NumRedelivered))
	} else {
		up = 0
	}
	if info, err := q.dlq.Info(ctx); err == nil {
		gauge(descDeadLetters, float64(info.State.Msgs))
	} else {
		up = 0
	}
	gauge(descUp, up)
}
