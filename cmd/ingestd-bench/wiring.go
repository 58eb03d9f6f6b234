package main

// What the benchmarks need of the running system, wired the way
// cmd/ingestd wires it. These are copies of the least of cmd/ingestd
// that the benchmarks measure (its openApp and retrieval for a corpus,
// its exportTo and importArchive), kept until the daemon package opens a
// deployment from options: then they call it instead, and measure the
// one copy of the code.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/archive"
	"github.com/ingestd/ingestd/benchmarks/storebench"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/erasure"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/retrieval"
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
		return "", &usageError{msg: "no ingestd beside this binary or on $PATH: build it (go build -o . ./cmd/ingestd ./cmd/ingestd-bench) or name one with --bin or --serve-bin"}
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
// declaration reads, the embedding cache, the installations recorded,
// the in-memory indexes warmed, and retrieval.Service over them.
func openCorpusRetriever(ctx context.Context, e *env, c storebench.Corpus) (ingestd.Retriever, func(), error) {
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	insts := corpusInstallations()
	s, err := sqlite.Open(ctx, c.DB, &sqlite.Options{Logger: log, MetaKeys: provenance.Declare(insts).MetaKeys(), FenceCheck: firewall.Check})
	if err != nil {
		return nil, nil, err
	}
	fail := func(err error) (ingestd.Retriever, func(), error) {
		s.Close(context.Background())
		return nil, nil, err
	}
	if err := s.PutInstallations(ctx, insts); err != nil {
		return fail(fmt.Errorf("record installations: %w", err))
	}
	svc, err := retrieval.New(retrieval.Options{
		Store:         s,
		Embedder:      embedder.NewCached(embedder.NewLexical(storebench.Dims), nil),
		Installations: insts,
		Logger:        log,
	})
	if err != nil {
		return fail(err)
	}
	if err := s.Warm(ctx); err != nil {
		return fail(err)
	}
	return svc, func() { s.Close(context.Background()) }, nil
}

// deployment is what export and import read of cmd/ingestd's app.
type deployment struct {
	driver   string
	dims     int
	store    ingestd.Store
	optimize func(context.Context) error // the SQLite store's upkeep after bulk writes; nil for PostgreSQL
	embedder ingestd.Embedder
	keys     *erasure.Keyer
	insts    []ingestd.Installation
}

// exportTo is cmd/ingestd's exportTo: the store's archive written to w.
func exportTo(ctx context.Context, d *deployment, w io.Writer, compression string) (*archive.Writer, error) {
	var aw *archive.Writer
	err := d.store.Export(ctx, func(r ingestd.ArchiveRecord) error {
		if r.Summary != nil {
			var err error
			aw, err = archive.NewWriter(w, d.manifest(*r.Summary), compression)
			return err
		}
		return aw.Write(r)
	})
	if err != nil {
		return nil, err
	}
	if aw == nil {
		return nil, errors.New("export: the store wrote no summary")
	}
	return aw, aw.Close()
}

func (d *deployment) manifest(sum ingestd.ArchiveSummary) archive.Manifest {
	m := archive.Manifest{
		CreatedAt:    time.Now(),
		Ingestd:      "ingestd-bench",
		Store:        archive.StoreInfo{Driver: d.driver, SchemaVersion: sqlite.SchemaVersion()},
		Embedder:     archive.EmbedderInfo{ID: d.embedder.ID(), Dims: d.dims},
		ErasureKeyID: d.keys.ID(),
		Counts:       sum,
	}
	if d.driver == "postgres" {
		m.Store.SchemaVersion = postgres.SchemaVersion()
	}
	return m
}

