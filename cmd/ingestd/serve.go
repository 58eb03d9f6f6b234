package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/jobs"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/metrics"
)

// retrieval builds the retrieval service over the app's store, wrapped in
// its metrics when reg is not nil.
func (a *app) retrieval(reg prometheus.Registerer) (ingestd.Retriever, error) {
	svc, err := retrieval.New(retrieval.Options{
		Store:         a.store,
		Embedder:      a.embedder,
		FirewallMode:  a.cfg.Firewall.Mode,
		Installations: a.installations(),
		Logger:        a.log,
	})
	switch {
	case err != nil:
		return nil, err
	case reg == nil:
		return svc, nil
	}
	return metrics.New(svc, &metrics.Options{Registerer: reg})
}

func runServe(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	role := fs.String("role", "all", "all (API and ingest), api (serve retrieval only) or worker (ingest only)")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	switch *role {
	case "all", "api", "worker":
	default:
		return &usageError{msg: fmt.Sprintf("--role %q is not one of all, api, worker", *role)}
	}
	a, err := openApp(ctx, e, *cfgPath, asDaemon)
	if err != nil {
		return err
	}
	defer a.Close()

	tokens, err := a.tokens(e)
	if err != nil {
		return err
	}
	if err := api.CheckListen(a.cfg.Listen, len(tokens) > 0, a.cfg.Auth.AllowUnauthenticated); err != nil {
		return &configError{path: a.cfg.path, line: a.cfg.listenLine(), msg: err.Error()}
	}
	if len(tokens) == 0 && len(a.cfg.ListenHosts) == 0 && api.CheckListen(a.cfg.Listen, false, false) != nil {
		// allow_unauthenticated on a reachable address: other machines
		// connect, but only loopback Host values are answered.
		a.log.Warn("serve.loopback_hosts_only", "listen", a.cfg.Listen,
			"hint", "without auth.tokens only loopback Host values are answered; list the names clients use in listen_hosts")
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	svc, err := a.retrieval(reg)
	if err != nil {
		return err
	}
	// How each installation's syncs go, read from the pass history at
	// each scrape; readiness stays about serving.
	if err := reg.Register(a.health.Collector()); err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}

	// The API answers before the job stream does: retrieval needs only the
	// store, /healthz is 200 at once, and until the queue is open /readyz
	// answers 503 "waiting for the job stream" while webhooks and sync
	// requests get 503 (their senders retry). The queue then opens,
	// waiting out a cluster that is forming or electing a leader (up to
	// nats.startup_timeout) instead of exiting into a crash loop.
	var gate queueGate
	// The store loads its search indexes (from its snapshot, or from every
	// row) while the API already answers: /readyz says 503 until they are
	// loaded, and a retrieval meanwhile waits for them.
	warmed := make(chan struct{})
	var hooks http.Handler
	if a.hasWebhooks() {
		hooks = gate.webhooks()
	}
	docs, err := a.service()
	if err != nil {
		return err
	}
	h := api.New(api.Options{
		Retriever:      svc,
		DocumentReader: docs,
		Version:        versionString(),
		Documents:      a.store,
		Tokens:         tokens,
		Hosts:          a.cfg.ListenHosts,
		Logger:         a.log,
		Gatherer:       reg,
		Ready: func(ctx context.Context) error {
			if err := a.ready(ctx, &gate); err != nil {
				return err
			}
			select {
			case <-warmed:
				return nil
			default:
				return ingestd.Errorf(ingestd.EUNAVAILABLE, "loading the search indexes")
			}
		},
		Sync: func(ctx context.Context, id string) error {
			jq, err := gate.get()
			if err != nil {
				return err
			}
			return a.queueSync(ctx, jq.Queue, id, ingestd.TriggerAPI)
		},
		AddURL:   a.addURL,
		Webhooks: hooks,

		DeadLetters:   gatedDeadLetters{&gate},
		Installations: a.health,
		Erasures:      erasures{a, &gate},
	})
	srv, err := api.NewServer(a.cfg.Listen, h, a.cfg.Path(a.cfg.TLS.Cert), a.cfg.Path(a.cfg.TLS.Key))
	if err != nil {
		return &configError{path: a.cfg.path, line: a.cfg.line("tls"), msg: err.Error()}
	}
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return &configError{path: a.cfg.path, line: a.cfg.line("listen"), msg: fmt.Sprintf("listen %s: %v (is another serve running? stop it, or give this one another listen address)", a.cfg.Listen, errors.Unwrap(err))}
	}
	a.listening(ln.Addr().String())
	// serve.started: the API answers (retrieval, probes); serve.listening,
	// once the job queue is open too, means every route works, as it
	// always has.
	a.log.Info("serve.started", "addr", ln.Addr().String(), "role", *role)
	serveErr := make(chan error, 1)
	go func() { serveErr <- api.Serve(srv, ln) }()
	go func() {
		defer close(warmed)
		a.warm(ctx)
	}()
	shutdown := func() {
		shutCtx, done := context.WithTimeout(context.Background(), 15*time.Second)
		defer done()
		_ = srv.Shutdown(shutCtx)
	}

	// Jobs travel on NATS JetStream: the embedded server under data_dir
	// without nats.url. Every role schedules (leaderless: the message id
	// of a pass makes N schedulers queue one job); all and worker consume.
	// With a job key every publish is signed and a worker runs only jobs
	// that verify, for installations this configuration has.
	jq, err := a.openQueue(ctx, e, true, reg)
	if err != nil {
		shutdown()
		if ctx.Err() != nil {
			return nil // stopped while waiting
		}
		return err
	}
	defer jq.Close()
	var writes atomic.Int64
	a.stored = func(ctx context.Context, doc *ingestd.Document) {
		writes.Add(1)
		if err := jq.PublishStored(ctx, doc); err != nil {
			a.log.Warn("store.event_failed", "document", doc.ID, "error", err.Error())
		}
	}
	if hooks != nil {
		intake, err := a.webhooks(ctx, jq.Queue)
		if err != nil {
			shutdown()
			return err
		}
		gate.setWebhooks(intake)
	}
	gate.set(jq)
	a.log.Info("serve.listening", "addr", ln.Addr().String(), "role", *role, "firewall_mode", a.cfg.Firewall.Mode,
		"installations", len(a.order), "version", versionString())

	runCtx, cancel := context.WithCancel(ctx) // a new variable: goroutines above still read ctx
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.optimizeLoop(runCtx, &writes, 10*time.Minute)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.followLoop(runCtx, 10*time.Second)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		jq.Schedule(runCtx, a.installations(), time.Now)
	}()
	if *role != "api" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := jq.RunWorker(runCtx, a.jobHandler(jq.Queue), jobs.WorkerOptions{Concurrency: a.cfg.NATS.Concurrency, Configured: a.configured}); err != nil {
				a.log.Error("worker.stopped", "error", err.Error())
				cancel()
			}
		}()
		a.watch(runCtx, &wg, jq.Queue)
	}

	select {
	case <-runCtx.Done():
	case err = <-serveErr:
	}
	a.log.Info("serve.stopping")
	cancel()
	shutdown()
	wg.Wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// errWaitingForJobs is what readiness, webhooks and sync answer until the
