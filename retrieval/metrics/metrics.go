// Package metrics wraps an ingestd.Retriever with the retrieval metrics,
// a decorator at the edge: cmd wraps the retrieval service once and every
// surface that serves it (HTTP, gRPC, MCP) is counted alike.
//
//	ingestd_retrieval_verdicts_total{mode, reason, blocked}  answers by verdict
//	ingestd_retrieval_duration_seconds                       time to answer
//
// It also keeps, in memory, the turns it blocked per five minutes over the
// last day and the documents that caused the most blocks (blocks.go): the
// operator's view GET /v1/blocks serves.
//
// It never changes an answer, and it counts only answers: a call that
// fails is neither counted nor timed.
package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
)

var _ ingestd.Retriever = (*Retriever)(nil)

// Options configures a Retriever. A nil *Options means the defaults.
type Options struct {
	// Registerer receives the metrics; nil means they are kept but not
	// registered anywhere.
	Registerer prometheus.Registerer
	// Now is the clock the latency is measured with; default time.Now.
	Now func() time.Time
}

// Retriever is an ingestd.Retriever that counts the verdicts and times
// the answers of the one it wraps. It is safe for concurrent use if that
// one is.
type Retriever struct {
	next     ingestd.Retriever
	now      func() time.Time
	verdicts *prometheus.CounterVec
	latency  prometheus.Histogram
	blocks   *blocks // blocks.go
}

// New wraps next. It fails when the metrics cannot be registered (a name
// already registered with the Registerer).
func New(next ingestd.Retriever, o *Options) (*Retriever, error) {
	if o == nil {
		o = &Options{}
	}
	r := &Retriever{next: next, now: o.Now}
	if r.now == nil {
		r.now = time.Now
	}
	r.blocks = newBlocks(r.now())
	r.verdicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ingestd_retrieval_verdicts_total",
		Help: "Retrieval verdicts by firewall mode, reason and whether tools were blocked.",
	}, []string{"mode", "reason", "blocked"})
	r.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ingestd_retrieval_duration_seconds",
		Help:    "Time to answer a retrieval request (three blocks and the verdict).",
		Buckets: []float64{.001, .002, .004, .008, .015, .03, .06, .125, .25, .5, 1, 2.5},
	})
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{r.verdicts, r.latency} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("retrieval metrics: register: %w", err)
			}
		}
	}
	return r, nil
}

// Retrieve asks the wrapped Retriever, then counts the verdict and the
// time the answer took. An answer without a verdict (a client passing on
// a server's answer it could not read) allows no tools and is counted as
// blocked, with empty mode and reason.
func (r *Retriever) Retrieve(ctx context.Context, req ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error) {
	start := r.now()
	resp, err := r.next.Retrieve(ctx, req)
	if err != nil {
		return nil, err
	}
	v := resp.Verdict
	if v == nil {
		v = &ingestd.Verdict{}
	}
	r.verdicts.WithLabelValues(v.Mode, v.Reason, fmt.Sprint(!v.ToolsAllowed)).Inc()
	end := r.now()
	r.latency.Observe(end.Sub(start).Seconds())
	r.blocks.record(end, resp)
	return resp, nil
}

// Provenance asks the wrapped Retriever.
func (r *Retriever) Provenance(ctx context.Context, req ingestd.ProvenanceRequest) (ingestd.ProvenanceReport, error) {
	return r.next.Provenance(ctx, req)
}
