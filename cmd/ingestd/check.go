package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/internal/netaddr"
)

// runCheck is `ingestd check`: the configuration validated as serve
// would take it — the file, every installation's block, every secret
// variable it names, the listen address, TLS files, data_dir — without
// opening a store, NATS or a listener. Exit 0 when serve would start on
// it, 2 with file:line for each refusal. With --upstreams it also starts
// each gateway upstream and names what it offers against what is
// declared (upstreamProblems); without, it starts nothing.
func runCheck(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	upstreams := fs.Bool("upstreams", false, "also start each gateway upstream and name every tool it offers that is not declared and every declared tool it does not offer")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, problems, err := checkConfig(*cfgPath, e)
	if err != nil {
		return err
	}
	var started []string
	if *upstreams {
		var more []error
		started, more = upstreamProblems(ctx, cfg, e)
		problems = append(problems, more...)
	}
	for _, p := range problems[:max(0, len(problems)-1)] {
		e.stderr.Printf("ingestd check: %v\n", p)
	}
	if len(problems) > 0 {
		return problems[len(problems)-1]
	}
	e.stdout.Printf("%s: ok: %s, serve would start on it\n", cfg.File(), plural(len(cfg.Installations), "installation"))
	for _, id := range started {
		e.stdout.Printf("upstream %s: started, offers exactly the tools declared\n", id)
	}
	if netaddr.Listening(cfg.Listen) {
		e.stdout.Printf("note: something listens on %s already: serve would be refused it, unless that is this configuration's serve\n", cfg.Listen)
	}
	return nil
}

// checkConfig loads the configuration at path and checks what serve
// checks after loading it. err is a configuration that does not load
// (the first error, as every command reports it); problems is every
// refusal after that, each a *config.Error.
func checkConfig(path string, e *env) (*config.Config, []error, error) {
	reg := registry()
	cfg, err := config.Load(path, reg)
	if err != nil {
		return nil, nil, err
	}
	var problems []error
	add := func(err error) {
		if err != nil {
			problems = append(problems, err)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, ic := range cfg.Installations {
		_, err := reg.Build(ic.Installation(), connectorSettings(cfg, ic, e, quiet))
		add(cfg.InstallationError(ic, err))
	}
	a := &app{cfg: cfg, log: quiet}
	if cfg.Store.Driver == "postgres" {
		if v, ok := e.lookupEnv(cfg.Store.URLEnv); !ok || v == "" {
			add(cfg.At(cfg.KeyLine("store", "url_env"), fmt.Sprintf("store: url_env names %s, which is not set", cfg.Store.URLEnv)))
		}
		if cfg.Embedder.Dims <= 0 {
			add(cfg.At(cfg.Line("embedder"), "store: driver postgres needs embedder.dims (the vector column's dimension)"))
		}
	}
	if _, err := newEmbedder(cfg, e); err != nil {
		add(cfg.Located(cfg.Line("embedder"), err))
	}
	if cfg.Erasure.KeyEnv != "" {
		_, err := a.erasureKeys(e)
		add(err)
	}
	if cfg.NATS.URL != "" || cfg.NATS.Listen != "" {
		_, _, _, err := a.natsSecrets(e)
		add(err)
	}
	tokens, err := a.tokens(e)
	add(err)
	if err == nil {
		if err := api.CheckListen(cfg.Listen, len(tokens) > 0, cfg.Auth.AllowUnauthenticated); err != nil {
			add(cfg.At(cfg.ListenLine(), err.Error()))
		}
	}
	if _, err := gatewayOptions(cfg, e, quiet); err != nil {
		add(err)
	}
	if cfg.TLS.Cert != "" {
		if _, err := tls.LoadX509KeyPair(cfg.Path(cfg.TLS.Cert), cfg.Path(cfg.TLS.Key)); err != nil {
			add(cfg.At(cfg.Line("tls"), "tls: "+err.Error()))
		}
	}
	return cfg, problems, nil
}
