package main

// What the benchmarks need of the running system: package daemon,
// opened from options as cmd/ingestd opens it, so what they measure
// (retrieval over a corpus, export, import) is the one copy of the code
// that ingestd runs.

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/archive"
	"github.com/ingestd/ingestd/benchmarks/storebench"
	"github.com/ingestd/ingestd/daemon"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/erasure"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/sqlite"
)

// ingestdBinary is the ingestd the store benchmarks start by default:
// the one beside this binary (go build -o DIR ./cmd/...), else the one
// on $PATH.
func ingestdBinary() (string, error) {
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), "ingestd")
		if fi, err := os.Stat(beside); err == nil && fi.Mode().IsRegular() {
			return beside, nil
		}
	}
	exe, err := exec.LookPath("ingestd")
	if err != nil {
		return "", &usageError{Msg: "no ingestd beside this binary or on $PATH: build it (go build -o . ./cmd/ingestd ./cmd/ingestd-bench) or name one with --bin or --serve-bin"}
	}
	return exe, nil
}

// corpusInstallations are the installations the corpus's configuration
// declares (storebench writes it from storebench.Installations).
func corpusInstallations() []ingestd.Installation {
	out := make([]ingestd.Installation, 0, len(storebench.Installations))
	for _, in := range storebench.Installations {
		out = append(out, ingestd.Installation{ID: in.ID, Kind: "files", Tier: in.Declared})
	}
	return out
}

// openCorpusRetriever opens the corpus as `ingestd serve --config
// c.Config` does before it serves (its configuration: the embedded SQLite
// store, the lexical embedder of storebench.Dims, the firewall enforcing,
// the five installations): the store with the metadata keys the
// declaration reads, the daemon over it (the installations recorded),
// the in-memory indexes warmed, and the daemon's retrieval.
func openCorpusRetriever(ctx context.Context, e *env, c storebench.Corpus) (ingestd.Retriever, func(), error) {
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	insts := corpusInstallations()
	s, err := sqlite.Open(ctx, c.DB, &sqlite.Options{Logger: log, MetaKeys: provenance.Declare(insts).MetaKeys(), FenceCheck: firewall.Check})
	if err != nil {
		return nil, nil, err
	}
	d, err := openDeployment(ctx, "sqlite", s, s, storebench.Dims, insts, log)
	if err != nil {
		return nil, nil, err
	}
	closeAll := func() { d.Close(context.Background()) }
	if err := s.Warm(ctx); err != nil {
		closeAll()
		return nil, nil, err
	}
	svc, err := d.Retrieval(nil)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return svc, closeAll, nil
}

// benchKey is the erasure key of every deployment the benchmarks open.
var benchKey = []byte(strings.Repeat("bench-key-", 4))

// openDeployment opens the daemon over s (which it closes from then on,
// on error too) with the lexical embedder of dims dimensions, as
// cmd/ingestd opens it for a store of driver: maint is the SQLite
// store's upkeep (nil for PostgreSQL), and the archive's manifest names
// the driver's schema.
func openDeployment(ctx context.Context, driver string, s ingestd.Store, maint daemon.Maintainer, dims int, insts []ingestd.Installation, log *slog.Logger) (*daemon.Daemon, error) {
	keys, err := erasure.NewKeyer(benchKey)
	if err != nil {
		s.Close(ctx)
		return nil, err
	}
	o := daemon.Options{
		Store:      s,
		Maintainer: maint,
		Embedder:   embedder.NewLexical(dims),
		Keys:       keys,
		Archive:    daemon.ArchiveInfo{Ingestd: "ingestd-bench", Store: archive.StoreInfo{Driver: driver, SchemaVersion: sqlite.SchemaVersion()}, Dims: dims},
		Logger:     log,
	}
	if driver == "postgres" {
		o.Archive.Store.SchemaVersion = postgres.SchemaVersion()
	}
	for _, in := range insts {
		o.Installations = append(o.Installations, daemon.Installation{Installation: in})
	}
	return daemon.Open(ctx, o)
}
