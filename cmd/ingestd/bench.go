package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/client"
)

// Bounds of `ingestd bench retrieve`.
const (
	benchMaxConcurrency = 1024
	benchMaxDuration    = time.Hour
)

// benchQueries are asked in turn when --queries names no file: support
// and handbook questions of the kind the quickstart corpus answers.
var benchQueries = []string{
	"refund by bank transfer",
	"how do I reset my password",
	"deploy needs a green CI run",
	"invoice was charged twice",
	"cancel my subscription and refund",
	"who approves admin privileges",
	"export the customer table",
	"shipping delay for order",
	"change the billing address on the account",
	"release checklist before a deploy",
	"the payment failed with card declined",
	"how long does a refund take",
	"escalate a support ticket to engineering",
	"update the README with new information",
	"rotate the API token",
	"schedule a call with the account manager",
}

// benchResult is what one bench run measured.
type benchResult struct {
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

func (r benchResult) String() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }
	s := fmt.Sprintf("bench retrieve: %s %s, %d clients for %s\n", r.Protocol, r.Target, r.Concurrency, r.Duration.Round(time.Millisecond))
	s += fmt.Sprintf("requests %d  errors %d  throughput %.1f/s\n", r.Requests, r.Errors, r.Throughput)
	s += fmt.Sprintf("latency p50 %s  p95 %s  p99 %s  max %s\n", ms(r.P50), ms(r.P95), ms(r.P99), ms(r.Max))
	if r.FirstError != "" {
		s += "first error: " + r.FirstError + "\n"
	}
	return s
}

// runBench dispatches `ingestd bench firewall` to runBenchFirewall and is
// `ingestd bench retrieve`: N concurrent clients ask a running
// server for retrievals over REST (default) or gRPC for a fixed duration,
// then it prints throughput, latency percentiles and the error count. It
// targets loopback only unless --allow-remote, so a typo cannot load
// someone else's server. A non-zero error count exits 1.
func runBench(ctx context.Context, e *env, args []string) error {
	switch {
	case len(args) > 0 && args[0] == "firewall":
		return runBenchFirewall(ctx, e, args[1:])
	case len(args) > 0 && args[0] == "archive":
		return runBenchArchive(ctx, e, args[1:])
	case len(args) > 0 && args[0] == "store":
		return runBenchStore(ctx, e, args[1:])
	case len(args) > 0 && isHelp(args[0]):
		fmt.Fprintf(e.stdout, "Usage:\n%s", groupUsage("bench"))
		return nil
	case len(args) == 0 || args[0] != "retrieve":
		return &usageError{cmd: "bench", msg: "want retrieve, firewall, archive or store"}
	}
	fs := flag.NewFlagSet("bench retrieve", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	conc := fs.Int("concurrency", 16, "concurrent clients (1..1024)")
	dur := fs.Duration("duration", 10*time.Second, "how long to run (at most 1h)")
	useGRPC := fs.Bool("grpc", false, "call ingestd.v1.RetrievalService/Retrieve over gRPC (h2c) instead of POST /v1/retrieve")
	target := fs.String("url", "", "server base URL (default: http://<listen> from the config)")
	queriesFile := fs.String("queries", "", "file with one query per line (default: a built-in list)")
	allowRemote := fs.Bool("allow-remote", false, "allow a target that is not a loopback address")
	topK := fs.Int("top-k", 0, "top_k of each request (0: the server's default)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{cmd: "bench retrieve", msg: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	if *conc < 1 || *conc > benchMaxConcurrency {
		return &usageError{cmd: "bench retrieve", msg: fmt.Sprintf("--concurrency must be 1..%d", benchMaxConcurrency)}
	}
	if *dur <= 0 || *dur > benchMaxDuration {
		return &usageError{cmd: "bench retrieve", msg: fmt.Sprintf("--duration must be positive and at most %s", benchMaxDuration)}
	}

	var token string
	base := *target
	if cfg, err := LoadConfig(*cfgPath, registry()); err == nil {
		if base == "" {
			scheme := "http"
			if cfg.TLS.Cert != "" {
				scheme = "https"
			}
			base = scheme + "://" + cfg.Listen
		}
		for i, t := range cfg.Auth.Tokens {
			if slices.Contains(t.Scopes, "retrieve") {
				v, ok := e.lookupEnv(t.TokenEnv)
				if !ok || v == "" {
					return cfg.tokenUnset(i)
				}
				token = v
				break
			}
		}
	} else if base == "" {
		return err
	}
	if err := checkBenchTarget(base, *allowRemote); err != nil {
		return &usageError{cmd: "bench retrieve", msg: err.Error()}
	}
	queries := benchQueries
	if *queriesFile != "" {
		if queries, err = readQueries(*queriesFile); err != nil {
			return err
		}
	}

	res, err := benchRetrieve(ctx, benchOptions{
		Base: strings.TrimRight(base, "/"), Token: token, GRPC: *useGRPC,
		Concurrency: *conc, Duration: *dur, Queries: queries, TopK: *topK,
	})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else {
		fmt.Fprint(e.stdout, res)
	}
	if res.Errors > 0 {
		return fmt.Errorf("%d of %d requests failed", res.Errors, res.Requests)
	}
	return nil
}

// checkBenchTarget refuses a URL that is not http(s) or, unless
// allowRemote, whose host is not a loopback address or "localhost".
func checkBenchTarget(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("target %q is not an http(s) URL", raw)
	}
	if allowRemote {
		return nil
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("target %q is not a loopback address; pass --allow-remote to load another machine", raw)
}

func readQueries(path string) ([]string, error) {
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
		return nil, &usageError{msg: fmt.Sprintf("queries %s: no queries in the file", path)}
	}
	return out, nil
}

type benchOptions struct {
	Base        string
	Token       string
	GRPC        bool
	Concurrency int
	Duration    time.Duration
	Queries     []string
	TopK        int
}

// benchRetrieve runs the load and measures it. A request counts as an
// error when it fails, answers other than 200, or carries no verdict.
func benchRetrieve(ctx context.Context, o benchOptions) (benchResult, error) {
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
	call := httpCall(hc, o)
	if o.GRPC {
		call = grpcCall(hc, o)
	}
	// One warm-up request: a server that is down fails fast and clearly.
	if err := call(ctx, o.Queries[0]); err != nil {
		return benchResult{}, fmt.Errorf("the warm-up request over %s to %s: %w", proto, o.Base, err)
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

	res := benchResult{Protocol: proto, Target: o.Base, Concurrency: o.Concurrency, Duration: elapsed}
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
	res.P50, res.P95, res.P99 = percentile(all, 0.50), percentile(all, 0.95), percentile(all, 0.99)
	if len(all) > 0 {
		res.Max = all[len(all)-1]
	}
	return res, nil
}

// percentile returns the q-quantile (0 < q <= 1) of sorted by the
// nearest-rank method; 0 for no samples.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func httpCall(hc *http.Client, o benchOptions) func(context.Context, string) error {
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

func grpcCall(hc *http.Client, o benchOptions) func(context.Context, string) error {
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
