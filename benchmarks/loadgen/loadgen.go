// Package loadgen is the retrieval load generator: N concurrent clients
// ask a running server for retrievals over REST or gRPC for a fixed
// duration, and it measures throughput, latency percentiles and errors.
// `ingestd bench retrieve` (an operator's load test against a deployment)
// and `ingestd-bench store` (the store benchmarks' HTTP load) both run it.
package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/client"
)

// Result is what one run measured.
type Result struct {
	Protocol    string        `json:"protocol"`
	Target      string        `json:"target"`
	Concurrency int           `json:"concurrency"`
	Duration    time.Duration `json:"duration_ns"`
	Requests    int           `json:"requests"`
	Errors      int           `json:"errors"`
	FirstError  string        `json:"first_error,omitempty"`
	Throughput  float64       `json:"throughput_per_s"`
	P50         time.Duration `json:"p50_ns"`
	P95         time.Duration `json:"p95_ns"`
	P99         time.Duration `json:"p99_ns"`
	Max         time.Duration `json:"max_ns"`
}

func (r Result) String() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }
	s := fmt.Sprintf("bench retrieve: %s %s, %d clients for %s\n", r.Protocol, r.Target, r.Concurrency, r.Duration.Round(time.Millisecond))
	s += fmt.Sprintf("requests %d  errors %d  throughput %.1f/s\n", r.Requests, r.Errors, r.Throughput)
	s += fmt.Sprintf("latency p50 %s  p95 %s  p99 %s  max %s\n", ms(r.P50), ms(r.P95), ms(r.P99), ms(r.Max))
	if r.FirstError != "" {
		s += "first error: " + r.FirstError + "\n"
	}
	return s
}

// ErrNoQueries is ReadQueries' error for a file without a query.
var ErrNoQueries = errors.New("no queries in the file")

// ReadQueries reads one query a line, skipping blank lines and lines
// that start with #.
func ReadQueries(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("queries: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if q := strings.TrimSpace(sc.Text()); q != "" && !strings.HasPrefix(q, "#") {
			out = append(out, q)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("queries %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("queries %s: %w", path, ErrNoQueries)
	}
	return out, nil
}

// Options configure Run.
type Options struct {
	Base        string
	Token       string
	GRPC        bool
	Concurrency int
	Duration    time.Duration
	Queries     []string
	TopK        int
}

// Run runs the load and measures it. A request counts as an
// error when it fails, answers other than 200, or carries no verdict.
func Run(ctx context.Context, o Options) (Result, error) {
	tr := &http.Transport{MaxIdleConns: o.Concurrency, MaxIdleConnsPerHost: o.Concurrency, IdleConnTimeout: time.Minute}
	proto := "http"
	if o.GRPC {
		proto = "grpc"
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
		if strings.HasPrefix(o.Base, "https:") {
			tr.Protocols.SetHTTP2(true)
		}
	}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	defer tr.CloseIdleConnections()
	call := HTTPCall(hc, o)
	if o.GRPC {
		call = grpcCall(hc, o)
	}
	// One warm-up request: a server that is down fails fast and clearly.
	if err := call(ctx, o.Queries[0]); err != nil {
		return Result{}, fmt.Errorf("the warm-up request over %s to %s: %w", proto, o.Base, err)
	}

	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	type worker struct {
		lat      []time.Duration
		errs     int
		firstErr error
	}
	workers := make([]worker, o.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			me := &workers[w]
			for i := w; ctx.Err() == nil; i++ {
				t0 := time.Now()
				err := call(ctx, o.Queries[i%len(o.Queries)])
				if ctx.Err() != nil {
					return // cut off by the deadline: not a server error
				}
				me.lat = append(me.lat, time.Since(t0))
				if err != nil {
					me.errs++
					if me.firstErr == nil {
						me.firstErr = err
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	res := Result{Protocol: proto, Target: o.Base, Concurrency: o.Concurrency, Duration: elapsed}
	var all []time.Duration
	for _, w := range workers {
		all = append(all, w.lat...)
		res.Errors += w.errs
		if w.firstErr != nil && res.FirstError == "" {
			res.FirstError = w.firstErr.Error()
		}
	}
	slices.Sort(all)
	res.Requests = len(all)
	res.Throughput = float64(len(all)) / elapsed.Seconds()
	res.P50, res.P95, res.P99 = Percentile(all, 0.50), Percentile(all, 0.95), Percentile(all, 0.99)
	if len(all) > 0 {
		res.Max = all[len(all)-1]
	}
	return res, nil
}

// Percentile returns the q-quantile (0 < q <= 1) of sorted by the
// nearest-rank method; 0 for no samples.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// HTTPCall is one POST /v1/retrieve of o.Base with o's token and top_k:
// an error unless it answers 200 with a verdict.
func HTTPCall(hc *http.Client, o Options) func(context.Context, string) error {
	return func(ctx context.Context, q string) error {
		body, _ := json.Marshal(ingestd.RetrieveRequest{Query: q, TopK: o.TopK}) // strings and ints: cannot fail
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.Base+"/v1/retrieve", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if o.Token != "" {
			req.Header.Set("Authorization", "Bearer "+o.Token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST /v1/retrieve: %s: %.200s", resp.Status, data)
		}
		var r struct {
			Verdict *ingestd.Verdict `json:"verdict"`
		}
		if err := json.Unmarshal(data, &r); err != nil || r.Verdict == nil {
			return fmt.Errorf("POST /v1/retrieve: answer without a verdict")
		}
		return nil
	}
}

func grpcCall(hc *http.Client, o Options) func(context.Context, string) error {
	c := client.New(o.Base, &client.Options{HTTPClient: hc, Token: o.Token, GRPC: true})
	return func(ctx context.Context, q string) error {
		resp, err := c.Retrieve(ctx, ingestd.RetrieveRequest{Query: q, TopK: o.TopK})
		if err != nil {
			return err
		}
		if resp.Verdict == nil {
			return fmt.Errorf("retrieve: answer without a verdict")
		}
		return nil
	}
}