// job queue is open.
var errWaitingForJobs = ingestd.Errorf(ingestd.EUNAVAILABLE, "waiting for the job stream")

// queueGate holds the job queue once it is open, and the webhook intake
// built on it.
type queueGate struct {
	jq    atomic.Pointer[jobQueue]
	hooks atomic.Pointer[http.Handler]
}

func (g *queueGate) set(jq *jobQueue)                { g.jq.Store(jq) }
func (g *queueGate) setWebhooks(intake http.Handler) { g.hooks.Store(&intake) }

// get returns the open queue, or errWaitingForJobs.
func (g *queueGate) get() (*jobQueue, error) {
	if jq := g.jq.Load(); jq != nil {
		return jq, nil
	}
	return nil, errWaitingForJobs
}

// webhooks is the intake route: 503 until the queue is open, so a sender
// retries the delivery; then the intake built on the queue.
func (g *queueGate) webhooks() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := g.hooks.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error": "waiting for the job stream; retry"}` + "\n"))
	})
}

// ready is readiness: the job queue is open and connected, and the store
// answers. What it returns is shown by /readyz, so a store failure is
// logged here and reported without its details.
func (a *app) ready(ctx context.Context, g *queueGate) error {
	jq, err := g.get()
	if err != nil {
		return err
	}
	if err := jq.ready(); err != nil {
		return err
	}
	if err := a.store.Ping(ctx); err != nil {
		a.log.Warn("serve.store_unready", "error", err.Error())
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "the store does not answer")
	}
	return nil
}

