package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
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
	readers := fs.Bool("reader-indexes", false, "postgres: build the reader indexes store.reader_indexes names that are missing, and drop those it does not name")
	mem := fs.String("maintenance-work-mem", "", "postgres: memory a build may hold its graph in, e.g. 4GB (default: the server's maintenance_work_mem)")
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
		if *rebuild || *readers {
			return &usageError{Msg: "--rebuild-vector-index and --reader-indexes are for store.driver postgres; the sqlite store keeps its vector index in memory"}
		}
		return nil
	}
	o := postgres.RebuildOptions{MaintenanceWorkMem: *mem, Progress: printRebuild(e)}
	if err := migrateVectorIndex(ctx, e, pg, *rebuild, o); err != nil {
		return err
	}
	return migrateReaderIndexes(ctx, e, pg, a.cfg.Store.ReaderIndex, *readers, o)
}

// migrateVectorIndex prints the vector index's graph against the
// configured one and, with rebuild, rebuilds it online.
func migrateVectorIndex(ctx context.Context, e *env, pg *postgres.Store, rebuild bool, o postgres.RebuildOptions) error {
	have, want, err := pg.VectorIndex(ctx)
	if err != nil {
		return err
	}
	switch {
	case have == want && !rebuild:
		fmt.Fprintf(e.stdout, "vector index: %s\n", have)
		return nil
	case !rebuild:
		fmt.Fprintf(e.stdout, "vector index: %s; configured %s: run `ingestd migrate --rebuild-vector-index` to rebuild it online\n", have, want)
		return nil
	}
	fmt.Fprintf(e.stderr, "rebuilding the vector index with %s (was %s); searches and writes go on meanwhile\n", want, have)
	got, err := pg.RebuildVectorIndex(ctx, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "vector index: %s (rebuilt)\n", got)
	return nil
}

// migrateReaderIndexes prints the principals with a reader index against
// store.reader_indexes and, with apply, builds the missing ones and drops
// the others, online.
func migrateReaderIndexes(ctx context.Context, e *env, pg *postgres.Store, want []ingestd.Principal, apply bool, o postgres.RebuildOptions) error {
	have, err := pg.ReaderIndexes(ctx)
	if err != nil {
		return err
	}
	missing := slices.DeleteFunc(slices.Clone(want), func(p ingestd.Principal) bool { return slices.Contains(have, p) })
	extra := slices.DeleteFunc(slices.Clone(have), func(p ingestd.Principal) bool { return slices.Contains(want, p) })
	if !apply {
		fmt.Fprintf(e.stdout, "reader indexes: %s\n", principalList(have))
		if len(missing)+len(extra) > 0 {
			fmt.Fprintf(e.stdout, "reader indexes configured: %s; run `ingestd migrate --reader-indexes` to build %s and drop %s online\n",
				principalList(want), principalList(missing), principalList(extra))
		}
		return nil
	}
	for _, p := range missing {
		fmt.Fprintf(e.stderr, "building the reader index of %s; searches and writes go on meanwhile\n", p)
		if err := pg.IndexReader(ctx, p, o); err != nil {
			return err
		}
	}
	for _, p := range extra {
		fmt.Fprintf(e.stderr, "dropping the reader index of %s\n", p)
		if err := pg.DropReaderIndex(ctx, p); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "reader indexes: %s (built %d, dropped %d)\n", principalList(want), len(missing), len(extra))
	return nil
}

func principalList(ps []ingestd.Principal) string {
	if len(ps) == 0 {
		return "none"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// printRebuild prints an index build's progress.
func printRebuild(e *env) func(postgres.RebuildProgress) {
	return func(p postgres.RebuildProgress) {
		switch {
		case p.BlocksTotal > 0:
			fmt.Fprintf(e.stderr, "rebuild: %s: %.0f%% of the table read (%d of %d blocks, %d tuples) after %v\n",
				p.Phase, 100*float64(p.BlocksDone)/float64(p.BlocksTotal), p.BlocksDone, p.BlocksTotal, p.TuplesDone, p.Elapsed.Round(time.Second))
		case p.TuplesTotal > 0:
			fmt.Fprintf(e.stderr, "rebuild: %s: %d of %d tuples after %v\n", p.Phase, p.TuplesDone, p.TuplesTotal, p.Elapsed.Round(time.Second))
		default:
			fmt.Fprintf(e.stderr, "rebuild: %s after %v\n", p.Phase, p.Elapsed.Round(time.Second))
		}
	}
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
