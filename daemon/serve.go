package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/jobs"
)

// Role is what a serving process runs.
type Role string

const (
	// RoleAll serves the API and runs the workers.
	RoleAll Role = "all"
	// RoleAPI serves retrieval only: it schedules but runs no job.
	RoleAPI Role = "api"
	// RoleWorker runs the workers (its API answers probes and metrics).
	RoleWorker Role = "worker"
)

// Roles lists the roles, for a message.
var Roles = []Role{RoleAll, RoleAPI, RoleWorker}

// ServeOptions is how Run exposes the daemon: the API's listener and
// tokens, and the job queue it opens.
type ServeOptions struct {
	// Listen is the API's address; TLSCert and TLSKey, when set, its
	// certificate and key files.
	Listen, TLSCert, TLSKey string
	// Tokens and Hosts are the API's (api.Options).
	Tokens []api.Token
	Hosts  []string
	// Version is what the API and the log report.
	Version string
	// Queue opens the job queue, with its metrics on reg. Run calls it
	// once the API answers; it may wait for NATS (jobs.OpenWait).
	Queue func(ctx context.Context, reg prometheus.Registerer) (*Queue, error)
	// Concurrency is how many jobs a worker runs at once.
	Concurrency int
	// SpoolDir holds webhook bodies waiting for their signature check.
	SpoolDir string
	// Listening, when set, is told the address the API listens on.
	Listening func(addr string)
	// MCPExtension, when set, is installed on /mcp (the gateway) and
	// MCPCollector, when set, registered beside the daemon's metrics.
	MCPExtension api.MCPExtension
	MCPCollector prometheus.Collector
	// GatewayDecisions, when set, serves the gateway's held calls to
	// operators (GET /v1/gateway/decisions, the console).
	GatewayDecisions ingestd.GatewayLog
}

// OptionError is an option Run cannot use (a TLS file that does not
// load): Option names it ("tls") so cmd can point at its line.
type OptionError struct {
	Option string
	Err    error
}

func (e *OptionError) Error() string { return e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }

// Run serves until ctx ends or the API server fails. The API answers
// before the job stream does: retrieval needs only the store, /healthz is
// 200 at once, and until the queue is open /readyz answers 503 "waiting
// for the job stream" while webhooks and sync requests get 503 (their
// senders retry). The queue then opens, waiting out a cluster that is
// forming or electing a leader instead of exiting into a crash loop.
func (d *Daemon) Run(ctx context.Context, role Role, so ServeOptions) error {
	switch role {
	case RoleAll, RoleAPI, RoleWorker:
	default:
		return fmt.Errorf("role %q is not one of %v", role, Roles)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// How each installation's syncs go, read from the pass history at
	// each scrape; readiness stays about serving.
	if err := reg.Register(d.health.Collector()); err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	if so.MCPCollector != nil {
		if err := reg.Register(so.MCPCollector); err != nil {
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	s := &serving{d: d, role: role, so: so, reg: reg, warmed: make(chan struct{})}
	if err := s.listen(so); err != nil {
		return err
	}
	// serve.started: the API answers (retrieval, probes); serve.listening,
	// once the job queue is open too, means every route works.
	d.log.Info("serve.started", "addr", s.ln.Addr().String(), "role", string(role))
	serveErr := make(chan error, 1)
	go func() { serveErr <- api.Serve(s.srv, s.ln) }()
	go func() {
		defer close(s.warmed)
		d.warm(ctx)
	}()
	jq, err := s.openQueue(ctx, so)
	if err != nil {
		s.shutdown()
		if ctx.Err() != nil {
			return nil // stopped while waiting
		}
		return err
	}
	d.log.Info("serve.listening", "addr", s.ln.Addr().String(), "role", string(role), "firewall_mode", d.o.FirewallMode,
		"installations", len(d.order), "version", so.Version)
	err = s.run(ctx, jq, serveErr)
	jq.Close()
	// serve.stopped: the API, the workers and the queue are closed; what
	// the daemon itself holds (the store) its Close releases.
	d.log.Info("serve.stopped", "role", string(role), "error", errString(err))
	return err
}

// serving is one Run's state.
type serving struct {
	d    *Daemon
	role Role
	so   ServeOptions
	reg  *prometheus.Registry
	gate queueGate
	// The store loads its search indexes (from its snapshot, or from every
	// row) while the API already answers: /readyz says 503 until they are
	// loaded (warmed closed), and a retrieval meanwhile waits for them.
	warmed chan struct{}
	hooks  http.Handler
	writes atomic.Int64 // documents stored since the last optimize
	srv    *http.Server
	ln     net.Listener
}

// listen builds the API over the gate and listens.
func (s *serving) listen(so ServeOptions) error {
	h, err := s.handler(so)
	if err != nil {
		return err
	}
	if s.srv, err = api.NewServer(so.Listen, h, so.TLSCert, so.TLSKey); err != nil {
		return &OptionError{Option: "tls", Err: err}
	}
	if s.ln, err = net.Listen("tcp", so.Listen); err != nil {
		return &OptionError{Option: "listen", Err: fmt.Errorf("listen %s: %v (is another serve running? stop it, or give this one another listen address)", so.Listen, errors.Unwrap(err))}
	}
	if so.Listening != nil {
		so.Listening(s.ln.Addr().String())
	}
	return nil
}

// handler is the API, its queue-bound routes behind the gate.
func (s *serving) handler(so ServeOptions) (http.Handler, error) {
	d := s.d
	docs, err := d.Service()
	if err != nil {
		return nil, err
	}
	svc, err := d.metered(docs, s.reg)
	if err != nil {
		return nil, err
	}
	if d.hasWebhooks() {
		s.hooks = s.gate.webhooks()
	}
	return api.New(api.Options{
		Retriever:      svc,
		DocumentReader: docs,
		DocumentLister: docs,
		Version:        so.Version,
		Documents:      d.store,
		Tokens:         so.Tokens,
		Hosts:          so.Hosts,
		Logger:         d.log,
		Gatherer:       s.reg,
		Ready:          s.ready,
		Sync: func(ctx context.Context, id string) error {
			jq, err := s.gate.get()
			if err != nil {
				return err
			}
			return d.QueueSync(ctx, jq.Queue, id, ingestd.TriggerAPI)
		},
		AddURL:           d.AddURL,
		Webhooks:         s.hooks,
		DeadLetters:      gatedDeadLetters{&s.gate},
		Installations:    d.health,
		Erasures:         erasures{d, &s.gate},
		MCPExtension:     so.MCPExtension,
		Blocks:           svc,
		GatewayDecisions: so.GatewayDecisions,
	}), nil
}

// ready is readiness: the queue is open and the store answers, and the
// search indexes are loaded.
func (s *serving) ready(ctx context.Context) error {
	if err := s.d.ready(ctx, &s.gate); err != nil {
		return err
	}
	select {
	case <-s.warmed:
		return nil
	default:
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "loading the search indexes")
	}
}

func (s *serving) shutdown() {
	shutCtx, done := context.WithTimeout(context.Background(), 15*time.Second)
	defer done()
	_ = s.srv.Shutdown(shutCtx)
}

// openQueue opens the job queue, hooks the stored-document event and the
// webhook intake to it, and opens the gate. Jobs travel on NATS
// JetStream: every role schedules (leaderless: the message id of a pass
// makes N schedulers queue one job); all and worker consume.
func (s *serving) openQueue(ctx context.Context, so ServeOptions) (*Queue, error) {
	d := s.d
	if so.Queue == nil {
		return nil, errors.New("daemon: ServeOptions.Queue is required to serve")
	}
	jq, err := so.Queue(ctx, s.reg)
	if err != nil {
		return nil, err
	}
	d.stored = func(ctx context.Context, doc *ingestd.Document) {
		s.writes.Add(1)
		if err := jq.PublishStored(ctx, doc); err != nil {
			d.log.Warn("store.event_failed", "document", doc.ID, "error", err.Error())
		}
	}
	if s.hooks != nil {
		intake, err := d.webhooks(jq.Queue, so.SpoolDir)
		if err != nil {
			jq.Close()
			return nil, err
		}
		s.gate.setWebhooks(intake)
	}
	s.gate.set(jq)
	return jq, nil
}

// run runs the background loops and, unless the role is api, the
// workers and watchers, until ctx ends or the server fails.
func (s *serving) run(ctx context.Context, jq *Queue, serveErr <-chan error) error {
	d := s.d
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { d.optimizeLoop(runCtx, &s.writes, 10*time.Minute) })
	wg.Go(func() { d.followLoop(runCtx, 10*time.Second) })
	wg.Go(func() { jq.Schedule(runCtx, d.Installations(), time.Now) })
	if s.role != RoleAPI {
		wg.Go(func() {
			opts := jobs.WorkerOptions{Concurrency: s.so.Concurrency, Configured: d.Configured}
			if err := jq.RunWorker(runCtx, d.JobHandler(jq.Queue), opts); err != nil {
				d.log.Error("worker.stopped", "error", err.Error())
				cancel()
			}
		})
		d.watch(runCtx, &wg, jq.Queue)
	}
	var err error
	select {
	case <-runCtx.Done():
	case err = <-serveErr:
	}
	d.log.Info("serve.stopping")
	cancel()
	s.shutdown()
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
	jq    atomic.Pointer[Queue]
	hooks atomic.Pointer[http.Handler]
}

func (g *queueGate) set(jq *Queue)                   { g.jq.Store(jq) }
func (g *queueGate) setWebhooks(intake http.Handler) { g.hooks.Store(&intake) }

// get returns the open queue, or errWaitingForJobs.
func (g *queueGate) get() (*Queue, error) {
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
		w.Header().Set("Retry-After", "5")
		webhook.Refuse(w, http.StatusServiceUnavailable, ingestd.EUNAVAILABLE, "waiting for the job stream; retry")
	})
}