// hasWebhooks reports whether any installation takes webhooks.
func (a *app) hasWebhooks() bool {
	for _, c := range a.sources {
		if c.Intake != nil {
			return true
		}
	}
	return false
}

// maintainer is the upkeep a store may need outside requests, which only
// the SQLite store (*sqlite.Store) has; openStore sets app.maint to it. The
// Postgres server keeps its own indexes.
type maintainer interface {
	// Warm loads the store's in-memory indexes ahead of the first search.
	Warm(ctx context.Context) error
	// Optimize readies the store for reads after bulk writes (query
	// planner statistics, and a snapshot of its search indexes for the next
	// start); it holds the write lock for a moment.
	Optimize(ctx context.Context) error
}

// warm loads the store's indexes so the first query does not pay for it.
func (a *app) warm(ctx context.Context) {
	if a.maint == nil {
		return
	}
	start := time.Now()
	if err := a.maint.Warm(ctx); err != nil {
		a.log.Warn("store.warm_failed", "error", err.Error())
		return
	}
	a.log.Info("store.warm", "took", time.Since(start).Round(time.Millisecond).String())
}

// optimizeLoop optimizes the store every period in which documents were
// written, so the next start finds its index snapshot current without
// paying for one on every write.
func (a *app) optimizeLoop(ctx context.Context, writes *atomic.Int64, period time.Duration) {
	if a.maint == nil {
		return
	}
	every(ctx, period, func() {
		if writes.Swap(0) == 0 {
			return
		}
		start := time.Now()
		if err := a.maint.Optimize(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("store.optimize_failed", "error", err.Error())
			return
		}
		a.log.Info("store.optimize", "took", time.Since(start).Round(time.Millisecond).String())
	})
}

// every calls fn each period until ctx ends (not at once: the first call
// is one period in).
func every(ctx context.Context, period time.Duration, fn func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// tokens reads the configured bearer tokens from the environment, white
// space around a value trimmed (a request's token is). A token whose
// variable is unset or empty refuses the start: serving with a token
// silently missing would lock clients out or, worse, seem to work. So
// does a value that cannot be a secret (api.CheckToken) and one another
// token has too: the first listed would win, and the second's scopes and
// installations would never apply. Errors name the token's line, never
// its value.
func (a *app) tokens(e *env) ([]api.Token, error) {
	var out []api.Token
	for i, t := range a.cfg.Auth.Tokens {
		v, ok := e.lookupEnv(t.TokenEnv)
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			return nil, a.cfg.tokenUnset(i)
		}
		if err := api.CheckToken(v); err != nil {
			return nil, a.cfg.tokenError(i, fmt.Sprintf("the value of %s %s", t.TokenEnv, ingestd.ErrorMessage(err)))
		}
		for j, prev := range out {
			if subtle.ConstantTimeCompare([]byte(prev.Token), []byte(v)) == 1 {
				return nil, a.cfg.tokenError(i, fmt.Sprintf("has the same value as token %q (line %d): every token needs its own", prev.Name, a.cfg.tokenLine(j)))
			}
		}
		out = append(out, api.Token{Name: t.Name, Token: v, Scopes: t.Scopes, Installations: t.Installations})
	}
	return out, nil
}

// watch runs the Watcher of every installation that has one (IMAP with
// idle: true): a change at the source queues a sync pass within seconds
// instead of at the next interval.
func (a *app) watch(ctx context.Context, wg *sync.WaitGroup, q *jobs.Queue) {
	for _, id := range a.order {
		w := a.sources[id].Watcher
		if w == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.Watch(ctx, func() {
				if err := a.queueSync(ctx, q, id, ingestd.TriggerWatch); err != nil && ctx.Err() == nil {
					a.log.Warn("watch.queue_failed", "installation", id, "error", err.Error())
				}
			})
			if err != nil {
				a.log.Warn("watch.stopped", "installation", id, "error", err.Error())
			}
		}()
	}
}