// createOutput is cmd/ingestd's for a file: written aside, synced and
// renamed into place by commit, removed by abort.
func createOutput(path string) (w io.Writer, commit func() error, abort func(), err error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, nil, nil, fmt.Errorf("%s exists", path)
	}
	f, err := private.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return nil, nil, nil, err
	}
	abort = func() {
		f.Close()
		os.Remove(f.Name())
	}
	commit = func() error {
		if err := f.Sync(); err != nil {
			abort()
			return err
		}
		if err := f.Close(); err != nil {
			os.Remove(f.Name())
			return err
		}
		if err := os.Link(f.Name(), path); err != nil {
			os.Remove(f.Name())
			return err
		}
		return os.Remove(f.Name())
	}
	return f, commit, abort, nil
}

// importBatch is cmd/ingestd's: chunks one import transaction writes.
const importBatch = 500

var errStop = errors.New("stop")

// importArchive is cmd/ingestd's importArchive without --reindex: the
// store must be empty; the archive is read through once to check it,
// then again to write it in batches, every tier resolved and every chunk
// fenced again from its text; then the SQLite store's upkeep.
func importArchive(ctx context.Context, d *deployment, open func() (*archive.Reader, io.Closer, error)) error {
	var have ingestd.ArchiveSummary
	err := d.store.Export(ctx, func(r ingestd.ArchiveRecord) error {
		have = *r.Summary
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if have.Documents > 0 || have.Tombstones > 0 {
		return fmt.Errorf("the store already holds %d documents and %d tombstones", have.Documents, have.Tombstones)
	}
	if err := readArchive(ctx, d, open, nil); err != nil {
		return fmt.Errorf("%w; nothing was written", err)
	}
	if err := readArchive(ctx, d, open, d.store.Import); err != nil {
		return err
	}
	if d.optimize != nil {
		return d.optimize(ctx)
	}
	return nil
}

// readArchive is cmd/ingestd's readArchive without --reindex.
func readArchive(ctx context.Context, d *deployment, open func() (*archive.Reader, io.Closer, error), write func(context.Context, []ingestd.ArchiveRecord) error) error {
	r, f, err := open()
	if err != nil {
		return err
	}
	defer f.Close()
	defer r.Close()
	m := r.Manifest()
	want := d.embedder.ID()
	decls := provenance.Declare(d.insts)
	var others []string
	for id := range m.Counts.Embedders {
		if id != "" && id != want {
			others = append(others, id)
		}
	}
	slices.Sort(others)
	if len(others) > 0 {
		return fmt.Errorf("the archive's vectors were made by %q, not %s", others, want)
	}
	if m.Counts.Tombstones > 0 && m.ErasureKeyID != d.keys.ID() {
		return fmt.Errorf("the archive's erasure key is %s, not %s", m.ErasureKeyID, d.keys.ID())
	}
	var (
		batch  []ingestd.ArchiveRecord
		chunks int
	)
	flush := func() error {
		if len(batch) == 0 || write == nil {
			batch, chunks = batch[:0], 0
			return nil
		}
		if err := write(ctx, batch); err != nil {
			return err
		}
		batch, chunks = batch[:0], 0
		return nil
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		switch {
		case rec.Installation != nil:
			rec.Installation.Tier = provenance.Resolve(rec.Installation.Tier)
		case rec.Tombstone != nil:
			if k := rec.Tombstone.KeyID; k != d.keys.ID() {
				return fmt.Errorf("a tombstone's erasure key is %s, not %s", k, d.keys.ID())
			}
		case rec.Document != nil:
			doc := rec.Document
			doc.Tier = provenance.Resolve(doc.Tier)
			for i := range doc.Chunks {
				c := &doc.Chunks[i]
				c.Tier = doc.Tier
				if len(c.Embedding) > 0 && c.EmbedderID != want {
					return fmt.Errorf("a chunk's vector was made by %s, not %s", c.EmbedderID, want)
				}
			}
			if write != nil {
				pipeline.Refence(&doc.Document, decls.InForce(ingestd.TierFacts{Installation: doc.Installation, SourceKind: doc.SourceKind, Tier: doc.Tier, Meta: doc.Meta}), doc.Chunks)
			}
			chunks += len(doc.Chunks) + 1
		}
		batch = append(batch, rec)
		if chunks >= importBatch {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
