// Package daemon is the running system: it opens from Options (a store,
// an embedder, the installations with their connectors, the erasure key),
// runs in a Role (serve's all, api, worker) and closes with a context.
// What spans the adapters lives here, so it is tested without building
// the binary: the queue gate, the job handler and its pass recording,
// erasure with stream scrubbing, webhook intake, the stored-document
// hook and the background loops.
//
// It never reads a configuration file or the environment: cmd/ingestd
// turns those into Options, and renders what the daemon returns. The
// surfaces (api, mcpserver, client) never import it; it imports them.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/chunker"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/erasure"
	"github.com/ingestd/ingestd/health"
	"github.com/ingestd/ingestd/jobs"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/metrics"
	"github.com/ingestd/ingestd/retrieval/tracing"

	"github.com/prometheus/client_golang/prometheus"
)

// Installation is one configured installation and the connector built
// for it (its source and abilities).
type Installation struct {
	ingestd.Installation
	Connector connectors.Connector
}

// Maintainer is the upkeep a store may need outside requests, which only
// the SQLite store (*sqlite.Store) has. The Postgres server keeps its own
// indexes.
type Maintainer interface {
	// Warm loads the store's in-memory indexes ahead of the first search.
	Warm(ctx context.Context) error
	// Optimize readies the store for reads after bulk writes (query
	// planner statistics, and a snapshot of its search indexes for the next
	// start); it holds the write lock for a moment.
	Optimize(ctx context.Context) error
}

// Options is what Open needs: already-built values, never a
// configuration file. Store, Embedder and Keys are required.
type Options struct {
	// Store is owned by the daemon from Open on: Close closes it, and so
	// does a failed Open.
	Store ingestd.Store
	// Maintainer is the store's upkeep when it has any; nil when not.
	Maintainer Maintainer
	// Embedder embeds chunks and queries.
	Embedder ingestd.Embedder
	// CacheEmbeddings keeps Embedder's vectors in Store's embedding cache
	// and reads them back before calling it again: for an embedder that
	// costs more to run than to read back (a remote API). The lexical
	// embedder computes locally and is cheaper to run than to cache.
	CacheEmbeddings bool
	// Installations in configuration order.
	Installations []Installation
	// Keys is the deployment's erasure key.
	Keys *erasure.Keyer
	// Chunking; nil means the chunker's defaults.
	Chunking *chunker.Options
	// FirewallMode is the verdict's mode (observe, enforce).
	FirewallMode string
	// Health is how the sync-pass history judges an installation; its
	// Store, Installations, Next and Logger are set by Open.
	Health health.Options
	// Archive describes the store in an archive's manifest.
	Archive ArchiveInfo
	// Tracing traces the retrievals Retrieval serves with a registry
	// (serve's), and every sync pass and item the pipeline ingests; nil
	// traces nothing. Close flushes it.
	Tracing *tracing.Tracing
	// Logger; nil discards.
	Logger *slog.Logger
}

// Daemon is the opened system.
type Daemon struct {
	o        Options
	log      *slog.Logger
	store    ingestd.Store
	maint    Maintainer
	embedder *embedder.Cached
	pipe     *pipeline.Pipeline
	insts    map[string]Installation
	order    []string
	keys     *erasure.Keyer
	// gate asks the store's tombstones whether an item was erased (the
	// pipeline, the webhook intake).
	gate   *erasure.Gate
	health *health.Monitor
	// stored, when set (by Run), announces each stored document.
	stored func(ctx context.Context, doc *ingestd.Document)
}

var _ pipeline.Installations = (*Daemon)(nil)

// Open wires the daemon over o's store and records the installations in
// it. On error the store is closed.
func Open(ctx context.Context, o Options) (_ *Daemon, err error) {
	if o.Store == nil || o.Embedder == nil || o.Keys == nil {
		return nil, errors.New("daemon: a store, an embedder and an erasure key are required")
	}
	defer func() {
		if err != nil {
			o.Store.Close(context.Background())
		}
	}()
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Daemon{o: o, log: log, store: o.Store, maint: o.Maintainer, keys: o.Keys, insts: map[string]Installation{}}
	for _, inst := range o.Installations {
		d.insts[inst.ID] = inst
		d.order = append(d.order, inst.ID)
	}
	d.gate = &erasure.Gate{Keys: d.keys, Store: d.store}
	var cache embedder.Cache // nil: every call goes to the embedder
	if o.CacheEmbeddings {
		cache = d.store
	}
	d.embedder = embedder.NewCached(o.Embedder, cache)
	d.pipe, err = pipeline.New(pipeline.Options{
		Store:    d.store,
		Embedder: d.embedder,
		Chunking: o.Chunking,
		Erasures: d.gate,
		OnStored: func(ctx context.Context, doc *ingestd.Document) {
			if d.stored != nil {
				d.stored(ctx, doc)
			}
		},
		Traces: o.Tracing.Provider(),
		Logger: log,
	})
	if err != nil {
		return nil, err
	}
	ho := o.Health
	ho.Store, ho.Installations, ho.Logger = d.store, d.Installations(), log
	ho.Next = func(inst ingestd.Installation, now time.Time) time.Time {
		return jobs.NextScheduled(inst.Interval, now)
	}
	if d.health, err = health.New(ho); err != nil {
		return nil, err
	}
	if err := d.store.PutInstallations(ctx, d.Installations()); err != nil {
		return nil, fmt.Errorf("record installations: %w", err)
	}
	return d, nil
}

