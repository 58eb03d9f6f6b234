package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ingestd/ingestd/benchmarks/loadgen"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/internal/cli"
)

// Bounds of `ingestd bench retrieve`.
const (
	benchMaxConcurrency = 1024
	benchMaxDuration    = time.Hour
)

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
	case len(args) > 0 && args[0] == "agentdojo":
		return runBenchAgentDojo(ctx, e, args[1:])
	case len(args) > 0 && (args[0] == "store" || args[0] == "archive"):
		return &usageError{Cmd: "bench", Msg: fmt.Sprintf("bench %s is a benchmark for developing ingestd: run ingestd-bench %s (go run ./cmd/ingestd-bench %s --help)", args[0], args[0], args[0])}
	case len(args) > 0 && cli.IsHelp(args[0]):
		fmt.Fprintf(e.stdout, "Usage:\n%s", groupUsage("bench"))
		return nil
	case len(args) == 0 || args[0] != "retrieve":
		return &usageError{Cmd: "bench", Msg: "want retrieve, firewall or agentdojo"}
	}
	return runBenchRetrieve(ctx, e, args[1:])
}

// runBenchRetrieve is `ingestd bench retrieve`.
func runBenchRetrieve(ctx context.Context, e *env, args []string) error {
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
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return &usageError{Cmd: "bench retrieve", Msg: fmt.Sprintf("unexpected argument %q", pos[0])}
	case *conc < 1 || *conc > benchMaxConcurrency:
		return &usageError{Cmd: "bench retrieve", Msg: fmt.Sprintf("--concurrency must be 1..%d", benchMaxConcurrency)}
	case *dur <= 0 || *dur > benchMaxDuration:
		return &usageError{Cmd: "bench retrieve", Msg: fmt.Sprintf("--duration must be positive and at most %s", benchMaxDuration)}
	}
	base, token, err := benchTarget(e, *cfgPath, *target)
	if err != nil {
		return err
	}
	if err := loadgen.CheckTarget(base, *allowRemote); err != nil {
		return &usageError{Cmd: "bench retrieve", Msg: err.Error()}
	}
	queries := loadgen.DefaultQueries
	if *queriesFile != "" {
		if queries, err = readQueries(*queriesFile); err != nil {
			return err
		}
	}
	res, err := loadgen.Run(ctx, loadgen.Options{
		Base: strings.TrimRight(base, "/"), Token: token, GRPC: *useGRPC,
		Concurrency: *conc, Duration: *dur, Queries: queries, TopK: *topK,
	})
	if err != nil {
		return err
	}
	return printBench(e, res, *asJSON)
}

// benchTarget is the server bench retrieve loads, target unless it is
// empty, else the configuration's listen address, and the value of the
// first token with the retrieve scope. Without a configuration it needs
// target.
func benchTarget(e *env, cfgPath, target string) (base, token string, err error) {
	cfg, err := config.Load(cfgPath, registry())
	if err != nil {
		if target == "" {
			return "", "", err
		}
		return target, "", nil
	}
	base = target
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
				return "", "", cfg.TokenUnset(i)
			}
			return base, v, nil
		}
	}
	return base, "", nil
}

// printBench prints a run's result, as JSON with asJSON; a run with
// failed requests is an error.
func printBench(e *env, res loadgen.Result, asJSON bool) error {
	if asJSON {
		if err := writeIndented(e.stdout, res); err != nil {
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

// readQueries reads --queries: a file without a query is a usage mistake.
func readQueries(path string) ([]string, error) {
	q, err := loadgen.ReadQueries(path)
	if errors.Is(err, loadgen.ErrNoQueries) {
		return nil, &usageError{Msg: err.Error()}
	}
	return q, err
}