// ready is readiness: the job queue is open and connected, and the store
// answers. What it returns is shown by /readyz, so a store failure is
// logged here and reported without its details.
func (d *Daemon) ready(ctx context.Context, g *queueGate) error {
	jq, err := g.get()
	if err != nil {
		return err
	}
	if err := jq.ready(); err != nil {
		return err
	}
	if err := d.store.Ping(ctx); err != nil {
		d.log.Warn("serve.store_unready", "error", err.Error())
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "the store does not answer")
	}
	return nil
}

// hasWebhooks reports whether any installation takes webhooks.
func (d *Daemon) hasWebhooks() bool {
	for _, inst := range d.insts {
		if inst.Connector.Intake != nil {
			return true
		}
	}
	return false
}

// gatedDeadLetters serves the dead-letter routes from the job queue once
// serve has opened it; until then they answer "waiting for the job stream".
type gatedDeadLetters struct{ g *queueGate }

var _ ingestd.DeadLetters = gatedDeadLetters{}

func (d gatedDeadLetters) ListDLQ(ctx context.Context) ([]ingestd.DeadLetter, error) {
	jq, err := d.g.get()
	if err != nil {
		return nil, err
	}
	return jq.ListDLQ(ctx)
}

func (d gatedDeadLetters) Replay(ctx context.Context, id string) error {
	jq, err := d.g.get()
	if err != nil {
		return err
	}
	return jq.Replay(ctx, id)
}

func (d gatedDeadLetters) ReplayAll(ctx context.Context) (int, error) {
	jq, err := d.g.get()
	if err != nil {
		return 0, err
	}
	return jq.ReplayAll(ctx)
}

// errString is err's text, "" for nil, for a log attribute.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