// Close exports the spans not exported yet and closes the store, within
// ctx (a Postgres pool stops waiting for connections in use when it
// ends).
func (d *Daemon) Close(ctx context.Context) error {
	if err := d.o.Tracing.Shutdown(ctx); err != nil {
		d.log.Warn("tracing.flush_failed", "error", err.Error())
	}
	return d.store.Close(ctx)
}

// Store is the daemon's store.
func (d *Daemon) Store() ingestd.Store { return d.store }

// Embedder is the embedder, behind the embedding cache.
func (d *Daemon) Embedder() *embedder.Cached { return d.embedder }

// Pipeline is the ingest pipeline.
func (d *Daemon) Pipeline() *pipeline.Pipeline { return d.pipe }

// Health is the sync-pass history's view.
func (d *Daemon) Health() *health.Monitor { return d.health }

// Keys is the erasure key.
func (d *Daemon) Keys() *erasure.Keyer { return d.keys }

// Maintainer is the store's upkeep; nil when it has none.
func (d *Daemon) Maintainer() Maintainer { return d.maint }

// Installations lists the installations in configuration order.
func (d *Daemon) Installations() []ingestd.Installation {
	out := make([]ingestd.Installation, 0, len(d.order))
	for _, id := range d.order {
		out = append(out, d.insts[id].Installation)
	}
	return out
}

// IDs lists the installations' ids in configuration order.
func (d *Daemon) IDs() []string { return d.order }

// Connector is the installation's connector; the zero Connector (no
// Source) when id is not configured.
func (d *Daemon) Connector(id string) connectors.Connector { return d.insts[id].Connector }

// Installation implements pipeline.Installations. Returns ENOTFOUND,
// listing the configured ids, for an installation that is not
// configured.
func (d *Daemon) Installation(id string) (ingestd.Installation, ingestd.Source, error) {
	inst, ok := d.insts[id]
	if !ok {
		return ingestd.Installation{}, nil, ingestd.Errorf(ingestd.ENOTFOUND, "no installation %q is configured (configured: %s)", id, strings.Join(d.order, ", "))
	}
	return inst.Installation, inst.Connector.Source, nil
}

// Configured reports whether the installation is in this process's
// configuration: a worker refuses a job for any other, signed or not.
func (d *Daemon) Configured(id string) bool {
	_, ok := d.insts[id]
	return ok
}

// Retrieval builds the retrieval service over the store, traced
// (Options.Tracing) and, when reg is not nil, counted in its metrics.
func (d *Daemon) Retrieval(reg prometheus.Registerer) (ingestd.Retriever, error) {
	svc, err := d.Service()
	if err != nil {
		return nil, err
	}
	if reg == nil {
		return d.Traced(svc), nil
	}
	m, err := d.metered(svc, reg)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Traced returns r with its retrievals traced (Options.Tracing); r
// itself with tracing off. `ingestd mcp` serves its retrievals so.
func (d *Daemon) Traced(r ingestd.Retriever) ingestd.Retriever {
	return d.o.Tracing.Wrap(r)
}

// metered is svc traced and counted into reg: its metrics keep the block
// report too.
func (d *Daemon) metered(svc *retrieval.Service, reg prometheus.Registerer) (*metrics.Retriever, error) {
	return metrics.New(d.Traced(svc), &metrics.Options{Registerer: reg})
}

// Service is the retrieval service over the store, able to read a
// document whole (MCP's document resources).
func (d *Daemon) Service() (*retrieval.Service, error) {
	return retrieval.New(retrieval.Options{
		Store:         d.store,
		Embedder:      d.embedder,
		FirewallMode:  d.o.FirewallMode,
		Installations: d.Installations(),
		Documents:     d.store,
		Index:         d.store,
		Logger:        d.log,
	})
}
