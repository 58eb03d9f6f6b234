package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/benchmarks/loadgen"
	"github.com/ingestd/ingestd/benchmarks/storebench"
	"github.com/ingestd/ingestd/internal/cli"
	"github.com/ingestd/ingestd/internal/private"
)

// runStore is `ingestd-bench store SUBCOMMAND`, the embedded store's
// benchmarks (issue 20). Each one compares with a baseline measured in
// the same run and prints medians over --rounds interleaved rounds.
func runStore(ctx context.Context, e *env, args []string) error {
	usage := &usageError{Cmd: "store", Msg: "want corpus, ingest, serve or retrieve"}
	if len(args) == 0 {
		return usage
	}
	if cli.IsHelp(args[0]) {
		fmt.Fprintf(e.stdout, "Usage:\n%s", cli.GroupUsage(synopses, "store"))
		return nil
	}
	switch args[0] {
	case "corpus":
		return runStoreCorpus(ctx, e, args[1:])
	case "serve":
		return runStoreServe(ctx, e, args[1:])
	case "ingest":
		return runStoreIngest(ctx, e, args[1:])
	case "retrieve":
		return runStoreRetrieve(ctx, e, args[1:])
	}
	return usage
}

// runStoreCorpus builds the synthetic corpus the other store
// benchmarks read: `ingestd-bench store corpus --dir D --chunks N`.
func runStoreCorpus(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("store corpus", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory to build the corpus in (created; must not hold one)")
	chunks := fs.Int("chunks", 100_000, "chunks to generate (4 per document)")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || *chunks <= 0 {
		return &usageError{Cmd: "store corpus", Msg: "--dir and a positive --chunks are required"}
	}
	start := time.Now()
	c, err := storebench.Build(ctx, *dir, *chunks, storebench.BuildOptions{Progress: func(docs int) {
		if docs%25000 == 0 {
			fmt.Fprintf(e.stderr, "%d documents in %s\n", docs, time.Since(start).Round(time.Second))
		}
	}})
	if err != nil {
		return err
	}
	fi, _ := os.Stat(c.DB)
	var size int64
	if fi != nil {
		size = fi.Size()
	}
	fmt.Fprintf(e.stdout, "corpus: %d documents, %d chunks in %s (%s, %d MB); serve it with: ingestd serve --config %s\n",
		c.Docs, c.Chunks, time.Since(start).Round(time.Second), c.DB, size>>20, c.Config)
	return nil
}

// serveRound is one start of `ingestd serve` on the corpus.
type serveRound struct {
	Chunks   int           `json:"chunks"`
	ScanRows time.Duration `json:"scan_rows_ns"` // the baseline: one SELECT of every chunk row
	Healthz  time.Duration `json:"healthz_ns"`   // from process start to /healthz 200
	Readyz   time.Duration `json:"readyz_ns"`    // from process start to /readyz 200
	// FirstAnswer is from process start to the first retrieval answered
	// (asked once /readyz said 200): a server that loads its indexes on
	// the first search, not before ready, pays for it here.
	FirstAnswer time.Duration `json:"first_answer_ns"`
	Ready       storebench.Memory
	Loaded      storebench.Memory
	Load        loadgen.Result `json:"load"`
	ReadyRatio  float64        `json:"ready_over_scan"`
}

// runStoreServe measures `ingestd serve` on a corpus: cold start to
// /healthz and /readyz against one SELECT of every chunk row (the
// baseline, run in the same round), resident memory per chunk when ready
// and after a retrieval load, and the load's throughput.
func runStoreServe(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("store serve", flag.ContinueOnError)
	dir := fs.String("dir", "", "a corpus directory (ingestd-bench store corpus builds one)")
	rounds := fs.Int("rounds", 3, "rounds (each starts serve afresh)")
	load := fs.Duration("load", 20*time.Second, "retrieval load after ready (0: none)")
	conc := fs.Int("concurrency", 16, "clients of the load")
	asJSON := fs.Bool("json", false, "print every round as JSON")
	serveBin := fs.String("serve-bin", "", "the ingestd binary to start (default: ingestd beside this binary, else on $PATH), to compare two builds on one corpus")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || *rounds < 1 {
		return &usageError{Cmd: "store serve", Msg: "--dir is required and --rounds must be positive"}
	}
	c, queries, exe, err := benchCorpus(*dir, *serveBin, true)
	if err != nil {
		return err
	}
	var out []serveRound
	for r := range *rounds {
		var sr serveRound
		n, scan, err := storebench.ScanRows(ctx, c.DB)
		if err != nil {
			return fmt.Errorf("baseline scan: %w", err)
		}
		sr.Chunks, sr.ScanRows = n, scan
		srv, err := storebench.StartServe(exe, c)
		if err != nil {
			return err
		}
		err = func() error {
			if sr.Healthz, err = srv.WaitFor(ctx, "/healthz", 10*time.Minute); err != nil {
				return err
			}
			if sr.Readyz, err = srv.WaitFor(ctx, "/readyz", 10*time.Minute); err != nil {
				return err
			}
			if sr.Ready, err = storebench.ReadMemory(srv.PID()); err != nil {
				return err
			}
			hc := &http.Client{Timeout: 10 * time.Minute}
			if err := loadgen.HTTPCall(hc, loadgen.Options{Base: srv.Base})(ctx, queries[0]); err != nil {
				return fmt.Errorf("the first retrieval: %w", err)
			}
			sr.FirstAnswer = srv.Since()
			if *load > 0 {
				if sr.Load, err = loadgen.Run(ctx, loadgen.Options{Base: srv.Base, Concurrency: *conc, Duration: *load, Queries: queries}); err != nil {
					return err
				}
				if sr.Loaded, err = storebench.ReadMemory(srv.PID()); err != nil {
					return err
				}
			}
			return nil
		}()
		if serr := srv.Stop(); err == nil && serr != nil {
			err = fmt.Errorf("serve exited: %w", serr)
		}
		if err != nil {
			return err
		}
		sr.ReadyRatio = float64(sr.Readyz) / float64(sr.ScanRows)
		out = append(out, sr)
		if !*asJSON {
			fmt.Fprintf(e.stdout, "round %d: %d chunks; scan %s; /healthz %s, /readyz %s (%.2f× the scan), first answer %s; RSS ready %.2f KB/chunk, after load %.2f KB/chunk (peak %.2f); load %.1f req/s p50 %s p99 %s\n",
				r+1, n, ms(sr.ScanRows), ms(sr.Healthz), ms(sr.Readyz), sr.ReadyRatio, ms(sr.FirstAnswer),
				perChunk(sr.Ready.RSS, n), perChunk(sr.Loaded.RSS, n), perChunk(sr.Loaded.Peak, n),
				sr.Load.Throughput, ms(sr.Load.P50), ms(sr.Load.P99))
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	med := func(f func(serveRound) float64) float64 { return medianOf(out, f) }
	n := out[0].Chunks
	fmt.Fprintf(e.stdout, "median of %d: /readyz %.0f ms = %.2f× the scan (%.0f ms); first answer %.0f ms = %.2f× the scan; /healthz %.0f ms; RSS ready %.2f KB/chunk, after load %.2f KB/chunk, peak %.2f KB/chunk; load %.1f req/s\n",
		len(out), med(func(r serveRound) float64 { return msf(r.Readyz) }), med(func(r serveRound) float64 { return r.ReadyRatio }),
		med(func(r serveRound) float64 { return msf(r.ScanRows) }),
		med(func(r serveRound) float64 { return msf(r.FirstAnswer) }), med(func(r serveRound) float64 { return float64(r.FirstAnswer) / float64(r.ScanRows) }),
		med(func(r serveRound) float64 { return msf(r.Healthz) }),
		med(func(r serveRound) float64 { return perChunk(r.Ready.RSS, n) }), med(func(r serveRound) float64 { return perChunk(r.Loaded.RSS, n) }),
		med(func(r serveRound) float64 { return perChunk(r.Loaded.Peak, n) }), med(func(r serveRound) float64 { return r.Load.Throughput }))
	return nil
}

func perChunk(bytes int64, chunks int) float64 {
	if chunks == 0 {
		return 0
	}
	return float64(bytes) / 1024 / float64(chunks)
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ms(d time.Duration) string { return strings.TrimSuffix(fmt.Sprintf("%.0fms", msf(d)), "") }

// ingestRound is one round of `ingestd-bench store ingest`.
type ingestRound struct {
	Chunks       int             `json:"chunks"`
	Syncs        []ingestSyncRun `json:"syncs"`          // one per --bin
	Raw          time.Duration   `json:"raw_insert_ns"`  // the same rows with a full-text table, 1,000-row transactions
	RawFTS       string          `json:"raw_insert_fts"` // its module: fts5, or fts4 when the driver has no FTS5
	RawCPU       time.Duration   `json:"raw_insert_cpu_ns"`
	RawNoFTS     time.Duration   `json:"raw_insert_no_fts_ns"` // the same without the full-text table
	RawRate      float64         `json:"raw_chunks_per_s"`
	RawNoFTSRate float64         `json:"raw_no_fts_chunks_per_s"`
}

// ingestSyncRun is one `ingestd sync` process of a round.
type ingestSyncRun struct {
	Bin   string        `json:"bin"`
	Wall  time.Duration `json:"wall_ns"`
	CPU   time.Duration `json:"cpu_ns"`
	Rate  float64       `json:"chunks_per_s"`
	Ratio float64       `json:"over_raw"` // Rate / RawRate
	// CPURatio compares CPU time per chunk instead of wall time: the
	// raw insert's over the sync's (on a shared machine the wall clock
	// also measures the neighbours).
	CPURatio float64 `json:"cpu_over_raw"`
}

// runStoreIngest compares `ingestd sync` of generated Markdown files
// with the plainest SQLite insert of the chunks that sync stored, in the
// same round: `ingestd-bench store ingest [--docs N] [--rounds N]`. With
// several --bin, each round runs each binary's sync in turn.
func runStoreIngest(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("store ingest", flag.ContinueOnError)
	docs := fs.Int("docs", 10_000, "Markdown files of about 2 KB to generate")
	rounds := fs.Int("rounds", 3, "rounds")
	dirFlag := fs.String("dir", "", "working directory (default: a temporary one, removed after)")
	bins := fs.String("bin", "", "comma-separated ingestd binaries whose sync is measured, in turn (default: ingestd beside this binary, else on $PATH)")
	asJSON := fs.Bool("json", false, "print every round as JSON")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *docs <= 0 || *rounds < 1 {
		return &usageError{Cmd: "store ingest", Msg: "--docs and --rounds must be positive"}
	}
	dir := *dirFlag
	if dir == "" {
		d, err := private.MkdirTemp("", "ingestd-bench-ingest")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var exes []string
	if *bins != "" {
		exes = strings.Split(*bins, ",")
	} else {
		exe, err := ingestdBinary()
		if err != nil {
			return err
		}
		exes = []string{exe}
	}
	files := filepath.Join(dir, "files")
	if _, err := os.Stat(files); err != nil {
		if _, err := storebench.WriteMarkdown(files, *docs, 1); err != nil {
			return err
		}
	}
	var out []ingestRound
	for r := range *rounds {
		var ir ingestRound
		var rows []storebench.Row
		for i := range exes {
			// Each round starts with another binary, so none always runs
			// first.
			exe := exes[(i+r)%len(exes)]
			rd := filepath.Join(dir, fmt.Sprintf("round-%d-%d", r, i))
			os.RemoveAll(rd)
			if err := private.MkdirAll(rd); err != nil {
				return err
			}
			cfg := filepath.Join(rd, "ingestd.yaml")
			if err := private.WriteFile(cfg, []byte(storebench.IngestConfig(files, filepath.Join(rd, "data")))); err != nil {
				return err
			}
			cmd := exec.CommandContext(ctx, exe, "sync", "docs", "--config", cfg, "--json")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("sync (%s): %w: %s", exe, err, stderr.String())
			}
			run := ingestSyncRun{Bin: exe, Wall: time.Since(start), CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
			got, err := storebench.ReadRows(ctx, filepath.Join(rd, "data", "ingestd.db"))
			if err != nil {
				return err
			}
			if rows == nil {
				rows = got
			} else if len(got) != len(rows) {
				return fmt.Errorf("%s stored %d chunks, %s %d", exe, len(got), ir.Syncs[0].Bin, len(rows))
			}
			run.Rate = float64(len(got)) / run.Wall.Seconds()
			ir.Syncs = append(ir.Syncs, run)
			os.RemoveAll(rd)
		}
		slices.SortStableFunc(ir.Syncs, func(a, b ingestSyncRun) int { return slices.Index(exes, a.Bin) - slices.Index(exes, b.Bin) })
		ir.Chunks = len(rows)
		rd := filepath.Join(dir, fmt.Sprintf("round-%d-raw", r))
		if err := private.MkdirAll(rd); err != nil {
			return err
		}
		var err error
		if ir.Raw, ir.RawCPU, ir.RawFTS, err = storebench.RawInsert(ctx, filepath.Join(rd, "raw.db"), rows, 1000, true); err != nil {
			return fmt.Errorf("raw insert: %w", err)
		}
		if ir.RawNoFTS, _, _, err = storebench.RawInsert(ctx, filepath.Join(rd, "raw-nofts.db"), rows, 1000, false); err != nil {
			return fmt.Errorf("raw insert: %w", err)
		}
		os.RemoveAll(rd)
		ir.RawRate = float64(ir.Chunks) / ir.Raw.Seconds()
		ir.RawNoFTSRate = float64(ir.Chunks) / ir.RawNoFTS.Seconds()
		for i := range ir.Syncs {
			ir.Syncs[i].Ratio = ir.Syncs[i].Rate / ir.RawRate
			ir.Syncs[i].CPURatio = float64(ir.RawCPU) / float64(ir.Syncs[i].CPU)
		}
		out = append(out, ir)
		if !*asJSON {
			fmt.Fprintf(e.stdout, "round %d: %d chunks; raw insert with %s %.0f chunks/s (without %.0f)", r+1, ir.Chunks, strings.ToUpper(ir.RawFTS), ir.RawRate, ir.RawNoFTSRate)
			for _, s := range ir.Syncs {
				fmt.Fprintf(e.stdout, "; %s sync %.0f chunks/s (%s, CPU %s) = %.2f of raw (CPU %.2f)", filepath.Base(s.Bin), s.Rate, ms(s.Wall), ms(s.CPU), s.Ratio, s.CPURatio)
			}
			fmt.Fprintln(e.stdout)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	med := func(f func(ingestRound) float64) float64 { return medianOf(out, f) }
	fmt.Fprintf(e.stdout, "baseline: the %d chunks' text and stored vector (384-d float32 blob) inserted into one table (seq INTEGER PRIMARY KEY, text, embedding) "+
		"in 1,000-row transactions, one prepared INSERT, WAL, synchronous=NORMAL; with an %s table over the text, and without\n",
		out[0].Chunks, strings.ToUpper(out[0].RawFTS))
	fmt.Fprintf(e.stdout, "median of %d rounds (ratios per round, then the median): raw insert with %s %.0f chunks/s (without %.0f)",
		len(out), strings.ToUpper(out[0].RawFTS), med(func(r ingestRound) float64 { return r.RawRate }), med(func(r ingestRound) float64 { return r.RawNoFTSRate }))
	for i, exe := range exes {
		fmt.Fprintf(e.stdout, "; %s sync %.0f chunks/s = %.2f of raw with %s, %.2f of raw without (by CPU time %.2f)", filepath.Base(exe),
			med(func(r ingestRound) float64 { return r.Syncs[i].Rate }), med(func(r ingestRound) float64 { return r.Syncs[i].Ratio }),
			strings.ToUpper(out[0].RawFTS), med(func(r ingestRound) float64 { return r.Syncs[i].Rate / r.RawNoFTSRate }),
			med(func(r ingestRound) float64 { return r.Syncs[i].CPURatio }))
	}
	fmt.Fprintln(e.stdout)
	return nil
}

// retrieveRound is one round of `ingestd-bench store retrieve`.
type retrieveRound struct {
	Calls        int            `json:"calls"`
	P50          time.Duration  `json:"p50_ns"` // one caller, in process
	P99          time.Duration  `json:"p99_ns"`
	CPUPerCall   time.Duration  `json:"cpu_per_call_ns"`  // the process's CPU time over the one caller's calls, per call
	InProcRate   float64        `json:"in_process_per_s"` // --concurrency callers, in process
	HTTP         loadgen.Result `json:"http"`             // --concurrency clients over HTTP
	RateOverHTTP float64        `json:"in_process_over_http"`
}

// runStoreRetrieve measures the whole retrieval call on a corpus:
// its latency with one caller and its rate with --concurrency callers in
// this process, then the rate of as many HTTP clients against `ingestd
// serve` on the same file, in the same round.
func runStoreRetrieve(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("store retrieve", flag.ContinueOnError)
	dir := fs.String("dir", "", "a corpus directory (ingestd-bench store corpus builds one)")
	rounds := fs.Int("rounds", 3, "rounds")
	calls := fs.Int("calls", 300, "calls of the one caller, for p50 and p99")
	dur := fs.Duration("duration", 20*time.Second, "how long the concurrent callers run, in process and over HTTP")
	conc := fs.Int("concurrency", 16, "concurrent callers")
	serveBin := fs.String("serve-bin", "", "the ingestd binary to serve HTTP (default: ingestd beside this binary, else on $PATH)")
	asJSON := fs.Bool("json", false, "print every round as JSON")
	withHTTP := fs.Bool("http", true, "also run the HTTP clients against ingestd serve (--http=false: in process only)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the first round's one-caller calls to this file")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || *rounds < 1 || *calls < 1 || *conc < 1 || *dur <= 0 {
		return &usageError{Cmd: "store retrieve", Msg: "--dir is required; --rounds, --calls, --concurrency and --duration must be positive"}
	}
	var prof *os.File
	if *cpuProfile != "" {
		f, err := private.OpenFile(*cpuProfile, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
		if err != nil {
			return err
		}
		defer f.Close()
		prof = f
	}
	c, queries, exe, err := benchCorpus(*dir, *serveBin, *withHTTP)
	if err != nil {
		return err
	}
	var out []retrieveRound
	for r := range *rounds {
		var rr retrieveRound
		if err := func() error {
			svc, closeSvc, err := openCorpusRetriever(ctx, e, c)
			if err != nil {
				return err
			}
			defer closeSvc()
			lat := make([]time.Duration, 0, *calls)
			if prof != nil {
				if err := pprof.StartCPUProfile(prof); err != nil {
					return err
				}
			}
			cpu0 := storebench.ProcessCPU()
			for i := range *calls {
				start := time.Now()
				if _, err := svc.Retrieve(ctx, ingestd.RetrieveRequest{Query: queries[i%len(queries)]}); err != nil {
					return err
				}
				lat = append(lat, time.Since(start))
			}
			rr.CPUPerCall = (storebench.ProcessCPU() - cpu0) / time.Duration(*calls)
			if prof != nil {
				pprof.StopCPUProfile()
				prof = nil // the first round's calls: a profile file holds one
			}
			slices.Sort(lat)
			rr.Calls, rr.P50, rr.P99 = len(lat), loadgen.Percentile(lat, 0.50), loadgen.Percentile(lat, 0.99)
			lctx, cancel := context.WithTimeout(ctx, *dur)
			defer cancel()
			var done atomic.Int64
			var wg sync.WaitGroup
			start := time.Now()
			for w := range *conc {
				wg.Go(func() {
					for i := w; lctx.Err() == nil; i += *conc {
						if _, err := svc.Retrieve(lctx, ingestd.RetrieveRequest{Query: queries[i%len(queries)]}); err == nil {
							done.Add(1)
						}
					}
				})
			}
			wg.Wait()
			rr.InProcRate = float64(done.Load()) / time.Since(start).Seconds()
			return nil
		}(); err != nil {
			return err
		}
		if *withHTTP {
			srv, err := storebench.StartServe(exe, c)
			if err != nil {
				return err
			}
			_, err = srv.WaitFor(ctx, "/readyz", 10*time.Minute)
			if err == nil {
				rr.HTTP, err = loadgen.Run(ctx, loadgen.Options{Base: srv.Base, Concurrency: *conc, Duration: *dur, Queries: queries})
			}
			if serr := srv.Stop(); err == nil && serr != nil {
				err = fmt.Errorf("serve exited: %w", serr)
			}
			if err != nil {
				return err
			}
			rr.RateOverHTTP = rr.InProcRate / rr.HTTP.Throughput
		}
		out = append(out, rr)
		if !*asJSON {
			fmt.Fprintf(e.stdout, "round %d: one caller p50 %s p99 %s, CPU %s a call; %d callers in process %.1f calls/s",
				r+1, msStr(rr.P50), msStr(rr.P99), msStr(rr.CPUPerCall), *conc, rr.InProcRate)
			if *withHTTP {
				fmt.Fprintf(e.stdout, ", over HTTP %.1f req/s (p50 %s, p99 %s, %d errors): in process / HTTP %.2f",
					rr.HTTP.Throughput, msStr(rr.HTTP.P50), msStr(rr.HTTP.P99), rr.HTTP.Errors, rr.RateOverHTTP)
			}
			fmt.Fprintln(e.stdout)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	med := func(f func(retrieveRound) float64) float64 { return medianOf(out, f) }
	fmt.Fprintf(e.stdout, "median of %d rounds: one caller p50 %.2f ms, p99 %.2f ms, CPU %.2f ms a call; %d callers in process %.1f calls/s",
		len(out), med(func(r retrieveRound) float64 { return msf(r.P50) }), med(func(r retrieveRound) float64 { return msf(r.P99) }),
		med(func(r retrieveRound) float64 { return msf(r.CPUPerCall) }), *conc, med(func(r retrieveRound) float64 { return r.InProcRate }))
	if *withHTTP {
		fmt.Fprintf(e.stdout, ", over HTTP %.1f req/s; in process / HTTP %.2f",
			med(func(r retrieveRound) float64 { return r.HTTP.Throughput }), med(func(r retrieveRound) float64 { return r.RateOverHTTP }))
	}
	fmt.Fprintln(e.stdout)
	return nil
}

func msStr(d time.Duration) string { return fmt.Sprintf("%.2fms", msf(d)) }

// medianOf is the median of f over the rounds (the upper one of an even
// count).
func medianOf[R any](rounds []R, f func(R) float64) float64 {
	v := make([]float64, len(rounds))
	for i, r := range rounds {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// benchCorpus opens the corpus in dir for a store benchmark: its files,
// its queries, and when serve is set the ingestd binary to serve it
// (serveBin, or ingestdBinary).
func benchCorpus(dir, serveBin string, serve bool) (storebench.Corpus, []string, string, error) {
	c := storebench.CorpusAt(dir)
	queries, err := loadgen.ReadQueries(c.Queries)
	if err != nil {
		return c, nil, "", err
	}
	exe := serveBin
	if exe == "" && serve {
		if exe, err = ingestdBinary(); err != nil {
			return c, nil, "", err
		}
	}
	return c, queries, exe, nil
}
