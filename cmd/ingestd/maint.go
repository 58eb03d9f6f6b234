package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/pipeline"
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
			return &usageError{Msg: "--rebuild-vector-index is for store.driver postgres; the sqlite store keeps its vector index in memory"}
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
	total, err := a.Reembed(ctx, *batch, func(n int) { fmt.Fprintf(e.stderr, "reindex: %s\n", plural(n, "chunk")) })
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s re-embedded with %s\n", plural(total, "chunk"), a.Embedder().ID())
	return nil
}

// runIngest ingests one file or URL into an installation in the
// foreground, through the installation's ItemReader; a reference outside
// its scope (a URL the guard or the site rule refuses, a file outside the
// root or not a regular file) exits non-zero naming the rule.
func runIngest(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	instID := fs.String("installation", "", "installation to ingest into (required)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *instID == "" {
		return &usageError{Cmd: "ingest", Msg: "want one path or URL and --installation"}
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	inst, _, err := a.Installation(*instID)
	if err != nil {
		return &usageError{Msg: ingestd.ErrorMessage(err)}
	}
	if a.Connector(inst.ID).Reader == nil {
		return &usageError{Msg: fmt.Sprintf("want an installation whose kind reads one item (configured: %s); %q is %s", a.readerKinds(), inst.ID, inst.Kind)}
	}
	return a.Ingest(ctx, inst.ID, pos[0], func(it ingestd.Item, o pipeline.Outcome) {
		e.stdout.Printf("%s %s (%s)\n", o, it.ExternalID, ingestd.DocumentID(inst.ID, it.ExternalID))
	})
}

// readerKinds lists the kinds of the configured installations that read
// one item, for a message; "none configured" when there are none.
func (a *app) readerKinds() string {
	seen := map[string]bool{}
	var out []string
	for _, inst := range a.Installations() {
		if k := inst.Kind; a.Connector(inst.ID).Reader != nil && !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return "none configured"
	}
	return strings.Join(out, ", ")
}
