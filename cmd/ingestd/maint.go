package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/files"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/sqlite"
)

func runMigrate(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	rebuild := fs.Bool("rebuild-vector-index", false, "postgres: rebuild the HNSW index online with store.hnsw_m and store.hnsw_ef_construction")
	mem := fs.String("maintenance-work-mem", "", "postgres: memory the rebuild may hold its graph in, e.g. 4GB (default: the server's maintenance_work_mem)")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	// Opening a store applies its migrations (under an advisory lock on
	// Postgres); the version printed is the one the binary brings.
	pg := a.pg
	version := sqlite.SchemaVersion()
	if pg != nil {
		version = postgres.SchemaVersion()
	}
	fmt.Fprintf(e.stdout, "store %s is at schema version %d\n", a.cfg.Store.Driver, version)
	if pg == nil {
		if *rebuild {
			return &usageError{msg: "migrate: --rebuild-vector-index is for store.driver postgres; the sqlite store keeps its vector index in memory"}
		}
		return nil
	}
	have, want, err := pg.VectorIndex(ctx)
	if err != nil {
		return err
	}
	switch {
	case have == want && !*rebuild:
		fmt.Fprintf(e.stdout, "vector index: %s\n", have)
		return nil
	case !*rebuild:
		fmt.Fprintf(e.stdout, "vector index: %s; configured %s: run `ingestd migrate --rebuild-vector-index` to rebuild it online\n", have, want)
		return nil
	}
	fmt.Fprintf(e.stderr, "rebuilding the vector index with %s (was %s); searches and writes go on meanwhile\n", want, have)
	got, err := pg.RebuildVectorIndex(ctx, postgres.RebuildOptions{
		MaintenanceWorkMem: *mem,
		Progress: func(p postgres.RebuildProgress) {
			switch {
			case p.BlocksTotal > 0:
				fmt.Fprintf(e.stderr, "rebuild: %s: %.0f%% of the table read (%d of %d blocks, %d tuples) after %v\n",
					p.Phase, 100*float64(p.BlocksDone)/float64(p.BlocksTotal), p.BlocksDone, p.BlocksTotal, p.TuplesDone, p.Elapsed.Round(time.Second))
			case p.TuplesTotal > 0:
				fmt.Fprintf(e.stderr, "rebuild: %s: %d of %d tuples after %v\n", p.Phase, p.TuplesDone, p.TuplesTotal, p.Elapsed.Round(time.Second))
			default:
				fmt.Fprintf(e.stderr, "rebuild: %s after %v\n", p.Phase, p.Elapsed.Round(time.Second))
			}
		},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "vector index: %s (rebuilt)\n", got)
	return nil
}

// runReindex re-embeds every chunk whose vector another embedder made
// (after switching embedder.kind or dims), in batches, resumable.
func runReindex(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("reindex", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	batch := fs.Int("batch", 256, "chunks per batch")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	id := a.embedder.ID()
	total, after := 0, ""
	for {
		chunks, err := a.store.ChunksToEmbed(ctx, id, after, *batch)
		if err != nil {
			return err
		}
		if len(chunks) == 0 {
			break
		}
		texts := make([]string, len(chunks))
		for i, c := range chunks {
			texts[i] = c.Text
		}
		vecs, err := a.embedder.Embed(ctx, texts)
		if err != nil {
			return err
		}
		m := make(map[string][]float32, len(chunks))
		for i, c := range chunks {
			m[c.ID] = vecs[i]
		}
		if err := a.store.SetEmbeddings(ctx, id, m); err != nil {
			return err
		}
		total += len(chunks)
		after = chunks[len(chunks)-1].ID
		fmt.Fprintf(e.stderr, "reindex: %d chunks\n", total)
	}
	fmt.Fprintf(e.stdout, "reindex: %d chunks re-embedded with %s\n", total, id)
	return nil
}

// urlFetcher is a source that can fetch one URL submitted at run time,
// held to the same SSRF guard as its crawl.
type urlFetcher interface {
	Fetch(ctx context.Context, rawURL string) ([]ingestd.Item, error)
}

// runIngest ingests one file or URL into an installation in the
// foreground; a URL the guard or the site rule refuses, or a file outside
// the root or not a regular file, exits non-zero naming the rule.
func runIngest(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	instID := fs.String("installation", "", "installation to ingest into (required)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *instID == "" {
		return &usageError{msg: "ingest takes one path or URL and --installation: ingestd ingest PATH|URL --installation ID"}
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	inst, _, err := a.Installation(*instID)
	if err != nil {
		return &usageError{msg: err.Error()}
	}
	_, src, _ := a.Installation(inst.ID)
	var items []ingestd.Item
	switch s := src.(type) {
	case *files.Source:
		// Through the root: a path outside it, a symlink out of it, a
		// FIFO or anything but a regular file is refused, naming the rule.
		if items, err = s.ReadPath(pos[0]); err != nil {
			return err
		}
	case urlFetcher:
		if items, err = s.Fetch(ctx, pos[0]); err != nil {
			return err
		}
	default:
		return &usageError{msg: fmt.Sprintf("ingest needs a files or url installation; %q is %s", inst.ID, inst.Kind)}
	}
	for _, it := range items {
		o, err := a.pipe.Ingest(ctx, inst, it)
		if err != nil {
			return fmt.Errorf("%s: %w", it.ExternalID, err)
		}
		fmt.Fprintf(e.stdout, "%s %s (%s)\n", o, it.ExternalID, ingestd.DocumentID(inst.ID, it.ExternalID))
	}
	return nil
}
