package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/archive"
	"github.com/ingestd/ingestd/chunker"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/files"
	"github.com/ingestd/ingestd/connectors/github"
	"github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/connectors/web"
	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/daemon"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/health"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/internal/terminal"
	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/retrieval/tracing"
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

// app is a command's daemon (package daemon) with the configuration it
// was opened from, and what only cmd holds beside it: the data_dir lock
// and, for migrate, the Postgres store's own type.
type app struct {
	*daemon.Daemon
	cfg *config.Config
	log *slog.Logger
	// pg is the store when it is Postgres (migrate reads and rebuilds
	// its vector index), nil when not.
	pg *postgres.Store
	// lock, when held, is the data_dir lock (see daemon.LockFile).
	lock *daemon.DirLock
}

// appOption changes how openApp opens the app.
type appOption func(*appOptions)

type appOptions struct{ daemon bool }

// asDaemon opens the app for serve: it takes the data_dir lock first
// (refusing to start when another process holds it), and logs at the
// level log configures. Without it a command logs warnings and errors
// only (everything with log.level debug), so its output is its result.
func asDaemon(o *appOptions) { o.daemon = true }

// openApp loads the configuration, turns it into the daemon's options and
// opens the daemon.
func openApp(ctx context.Context, e *env, cfgPath string, opts ...appOption) (a *app, err error) {
	var o appOptions
	for _, opt := range opts {
		opt(&o)
	}
	reg := registry()
	cfg, err := config.Load(cfgPath, reg)
	if err != nil {
		return nil, err
	}
	a = &app{cfg: cfg, log: newLogger(e.stderr, cfg.Log, o.daemon)}
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
	insts, err := a.connectors(e, reg)
	if err != nil {
		return nil, err
	}
	dopts, err := a.options(ctx, e, insts)
	if err != nil {
		return nil, err
	}
	if a.Daemon, err = daemon.Open(ctx, dopts); err != nil {
		return nil, err
	}
	return a, nil
}

// connectors builds each configured installation's connector.
func (a *app) connectors(e *env, reg *connectors.Registry) ([]daemon.Installation, error) {
	cfg := a.cfg
	var out []daemon.Installation
	for _, ic := range cfg.Installations {
		inst := ic.Installation()
		conn, err := reg.Build(inst, connectorSettings(cfg, ic, e, a.log.With("installation", inst.ID)))
		if err != nil {
			return nil, cfg.InstallationError(ic, err)
		}
		out = append(out, daemon.Installation{Installation: inst, Connector: conn})
	}
	return out, nil
}

// connectorSettings is what installation ic's connector is built with.
func connectorSettings(cfg *config.Config, ic config.InstallationConfig, e *env, log *slog.Logger) connectors.Settings {
	return connectors.Settings{
		Decode:    func(v any) error { return cfg.DecodeBlock(ic, v) },
		LookupEnv: e.lookupEnv,
		BaseDir:   cfg.Dir(),
		DataDir:   cfg.Path(cfg.DataDir),
		Logger:    log,
		Now:       time.Now,
	}
}

// options opens the configured store and embedder and reads the erasure
// key: the daemon's options. On error the store is closed.
func (a *app) options(ctx context.Context, e *env, insts []daemon.Installation) (daemon.Options, error) {
	cfg := a.cfg
	plain := make([]ingestd.Installation, len(insts))
	for i, inst := range insts {
		plain[i] = inst.Installation
	}
	// The store's in-memory mirror keeps the metadata the tier_by rules
	// read, so judging a document by them costs no query.
	store, maint, err := a.openStore(ctx, e, provenance.Declare(plain).MetaKeys())
	if err != nil {
		return daemon.Options{}, err
	}
	keys, err := a.erasureKeys(e)
	if err != nil {
		store.Close(context.Background())
		return daemon.Options{}, err
	}
	inner, err := newEmbedder(cfg, e)
	if err != nil {
		store.Close(context.Background())
		return daemon.Options{}, err
	}
	schema := sqlite.SchemaVersion()
	if a.pg != nil {
		schema = postgres.SchemaVersion()
	}
	// Traces go where the environment's OTLP variables say, as every
	// OpenTelemetry SDK reads them; none, no traces.
	traces, err := tracing.Environment(ctx, versionString(), e.getenv)
	if err != nil {
		store.Close(context.Background())
		return daemon.Options{}, err
	}
	return daemon.Options{
		Store:      store,
		Maintainer: maint,
		Embedder:   inner,
		// Only a remote embedder is worth caching.
		CacheEmbeddings: cfg.Embedder.Kind == "openai",
		Installations:   insts,
		Keys:            keys,
		Chunking:        &chunker.Options{MaxTokens: cfg.Chunking.MaxTokens, OverlapTokens: cfg.Chunking.OverlapTokens},
		FirewallMode:    cfg.Firewall.Mode,
		Health:          health.Options{Keep: cfg.Health.KeepPasses, FailedPasses: cfg.Health.FailedPasses, StaleIntervals: cfg.Health.StaleIntervals},
		Archive: daemon.ArchiveInfo{Ingestd: versionString(), Dims: cfg.Embedder.Dims,
			Store: archive.StoreInfo{Driver: cfg.Store.Driver, SchemaVersion: schema}},
		Logger:  a.log,
		Tracing: traces,
	}, nil
}

