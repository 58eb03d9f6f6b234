package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/api"
)

// retrieval builds the retrieval service over the app's store.
func (a *app) retrieval(reg prometheus.Registerer) (*retrieval.Service, error) {
	return retrieval.New(retrieval.Options{
		Store:         a.store,
		Embedder:      a.embedder,
		FirewallMode:  a.cfg.Firewall.Mode,
		Installations: a.installations(),
		Logger:        a.log,
		Registerer:    reg,
	})
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
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()

	tokens, err := a.tokens(e)
	if err != nil {
		return err
	}
	if err := api.CheckListen(a.cfg.Listen, len(tokens) > 0, a.cfg.Auth.AllowUnauthenticated); err != nil {
		return &configError{path: a.cfg.path, msg: err.Error()}
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	svc, err := a.retrieval(reg)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	sched := newScheduler(a)
	if *role != "api" {
		sched.start(ctx, &wg)
	}

	h := api.New(api.Options{
		Service:  svc,
		Store:    a.store,
		Tokens:   tokens,
		Logger:   a.log,
		Gatherer: reg,
		Ready:    a.store.Ping,
		Sync: func(ctx context.Context, id string) error {
			if *role == "api" {
				return ingestd.Errorf(ingestd.EUNAVAILABLE, "this process runs --role api and queues no syncs; run a worker")
			}
			return sched.queue(id)
		},
	})
	srv, err := api.NewServer(a.cfg.Listen, h, a.cfg.Path(a.cfg.TLS.Cert), a.cfg.Path(a.cfg.TLS.Key))
	if err != nil {
		return &configError{path: a.cfg.path, msg: err.Error()}
	}
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", a.cfg.Listen, err)
	}
	a.log.Info("serve.listening", "addr", ln.Addr().String(), "role", *role, "firewall_mode", a.cfg.Firewall.Mode,
		"installations", len(a.order), "version", versionString())
	serveErr := make(chan error, 1)
	go func() { serveErr <- api.Serve(srv, ln) }()

	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	a.log.Info("serve.stopping")
	cancel()
	shutCtx, done := context.WithTimeout(context.Background(), 15*time.Second)
	defer done()
	_ = srv.Shutdown(shutCtx)
	wg.Wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// tokens reads the configured bearer tokens from the environment. A token
// whose variable is unset or empty refuses the start: serving with a
// token silently missing would lock clients out or, worse, seem to work.
func (a *app) tokens(e *env) ([]api.Token, error) {
	var out []api.Token
	for _, t := range a.cfg.Auth.Tokens {
		v, ok := e.lookupEnv(t.TokenEnv)
		if !ok || v == "" {
			return nil, &configError{path: a.cfg.path, msg: fmt.Sprintf("auth: token %q: environment variable %s is not set", t.Name, t.TokenEnv)}
		}
		out = append(out, api.Token{Name: t.Name, Token: v, Scopes: t.Scopes})
	}
	return out, nil
}

// scheduler runs each installation's sync pass on its interval and on
// demand, one pass per installation at a time, in this process.
type scheduler struct {
	a     *app
	kicks map[string]chan struct{}
}

func newScheduler(a *app) *scheduler {
	s := &scheduler{a: a, kicks: map[string]chan struct{}{}}
	for _, id := range a.order {
		s.kicks[id] = make(chan struct{}, 1)
	}
	return s
}

func (s *scheduler) start(ctx context.Context, wg *sync.WaitGroup) {
	for _, id := range s.a.order {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.loop(ctx, id)
		}()
		// A mailbox with idle: true pushes new mail: a pass runs within
		// seconds instead of at the next interval.
		if src, ok := s.a.sources[id].(*imap.Source); ok && src.Config().IDLE {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := src.Watch(ctx, func() { _ = s.queue(id) }); err != nil {
					s.a.log.Warn("imap.watch_stopped", "installation", id, "error", err.Error())
				}
			}()
		}
	}
}

// queue asks for a pass of the installation as soon as it is free.
func (s *scheduler) queue(id string) error {
	k, ok := s.kicks[id]
	if !ok {
		return ingestd.Errorf(ingestd.ENOTFOUND, "no installation %q is configured", id)
	}
	select {
	case k <- struct{}{}:
	default: // a pass is already queued
	}
	return nil
}

func (s *scheduler) loop(ctx context.Context, id string) {
	inst, src, _ := s.a.Installation(id)
	var tick <-chan time.Time
	if inst.Interval > 0 {
		t := time.NewTicker(inst.Interval)
		defer t.Stop()
		tick = t.C
		_ = s.queue(id) // a first pass at start
	}
	backoff := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-s.kicks[id]:
		}
		if backoff > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		if _, err := s.a.pipe.Sync(ctx, inst, src, nil); err != nil && ctx.Err() == nil {
			backoff = min(max(2*backoff, 5*time.Second), 5*time.Minute)
			s.a.log.Warn("sync.failed", "installation", id, "error", err.Error(), "retry_in", backoff.String())
			_ = s.queue(id) // retry after the backoff, not at the next tick
			continue
		}
		backoff = 0
	}
}
