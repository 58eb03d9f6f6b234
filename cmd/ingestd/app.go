package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/chunker"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/files"
	"github.com/ingestd/ingestd/connectors/github"
	"github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/connectors/web"
	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/erasure"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/health"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/jobs"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/sqlite"
)

// kinds is every connector kind this build knows: a new kind is one line
// here. A kind cannot be listed without its provenance policy
// (NewRegistry refuses it); its abilities come with it (connectors.Connector).
var kinds = []connectors.Kind{
	files.Kind,
	github.Kind,
	imap.Kind,
	web.Kind,
	webhook.Kind,
}

// registry is the registry of kinds.
func registry() *connectors.Registry {
	return connectors.NewRegistry(kinds...)
}

// app is the wired daemon: configuration, store, embedder, pipeline and
// the installations' sources.
type app struct {
	cfg   *Config
	log   *slog.Logger
	store ingestd.Store
	// maint is the store's upkeep when it has any (SQLite), nil when not.
	maint maintainer
	// pg is the store when it is Postgres (migrate reads and rebuilds
	// its vector index), nil when not.
	pg       *postgres.Store
	embedder *embedder.Cached
	pipe     *pipeline.Pipeline
	insts    map[string]ingestd.Installation
	order    []string
	sources  map[string]connectors.Connector // each installation's source and abilities
	// stored, when set (by serve), announces each stored document.
	stored func(ctx context.Context, doc *ingestd.Document)
	// keys is the erasure key; gate asks the store's tombstones whether
	// an item was erased (the pipeline, the webhook intake).
	keys *erasure.Keyer
	gate *erasure.Gate
	// lock, when held, is the data_dir lock (see lockFile).
	lock *dirLock

	// health records sync passes in the store's history and reports
	// each installation's state from it.
	health *health.Monitor
}

// appOption changes how openApp opens the app.
type appOption func(*appOptions)

type appOptions struct{ daemon bool }

// asDaemon opens the app for serve: it takes the data_dir lock first
// (refusing to start when another process holds it), and logs at the
// level log configures. Without it a command logs warnings and errors
// only (everything with log.level debug), so its output is its result.
func asDaemon(o *appOptions) { o.daemon = true }

var _ pipeline.Installations = (*app)(nil)

