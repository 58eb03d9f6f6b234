package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/archive"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/sqlite"
)

// runExport writes everything the configured store holds as a portable
// archive (package archive), read from one snapshot while writers go on.
func runExport(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	out := fs.String("out", "-", "write the archive to this `file` (- for stdout); it is written aside and renamed into place when whole")
	comp := fs.String("compression", archive.Zstd, "zstd, gzip or none")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return &usageError{cmd: "export", msg: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	if *out == "-" && *comp != archive.None && isTerminal(e.stdout) {
		return &usageError{cmd: "export", msg: "stdout is a terminal: write the archive with --out FILE or redirect it"}
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()

	w, commit, abort, err := createOutput(*out, e.stdout.raw())
	if err != nil {
		return err
	}
	aw, err := exportTo(ctx, a, w, *comp)
	if err != nil {
		abort()
		return err
	}
	if err := commit(); err != nil {
		return err
	}
	where := *out
	if where == "-" {
		where = "stdout"
	}
	fmt.Fprintf(e.stderr, "exported %s to %s\n", describeCounts(aw.Counts()), where)
	if big, def := aw.Largest(), archive.DefaultLimits; big.Bytes > def.MaxRecordBytes || big.Objects > def.MaxRecordObjects {
		fmt.Fprintf(e.stderr, "its largest document is a record of %.1f MiB and %d objects, more than import reads by default (%d MiB, %d objects): "+
			"import it with --max-record-mib %d --max-record-objects %d\n", float64(big.Bytes)/(1<<20), big.Objects,
			def.MaxRecordBytes>>20, def.MaxRecordObjects, max(def.MaxRecordBytes, big.Bytes+1<<20-1)>>20, max(def.MaxRecordObjects, big.Objects))
	}
	return nil
}

// exportTo writes the store's archive to w and returns its closed
// writer, which counts what it wrote.
func exportTo(ctx context.Context, a *app, w io.Writer, compression string) (*archive.Writer, error) {
	var aw *archive.Writer
	err := a.store.Export(ctx, func(r ingestd.ArchiveRecord) error {
		if r.Summary != nil {
			var err error
			aw, err = archive.NewWriter(w, a.manifest(*r.Summary), compression)
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

// manifest describes this deployment for an archive's first record.
func (a *app) manifest(sum ingestd.ArchiveSummary) archive.Manifest {
	m := archive.Manifest{
		CreatedAt:    time.Now(),
		Ingestd:      versionString(),
		Store:        archive.StoreInfo{Driver: a.cfg.Store.Driver, SchemaVersion: sqlite.SchemaVersion()},
		Embedder:     archive.EmbedderInfo{ID: a.embedder.ID(), Dims: a.cfg.Embedder.Dims},
		ErasureKeyID: a.keys.ID(),
		Counts:       sum,
	}
	if a.pg != nil {
		m.Store.SchemaVersion = postgres.SchemaVersion()
	}
	return m
}

// createOutput opens where a command writes a file: stdout for "-", else
// a file beside path that commit syncs and renames to path (so path is
// never a partial file) and abort removes. A path that exists is
// refused.
func createOutput(path string, stdout io.Writer) (w io.Writer, commit func() error, abort func(), err error) {
	if path == "-" {
		return stdout, func() error { return nil }, func() {}, nil
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, nil, nil, ingestd.Errorf(ingestd.ECONFLICT, "%s exists: choose another name or remove it first", path)
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
		if err := private.PlaceNew(f.Name(), path); err != nil { // refuses a path that appeared meanwhile
			os.Remove(f.Name())
			return err
		}
		return nil
	}
	return f, commit, abort, nil
}

// importBatch is how many chunks one import transaction writes (a
// document's chunks are never split).
const importBatch = 500

// importResult is what an import did.
type importResult struct {
	counts ingestd.ArchiveSummary
	// unknownTiers counts the documents by the tier this build does not
	// know that they were archived with; each was imported as
	// untrusted-external.
	unknownTiers map[ingestd.Tier]int
	// reembedded counts the chunks re-embedded (--reindex).
	reembedded int
}

// runImport loads an archive into the configured store, which must hold
// no documents and no tombstones.
func runImport(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	reindex := fs.Bool("reindex", false, "when the archive's vectors were made by another embedder than the configured one, import without them and re-embed every such chunk")
	maxMiB := fs.Int("max-record-mib", archive.DefaultLimits.MaxRecordBytes>>20, "refuse an archive with a record (a document with its chunks) longer than this many `MiB`: what import may hold of it at once")
	maxObjects := fs.Int("max-record-objects", archive.DefaultLimits.MaxRecordObjects, "refuse an archive with a record of more JSON objects (a document's chunks and links) than `N`")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &usageError{cmd: "import", msg: "want one archive file, or - for stdin"}
	}
	if *maxMiB < 1 || *maxMiB > 4096 || *maxObjects < 1 {
		return &usageError{cmd: "import", msg: "--max-record-mib wants 1..4096 and --max-record-objects a positive number"}
	}
	lim := archive.DefaultLimits
	lim.MaxRecordBytes, lim.MaxRecordObjects = *maxMiB<<20, *maxObjects
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	path := pos[0]
	if path == "-" {
		// The archive is read twice (checked whole, then written): keep
		// stdin in a file beside the store meanwhile.
		f, err := private.CreateTemp(a.cfg.Path(a.cfg.DataDir), ".import-stdin-*")
		if err != nil {
			return err
		}
		defer os.Remove(f.Name())
		_, err = io.Copy(f, e.stdin)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		path = f.Name()
	}
	open := func() (*archive.Reader, io.Closer, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		r, err := archive.NewLimitedReader(f, lim)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return r, f, nil
	}
	res, err := importArchive(ctx, a, open, *reindex, func(n int) { fmt.Fprintf(e.stderr, "reindex: %s\n", plural(n, "chunk")) })
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "imported %s\n", describeCounts(res.counts))
	if len(res.unknownTiers) > 0 {
		var parts []string
		n := 0
		for t, k := range res.unknownTiers {
			parts = append(parts, fmt.Sprintf("%q (%d)", t, k))
			n += k
		}
		sort.Strings(parts)
		fmt.Fprintf(e.stdout, "%s had a tier this build does not know (%s): imported as %s\n", plural(n, "document"), strings.Join(parts, ", "), ingestd.TierUntrustedExternal)
	}
	if res.reembedded > 0 {
		fmt.Fprintf(e.stdout, "%s re-embedded with %s\n", plural(res.reembedded, "chunk"), a.embedder.ID())
	}
	return nil
}

// errStop stops an Export after its summary.
var errStop = errors.New("stop")

// storeSummary is the counts of what the store holds.
func storeSummary(ctx context.Context, s ingestd.Archiver) (ingestd.ArchiveSummary, error) {
	var sum ingestd.ArchiveSummary
	err := s.Export(ctx, func(r ingestd.ArchiveRecord) error {
		sum = *r.Summary
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return sum, err
	}
	return sum, nil
}

// importArchive checks what the archive holds against the deployment,
// reading it whole, then writes it to a's store in batches: a damaged
// archive is refused before anything is written. It refuses a store that
// holds documents or tombstones, vectors of another embedder than a's
// (unless reindex: then they are dropped and re-embedded), and
// tombstones made with another erasure key than a's. A tier this build
// does not know becomes untrusted-external; every other tier, undeclared
// included, is kept as it is: a stamp is what the exporting deployment
// stamped, and what it counts for is decided where it is read, never
// above what a's config declares for the installation. No fenced text
// is taken from the archive: each chunk is fenced again from its text
// (pipeline.Refence), naming the tier in force under a's config, and the
// store refuses any chunk that is not then one fence (its FenceCheck).
func importArchive(ctx context.Context, a *app, open func() (*archive.Reader, io.Closer, error), reindex bool, progress func(int)) (importResult, error) {
	res := importResult{unknownTiers: map[ingestd.Tier]int{}}
	have, err := storeSummary(ctx, a.store)
	if err != nil {
		return res, err
	}
	if have.Documents > 0 || have.Tombstones > 0 {
		return res, ingestd.Errorf(ingestd.ECONFLICT, "the store already holds %s and %s: import loads an archive into an empty store only "+
			"(a new data_dir or database); nothing was written", plural(have.Documents, "document"), plural(have.Tombstones, "tombstone"))
	}
	// The first pass only reads; the second writes.
	if _, err := readArchive(ctx, a, open, reindex, nil); err != nil {
		return res, fmt.Errorf("%w; nothing was written", err)
	}
	res, err = readArchive(ctx, a, open, reindex, a.store.Import)
	if err != nil {
		return res, fmt.Errorf("import stopped; the store holds part of the archive, so import again into an empty store: %w", err)
	}
	if reindex {
		n, err := reembed(ctx, a, 256, progress)
		res.reembedded = n
		if err != nil {
			return res, fmt.Errorf("import written; re-embedding stopped after %s (run `ingestd reindex` to finish): %w", plural(n, "chunk"), err)
		}
	}
	if a.maint != nil {
		if err := a.maint.Optimize(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}

// readArchive reads the archive through, checking each record and
// passing batches of them to write when it is set.
func readArchive(ctx context.Context, a *app, open func() (*archive.Reader, io.Closer, error), reindex bool, write func(context.Context, []ingestd.ArchiveRecord) error) (importResult, error) {
	res := importResult{unknownTiers: map[ingestd.Tier]int{}}
	r, f, err := open()
	if err != nil {
		return res, err
	}
	defer f.Close()
	defer r.Close()
	m := r.Manifest()
	want := a.embedder.ID()
	refence := refencer(a.installations())
	var others []string
	for id, n := range m.Counts.Embedders {
		if id != "" && id != want {
			others = append(others, fmt.Sprintf("%s (%s)", id, plural(n, "chunk")))
		}
	}
	slices.Sort(others)
	if len(others) > 0 && !reindex {
		return res, embedderMismatch(strings.Join(others, ", "), want)
	}
	if m.Counts.Tombstones > 0 && m.ErasureKeyID != a.keys.ID() {
		return res, keyMismatch(m.ErasureKeyID, a.keys.ID())
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
			return res, err
		}
		switch {
		case rec.Installation != nil:
			rec.Installation.Tier = provenance.Resolve(rec.Installation.Tier)
		case rec.Tombstone != nil:
			if k := rec.Tombstone.KeyID; k != a.keys.ID() {
				return res, keyMismatch(k, a.keys.ID())
			}
		case rec.Document != nil:
			d := rec.Document
			if t := provenance.Resolve(d.Tier); t != d.Tier {
				res.unknownTiers[d.Tier]++
				d.Tier = t
			}
			for i := range d.Chunks {
				c := &d.Chunks[i]
				c.Tier = d.Tier
				if len(c.Embedding) == 0 || c.EmbedderID == want {
					continue
				}
				if !reindex {
					return res, embedderMismatch(c.EmbedderID, want)
				}
				c.Embedding, c.EmbedderID = nil, ""
			}
			if write != nil {
				refence(&d.Document, d.Chunks)
			}
			chunks += len(d.Chunks) + 1
		}
		batch = append(batch, rec)
		if chunks >= importBatch {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	res.counts = r.Counts()
	return res, nil
}

// refencer returns what fences a document's chunks again from their text
// for a door other than the pipeline (import, restore): the one fence
// (pipeline.Refence), naming the tier in force under the installations
// configured — never above what they declare, whatever the stamp says.
func refencer(insts []ingestd.Installation) func(*ingestd.Document, []ingestd.Chunk) {
	decls := provenance.Declare(insts)
	return func(d *ingestd.Document, chunks []ingestd.Chunk) {
		pipeline.Refence(d, decls.InForce(ingestd.TierFacts{Installation: d.Installation, SourceKind: d.SourceKind, Tier: d.Tier, Meta: d.Meta}), chunks)
	}
}

func embedderMismatch(theirs, ours string) error {
	return ingestd.Errorf(ingestd.ECONFLICT, "the archive's vectors were made by %s; this deployment embeds with %s, and vectors of two embedders "+
		"are never mixed: configure the exporting deployment's embedder, or import with --reindex to re-embed those chunks with %s", theirs, ours, ours)
}

func keyMismatch(theirs, ours string) error {
	return ingestd.Errorf(ingestd.ECONFLICT, "the archive's erasure tombstones were made with erasure key %s; this deployment's key is %s, "+
		"with which they would match nothing: give this deployment the exporting one's key (erasure.key_env, or its data_dir/erasure.key) and import again", theirs, ours)
}

// reembed embeds every chunk whose vector the configured embedder did not
// make, in batches, and returns how many it embedded.
func reembed(ctx context.Context, a *app, batch int, progress func(int)) (int, error) {
	id := a.embedder.ID()
	total, after := 0, ""
	for {
		chunks, err := a.store.ChunksToEmbed(ctx, id, after, batch)
		if err != nil {
			return total, err
		}
		if len(chunks) == 0 {
			return total, nil
		}
		texts := make([]string, len(chunks))
		for i, c := range chunks {
			texts[i] = c.Text
		}
		vecs, err := a.embedder.Embed(ctx, texts)
		if err != nil {
			return total, err
		}
		m := make(map[string][]float32, len(chunks))
		for i, c := range chunks {
			m[c.ID] = vecs[i]
		}
		if err := a.store.SetEmbeddings(ctx, id, m); err != nil {
			return total, err
		}
		total += len(chunks)
		after = chunks[len(chunks)-1].ID
		progress(total)
	}
}

// describeCounts is an archive's counts for a person.
func describeCounts(c ingestd.ArchiveSummary) string {
	return fmt.Sprintf("%s (%s, %s), %s, %s, %s", plural(c.Documents, "document"), plural(c.Chunks, "chunk"), plural(c.Links, "link"),
		plural(c.Installations, "installation"), plural(c.Tombstones, "tombstone"), plural(c.Cursors, "cursor"))
}

// runBackup copies the embedded SQLite store to a file while serve (or
// anything else) goes on using it. It opens the database file only:
// neither the data_dir lock nor the store's writer.
func runBackup(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	out := fs.String("out", "", "write the backup to this `file` (required; never overwritten)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 || *out == "" {
		return &usageError{cmd: "backup", msg: "want --out FILE"}
	}
	cfg, err := LoadConfig(*cfgPath, registry())
	if err != nil {
		return err
	}
	if cfg.Store.Driver != "sqlite" {
		return &usageError{msg: fmt.Sprintf("backup copies the embedded sqlite store; this configuration's store is %s: back it up with pg_dump (see README, Export, import, backup), or portably with `ingestd export`", cfg.Store.Driver)}
	}
	info, err := sqlite.Backup(ctx, sqliteFile(cfg), *out)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "backed up %s (schema version %d) to %s\n", plural(info.Documents, "document"), info.SchemaVersion, *out)
	if len(info.TombstoneKeys) > 0 && cfg.Erasure.KeyEnv == "" {
		fmt.Fprintf(e.stderr, "the backup holds erasure tombstones; keep %s with it: a restore elsewhere needs the same key\n", filepath.Join(cfg.Path(cfg.DataDir), erasureKeyFile))
	}
	return nil
}

// sqliteFile is the path of the embedded store's database.
func sqliteFile(cfg *Config) string {
	return filepath.Join(cfg.Path(cfg.DataDir), "ingestd.db")
}

// runRestore puts a backup in place as the embedded store's database.
func runRestore(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	force := fs.Bool("force", false, "replace a database that is already in data_dir")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &usageError{cmd: "restore", msg: "want one backup file"}
	}
	cfg, err := LoadConfig(*cfgPath, registry())
	if err != nil {
		return err
	}
	if cfg.Store.Driver != "sqlite" {
		return &usageError{msg: fmt.Sprintf("restore puts a backup of the embedded sqlite store in place; this configuration's store is %s: restore it with pg_restore (see README), or load an archive with `ingestd import`", cfg.Store.Driver)}
	}
	dir := cfg.Path(cfg.DataDir)
	if h, held, err := lockedBy(dir); err != nil {
		return err
	} else if held {
		return ingestd.Errorf(ingestd.ECONFLICT, "data_dir %s is in use by %s: stop it before restoring", dir, describe(h))
	}
	dst := sqliteFile(cfg)
	if _, err := os.Stat(dst); err == nil && !*force {
		return ingestd.Errorf(ingestd.ECONFLICT, "%s exists: restore replaces it only with --force (stop every process that uses it first)", dst)
	}
	info, err := sqlite.Inspect(ctx, pos[0])
	if err != nil {
		return err
	}
	// Tombstones made with another key would match nothing, and the
	// pipeline refuses to ingest beside them (ECONFLICT): refuse first.
	keys, err := (&app{cfg: cfg, log: newLogger(e.stderr, cfg.Log, false)}).erasureKeys(e)
	if err != nil {
		return err
	}
	for _, k := range info.TombstoneKeys {
		if k != keys.ID() {
			return ingestd.Errorf(ingestd.ECONFLICT, "the backup's erasure tombstones were made with erasure key %s; this deployment's key is %s: "+
				"put the original key in place (erasure.key_env, or data_dir/%s) and restore again; nothing was restored", k, keys.ID(), erasureKeyFile)
		}
	}
	// No fenced text of the backup is taken: each chunk is fenced again
	// from its text, naming the tier in force under this config, as an
	// import does.
	var insts []ingestd.Installation
	for _, ic := range cfg.Installations {
		insts = append(insts, ic.Installation())
	}
	if info, err = sqlite.Restore(ctx, pos[0], dst, sqlite.RestoreOptions{Refence: refencer(insts), FenceCheck: firewall.Check}); err != nil {
		return err
	}
	// Open it as serve would: migrations this build brings are applied
	// now, and a file that does not open is reported here, not at start.
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return fmt.Errorf("open the restored database: %w", err)
	}
	defer a.Close()
	fmt.Fprintf(e.stdout, "restored %s (schema version %d) into %s\n", plural(info.Documents, "document"), info.SchemaVersion, dst)
	return nil
}