// Close closes the daemon and releases the data_dir lock.
func (a *app) Close() error {
	err := a.Daemon.Close(context.Background())
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
	l, err := daemon.LockDataDir(a.cfg.Path(a.cfg.DataDir), daemon.Holder{PID: os.Getpid(), Command: commandLine(), Since: time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	a.lock = l
	return nil
}

// openStore opens the configured store, with its upkeep when it has any.
// It keeps the Postgres store's own type beside it (app.pg), so nothing
// asks the store later what it can do.
func (a *app) openStore(ctx context.Context, e *env, metaKeys []string) (ingestd.Store, daemon.Maintainer, error) {
	cfg, log := a.cfg, a.log
	switch cfg.Store.Driver {
	case "postgres":
		url, ok := e.lookupEnv(cfg.Store.URLEnv)
		if !ok || url == "" {
			return nil, nil, cfg.At(cfg.Line("store"), fmt.Sprintf("store: url_env names %s, which is not set", cfg.Store.URLEnv))
		}
		if cfg.Embedder.Dims <= 0 {
			return nil, nil, cfg.At(cfg.Line("embedder"), "store: driver postgres needs embedder.dims (the vector column's dimension)")
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
			return nil, nil, err
		}
		a.pg = pg
		return pg, nil, nil
	case "sqlite":
		dir := cfg.Path(cfg.DataDir)
		if err := private.MkdirAll(dir); err != nil {
			return nil, nil, fmt.Errorf("data_dir: %w", err)
		}
		s, err := sqlite.Open(ctx, filepath.Join(dir, "ingestd.db"), &sqlite.Options{Logger: log, MetaKeys: metaKeys, FenceCheck: firewall.Check})
		if err != nil {
			return nil, nil, err
		}
		return s, s, nil
	default:
		return nil, nil, cfg.At(cfg.Line("store"), fmt.Sprintf("store: driver %q is not built into this binary", cfg.Store.Driver))
	}
}

// warnReaderIndexes logs the principals store.reader_indexes names that
// have no reader index yet: their people's searches are served, through
// the whole graph, until `ingestd migrate --reader-indexes` builds them.
func warnReaderIndexes(ctx context.Context, pg *postgres.Store, want []ingestd.Principal, log *slog.Logger) {
	if pg == nil || len(want) == 0 {
		return
	}
	have, err := pg.ReaderIndexes(ctx)
	if err != nil {
		log.Warn("store.reader_indexes", "err", err)
		return
	}
	if missing := slices.DeleteFunc(slices.Clone(want), func(p ingestd.Principal) bool { return slices.Contains(have, p) }); len(missing) > 0 {
		log.Warn("store.reader_indexes: not built yet; run `ingestd migrate --reader-indexes`", "principals", missing)
	}
}

func newEmbedder(cfg *config.Config, e *env) (ingestd.Embedder, error) {
	ec := cfg.Embedder
	switch ec.Kind {
	case "openai":
		key := ""
		if ec.APIKeyEnv != "" {
			v, ok := e.lookupEnv(ec.APIKeyEnv)
			if !ok {
				return nil, cfg.At(cfg.Line("embedder"), fmt.Sprintf("embedder: api_key_env names %s, which is not set", ec.APIKeyEnv))
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
func newLogger(w io.Writer, lc config.LogConfig, daemon bool) *slog.Logger {
	var level slog.Level // info, also for a level slog does not know
	if err := level.UnmarshalText([]byte(lc.Level)); err != nil {
		level = slog.LevelInfo
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
// bars), looking through a *terminal.Terminal to its stream.
func isTerminal(w io.Writer) bool {
	if t, ok := w.(*terminal.Terminal); ok {
		return t.IsTTY()
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
	if err := a.lock.SetListen(addr); err != nil {
		a.log.Warn("serve.lock_write_failed", "error", err.Error())
	}
}

// commandLine is this process's command line, for the lock file.
func commandLine() string {
	args := append([]string{filepath.Base(os.Args[0])}, os.Args[1:]...)
	s := strings.Join(args, " ")
	if len(s) > 512 {
		s = s[:512] + "…"
	}
	return s
}