// openApp loads the configuration and opens everything a command needs.
func openApp(ctx context.Context, e *env, cfgPath string, opts ...appOption) (a *app, err error) {
	var o appOptions
	for _, opt := range opts {
		opt(&o)
	}
	reg := registry()
	cfg, err := LoadConfig(cfgPath, reg)
	if err != nil {
		return nil, err
	}
	a = &app{cfg: cfg, log: newLogger(e.stderr, cfg.Log, o.daemon), insts: map[string]ingestd.Installation{}, sources: map[string]connectors.Connector{}}
	if o.daemon && a.ownsDataDir() {
		if err := a.lockDataDir(); err != nil {
			return nil, err
		}
		lock := a.lock
		defer func() {
			if err != nil {
				lock.Close()
			}
		}()
	}
	for _, ic := range cfg.Installations {
		inst := ic.Installation()
		conn, err := reg.Build(inst, connectors.Settings{
			Decode:    func(v any) error { return cfg.decodeBlock(ic, v) },
			LookupEnv: e.lookupEnv,
			BaseDir:   cfg.dir,
			DataDir:   cfg.Path(cfg.DataDir),
			Logger:    a.log.With("installation", inst.ID),
			Now:       time.Now,
		})
		if err != nil {
			var ce *configError
			if asConfigError(err, &ce) {
				return nil, err
			}
			return nil, &configError{path: cfg.path, line: ic.line, msg: err.Error()}
		}
		a.insts[inst.ID] = inst
		a.order = append(a.order, inst.ID)
		a.sources[inst.ID] = conn
	}

	// The store's in-memory mirror keeps the metadata the tier_by rules
	// read, so judging a document by them costs no query.
	if err := a.openStore(ctx, e, provenance.Declare(a.installations()).MetaKeys()); err != nil {
		return nil, err
	}
	if a.keys, err = a.erasureKeys(e); err != nil {
		a.store.Close(context.Background())
		return nil, err
	}
	a.gate = &erasure.Gate{Keys: a.keys, Store: a.store}
	inner, err := newEmbedder(cfg, e)
	if err != nil {
		a.store.Close(context.Background())
		return nil, err
	}
	var cache embedder.Cache // the lexical embedder is cheaper to run than to cache
	if cfg.Embedder.Kind == "openai" {
		cache = a.store
	}
	a.embedder = embedder.NewCached(inner, cache)
	a.pipe, err = pipeline.New(pipeline.Options{
		Store:    a.store,
		Embedder: a.embedder,
		Chunking: &chunker.Options{MaxTokens: cfg.Chunking.MaxTokens, OverlapTokens: cfg.Chunking.OverlapTokens},
		Erasures: a.gate,
		OnStored: func(ctx context.Context, doc *ingestd.Document) {
			if a.stored != nil {
				a.stored(ctx, doc)
			}
		},
		Logger: a.log,
	})
	if err != nil {
		a.store.Close(context.Background())
		return nil, err
	}
	a.health, err = health.New(health.Options{
		Store:         a.store,
		Installations: a.installations(),
		Next: func(inst ingestd.Installation, now time.Time) time.Time {
			return jobs.NextScheduled(inst.Interval, now)
		},
		Keep:           cfg.Health.KeepPasses,
		FailedPasses:   cfg.Health.FailedPasses,
		StaleIntervals: cfg.Health.StaleIntervals,
		Logger:         a.log,
	})
	if err != nil {
		a.store.Close(context.Background())
		return nil, err
	}
	if err := a.store.PutInstallations(ctx, a.installations()); err != nil {
		a.store.Close(context.Background())
		return nil, fmt.Errorf("record installations: %w", err)
	}
	return a, nil
}

func asConfigError(err error, target **configError) bool {
	ce, ok := err.(*configError)
	if ok {
		*target = ce
	}
	return ok
}

// Close closes the store and releases the data_dir lock.
func (a *app) Close() error {
	err := a.store.Close(context.Background())
	a.lock.Close()
	return err
}

// ownsDataDir reports whether serve runs what one process at a time may
// open in data_dir: the embedded NATS server's JetStream files. With
// nats.url, serves on one host may share data_dir: SQLite takes writers
// from several processes in turn, and each process's webhook spool files
// are its own.
func (a *app) ownsDataDir() bool {
	return a.cfg.NATS.URL == ""
}

