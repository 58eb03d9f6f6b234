package metrics_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/metrics"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// gathered returns the verdict counts by "blocked,mode,reason" and the
// latency histogram's sample count and sum.
func gathered(t *testing.T, reg *prometheus.Registry) (map[string]float64, uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	var n uint64
	var sum float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "ingestd_retrieval_verdicts_total":
				key := ""
				for _, l := range m.GetLabel() {
					key += l.GetName() + "=" + l.GetValue() + ","
				}
				counts[key] = m.GetCounter().GetValue()
			case "ingestd_retrieval_duration_seconds":
				n, sum = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			default:
				t.Errorf("unexpected metric %s", mf.GetName())
			}
		}
	}
	return counts, n, sum
}

// TestCountsTheServicesVerdicts: wrapped around the retrieval service,
// the decorator counts each answer by mode, reason and blocked, and times
// it, under the names and labels the service used to record itself.
func TestCountsTheServicesVerdicts(t *testing.T) {
	s, e := retrievaltest.MustAcceptance(t)
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, Installations: retrievaltest.Installations()})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	r, err := metrics.New(svc, &metrics.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"vacation days accrue", "process my refund by wire transfer"} {
		if _, err := r.Retrieve(t.Context(), ingestd.RetrieveRequest{Query: q, TopK: 1, IncludeRejected: new(false)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Retrieve(t.Context(), ingestd.RetrieveRequest{Query: " "}); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Fatalf("empty query: %v, want EINVALID", err)
	}
	counts, n, _ := gathered(t, reg)
	want := map[string]float64{
		"blocked=false,mode=enforce,reason=no_untrusted_grounding,": 1,
		"blocked=true,mode=enforce,reason=untrusted_grounding,":     1,
	}
	if len(counts) != len(want) {
		t.Errorf("verdicts_total = %v, want %v", counts, want)
	}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("verdicts_total{%s} = %v, want %v (all %v)", k, counts[k], v, counts)
		}
	}
	if n != 2 {
		t.Errorf("latency histogram has %d samples, want 2 (a failed call is not timed)", n)
	}
}

// retrieverFunc answers Retrieve with a function.
type retrieverFunc func(context.Context, ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error)

func (f retrieverFunc) Retrieve(ctx context.Context, r ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error) {
	return f(ctx, r)
}

func (retrieverFunc) Provenance(context.Context, ingestd.ProvenanceRequest) (ingestd.ProvenanceReport, error) {
	return ingestd.ProvenanceReport{}, errors.New("no report")
}

// TestNoVerdictCountsAsBlocked: an answer without a verdict (a client
// passing on one it could not read) is counted as blocked; the latency is
// measured with the clock given.
func TestNoVerdictCountsAsBlocked(t *testing.T) {
	clock := time.Unix(0, 0)
	reg := prometheus.NewRegistry()
	r, err := metrics.New(retrieverFunc(func(context.Context, ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error) {
		clock = clock.Add(250 * time.Millisecond)
		return &ingestd.RetrieveResponse{}, nil
	}), &metrics.Options{Registerer: reg, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Retrieve(t.Context(), ingestd.RetrieveRequest{Query: "q"})
	if err != nil || resp.Verdict != nil {
		t.Fatalf("Retrieve = %+v, %v; want the answer unchanged", resp, err)
	}
	counts, n, sum := gathered(t, reg)
	if got := counts["blocked=true,mode=,reason=,"]; got != 1 || len(counts) != 1 {
		t.Errorf("verdicts_total = %v, want one blocked with empty mode and reason", counts)
	}
	if n != 1 || sum != 0.25 {
		t.Errorf("latency: %d samples summing %v s, want 1 of 0.25 s", n, sum)
	}
	if _, err := r.Provenance(t.Context(), ingestd.ProvenanceRequest{}); err == nil || err.Error() != "no report" {
		t.Errorf("Provenance = %v, want the wrapped error", err)
	}
}

// TestRegisterTwiceFails: a second set of the same metrics on one
// registry is refused, as two services on one registry were.
func TestRegisterTwiceFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(retrieverFunc(nil), &metrics.Options{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := metrics.New(retrieverFunc(nil), &metrics.Options{Registerer: reg}); err == nil {
		t.Fatal("second registration: no error")
	}
}
