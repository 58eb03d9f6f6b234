package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/archive"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/daemon"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/internal/private"
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
		return &usageError{Cmd: "export", Msg: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	if *out == "-" && *comp != archive.None && isTerminal(e.stdout) {
		return &usageError{Cmd: "export", Msg: "stdout is a terminal: write the archive with --out FILE or redirect it"}
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()

	w, commit, abort, err := createOutput(*out, e.stdout.Raw())
	if err != nil {
		return err
	}
	aw, err := a.Export(ctx, w, *comp)
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
	f, err := private.CreateAside(path)
	if err != nil {
		return nil, nil, nil, err
	}
	return f, f.Commit, f.Abort, nil
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
		return &usageError{Cmd: "import", Msg: "want one archive file, or - for stdin"}
	}
	if *maxMiB < 1 || *maxMiB > 4096 || *maxObjects < 1 {
		return &usageError{Cmd: "import", Msg: "--max-record-mib wants 1..4096 and --max-record-objects a positive number"}
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
		if path, err = spoolStdin(a.cfg.Path(a.cfg.DataDir), e.stdin); err != nil {
			return err
		}
		defer os.Remove(path)
	}
	res, err := a.Import(ctx, archive.Opener(path, lim), *reindex, func(n int) { fmt.Fprintf(e.stderr, "reindex: %s\n", plural(n, "chunk")) })
	if err != nil {
		return err
	}
	printImport(e, res, a.Embedder().ID())
	return nil
}

// spoolStdin copies r to a new file in dir and returns its path.
func spoolStdin(dir string, r io.Reader) (string, error) {
	f, err := private.CreateTemp(dir, ".import-stdin-*")
	if err != nil {
		return "", err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("read stdin: %w", err)
	}
	return f.Name(), nil
}

// printImport writes what an import did for a person.
func printImport(e *env, res daemon.ImportResult, embedderID string) {
	fmt.Fprintf(e.stdout, "imported %s\n", describeCounts(res.Counts))
	if len(res.UnknownTiers) > 0 {
		var parts []string
		n := 0
		for t, k := range res.UnknownTiers {
			parts = append(parts, fmt.Sprintf("%q (%d)", t, k))
			n += k
		}
		sort.Strings(parts)
		fmt.Fprintf(e.stdout, "%s had a tier this build does not know (%s): imported as %s\n", plural(n, "document"), strings.Join(parts, ", "), ingestd.TierUntrustedExternal)
	}
	if res.Reembedded > 0 {
		fmt.Fprintf(e.stdout, "%s re-embedded with %s\n", plural(res.Reembedded, "chunk"), embedderID)
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
		return &usageError{Cmd: "backup", Msg: "want --out FILE"}
	}
	cfg, err := config.Load(*cfgPath, registry())
	if err != nil {
		return err
	}
	if cfg.Store.Driver != "sqlite" {
		return &usageError{Msg: fmt.Sprintf("backup copies the embedded sqlite store; this configuration's store is %s: back it up with pg_dump (see README, Export, import, backup), or portably with `ingestd export`", cfg.Store.Driver)}
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
func sqliteFile(cfg *config.Config) string {
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
		return &usageError{Cmd: "restore", Msg: "want one backup file"}
	}
	cfg, err := config.Load(*cfgPath, registry())
	if err != nil {
		return err
	}
	if cfg.Store.Driver != "sqlite" {
		return &usageError{Msg: fmt.Sprintf("restore puts a backup of the embedded sqlite store in place; this configuration's store is %s: restore it with pg_restore (see README), or load an archive with `ingestd import`", cfg.Store.Driver)}
	}
	info, dst, err := restoreSQLite(ctx, e, cfg, pos[0], *force)
	if err != nil {
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

// restoreSQLite puts the backup src in place as cfg's SQLite database,
// refusing while a process holds data_dir, over a database that is there
// unless force, and a backup whose tombstones another erasure key made.
func restoreSQLite(ctx context.Context, e *env, cfg *config.Config, src string, force bool) (sqlite.FileInfo, string, error) {
	dir := cfg.Path(cfg.DataDir)
	if h, held, err := daemon.LockedBy(dir); err != nil {
		return sqlite.FileInfo{}, "", err
	} else if held {
		return sqlite.FileInfo{}, "", ingestd.Errorf(ingestd.ECONFLICT, "data_dir %s is in use by %s: stop it before restoring", dir, daemon.Describe(h))
	}
	dst := sqliteFile(cfg)
	if _, err := os.Stat(dst); err == nil && !force {
		return sqlite.FileInfo{}, "", ingestd.Errorf(ingestd.ECONFLICT, "%s exists: restore replaces it only with --force (stop every process that uses it first)", dst)
	}
	info, err := sqlite.Inspect(ctx, src)
	if err != nil {
		return info, "", err
	}
	// Tombstones made with another key would match nothing, and the
	// pipeline refuses to ingest beside them (ECONFLICT): refuse first.
	keys, err := (&app{cfg: cfg, log: newLogger(e.stderr, cfg.Log, false)}).erasureKeys(e)
	if err != nil {
		return info, "", err
	}
	for _, k := range info.TombstoneKeys {
		if k != keys.ID() {
			return info, "", ingestd.Errorf(ingestd.ECONFLICT, "the backup's erasure tombstones were made with erasure key %s; this deployment's key is %s: "+
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
	info, err = sqlite.Restore(ctx, src, dst, sqlite.RestoreOptions{Refence: daemon.Refencer(insts), FenceCheck: firewall.Check})
	return info, dst, err
}