// lockDataDir takes the data_dir lock, or fails naming the process that
// holds it.
func (a *app) lockDataDir() error {
	l, err := lockDataDir(a.cfg.Path(a.cfg.DataDir), lockHolder{PID: os.Getpid(), Command: commandLine(), Since: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	a.lock = l
	return nil
}

// installations lists the configured installations in file order.
func (a *app) installations() []ingestd.Installation {
	out := make([]ingestd.Installation, 0, len(a.order))
	for _, id := range a.order {
		out = append(out, a.insts[id])
	}
	return out
}

// Installation implements pipeline.Installations.
func (a *app) Installation(id string) (ingestd.Installation, ingestd.Source, error) {
	inst, ok := a.insts[id]
	if !ok {
		return ingestd.Installation{}, nil, ingestd.Errorf(ingestd.ENOTFOUND, "no installation %q is configured (configured: %s)", id, strings.Join(a.order, ", "))
	}
	return inst, a.sources[id].Source, nil
}

// openStore opens the configured store. It keeps what only the store's own
// type offers beside it (app.maint, app.pg), so nothing asks the store
// later what it can do.
func (a *app) openStore(ctx context.Context, e *env, metaKeys []string) error {
	cfg, log := a.cfg, a.log
	switch cfg.Store.Driver {
	case "postgres":
		url, ok := e.lookupEnv(cfg.Store.URLEnv)
		if !ok || url == "" {
			return &configError{path: cfg.path, line: cfg.line("store"), msg: fmt.Sprintf("store: url_env names %s, which is not set", cfg.Store.URLEnv)}
		}
		if cfg.Embedder.Dims <= 0 {
			return &configError{path: cfg.path, line: cfg.line("embedder"), msg: "store: driver postgres needs embedder.dims (the vector column's dimension)"}
		}
		pg, err := postgres.Open(ctx, url, &postgres.Options{
			Dims:               cfg.Embedder.Dims,
			MaxConns:           cfg.Store.MaxConns,
			StatementTimeout:   time.Duration(cfg.Store.StatementTimeout),
			EfSearch:           cfg.Store.EfSearch,
			TextCandidates:     cfg.Store.TextCandidates,
			HNSWM:              cfg.Store.HNSWM,
			HNSWEfConstruction: cfg.Store.HNSWEfConstruction,
			FenceCheck:         firewall.Check,
			Logger:             log,
		})
		if err != nil {
			return err
		}
		a.store, a.pg = pg, pg
		return nil
	case "sqlite":
		dir := cfg.Path(cfg.DataDir)
		if err := private.MkdirAll(dir); err != nil {
			return fmt.Errorf("data_dir: %w", err)
		}
		s, err := sqlite.Open(ctx, filepath.Join(dir, "ingestd.db"), &sqlite.Options{Logger: log, MetaKeys: metaKeys, FenceCheck: firewall.Check})
		if err != nil {
			return err
		}
		a.store, a.maint = s, s
		return nil
	default:
		return &configError{path: cfg.path, line: cfg.line("store"), msg: fmt.Sprintf("store: driver %q is not built into this binary", cfg.Store.Driver)}
	}
}

func newEmbedder(cfg *Config, e *env) (ingestd.Embedder, error) {
	ec := cfg.Embedder
	switch ec.Kind {
	case "openai":
		key := ""
		if ec.APIKeyEnv != "" {
			v, ok := e.lookupEnv(ec.APIKeyEnv)
			if !ok {
				return nil, &configError{path: cfg.path, line: cfg.line("embedder"), msg: fmt.Sprintf("embedder: api_key_env names %s, which is not set", ec.APIKeyEnv)}
			}
			key = v
		}
		return embedder.NewOpenAI(embedder.OpenAIOptions{
			BaseURL:   ec.BaseURL,
			Model:     ec.Model,
			APIKey:    key,
			Dims:      ec.Dims,
			BatchSize: ec.BatchSize,
			Timeout:   time.Duration(ec.Timeout),
		})
	default:
		return embedder.NewLexical(ec.Dims), nil
	}
}

// newLogger returns the logger log configures. A one-shot command (daemon
// false) logs nothing below WARN unless the level is debug: its result is
// on stdout and its progress on stderr, and INFO lines meant for a
// daemon's log would bury both.
func newLogger(w io.Writer, lc LogConfig, daemon bool) *slog.Logger {
	level := slog.LevelInfo
	switch strings.ToLower(lc.Level) {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	if !daemon && level == slog.LevelInfo {
		level = slog.LevelWarn
	}
	opts := &slog.HandlerOptions{Level: level}
	if lc.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// isTerminal reports whether w is a terminal (for colour and progress
// bars), looking through a *terminal to its stream.
func isTerminal(w io.Writer) bool {
	if t, ok := w.(*terminal); ok {
		return t.isTTY()
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// listening records in the data_dir lock the address serve's API listens
// on, so one-shot commands on this data_dir can reach it.
func (a *app) listening(addr string) {
	if a.lock == nil {
		return
	}
	if err := a.lock.setListen(addr); err != nil {
		a.log.Warn("serve.lock_write_failed", "error", err.Error())
	}
}
