package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/archive"
	"github.com/ingestd/ingestd/daemon"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/sqlite"
)

// archiveBenchStep is one measured step of `ingestd-bench archive`.
type archiveBenchStep struct {
	Step    string  `json:"step"`
	Seconds float64 `json:"seconds"`
	// MBps is the archive's bytes over the step's time.
	MBps float64 `json:"mb_per_s"`
	// VsCopy is the step's time over the plain copy's.
	VsCopy float64 `json:"vs_copy"`
}

// archiveBenchReport is what `ingestd-bench archive` prints.
type archiveBenchReport struct {
	Documents    int                `json:"documents"`
	Chunks       int                `json:"chunks"`
	Dims         int                `json:"dims"`
	Compression  string             `json:"compression"`
	ArchiveBytes int64              `json:"archive_bytes"`
	SQLiteBytes  int64              `json:"sqlite_bytes"`
	Steps        []archiveBenchStep `json:"steps"`
}

// runArchive is `ingestd-bench archive`: it fills a temporary SQLite
// store with a synthetic corpus (timing its PutDocument calls, the way
// the pipeline writes), then times in the same run a plain copy of the
// archive's bytes (read, write, fsync: the baseline, the median of five),
// export, a backup of the SQLite file, and import into an empty SQLite
// store; with --postgres-url-env also import into and export from an
// empty PostgreSQL database, and the corpus put into it again as the
// pipeline writes. Export and import are package daemon's, which `ingestd
// export` and `ingestd import` run (wiring.go). It reads no config and removes what it wrote.
func runArchive(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("archive", flag.ContinueOnError)
	docs := fs.Int("documents", 5000, "documents in the synthetic corpus")
	per := fs.Int("chunks", 4, "chunks per document")
	dims := fs.Int("dims", 384, "vector dimensions")
	comp := fs.String("compression", archive.Zstd, "the archive's compression: zstd, gzip or none")
	pgEnv := fs.String("postgres-url-env", "", "also import into and export from the empty PostgreSQL database whose URL this `variable` holds")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{Cmd: "archive", Msg: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	if *docs < 1 || *per < 1 || *dims < 1 {
		return &usageError{Cmd: "archive", Msg: "--documents, --chunks and --dims must be positive"}
	}
	pgURL := ""
	if *pgEnv != "" {
		if pgURL = e.getenv(*pgEnv); pgURL == "" {
			return &usageError{Cmd: "archive", Msg: fmt.Sprintf("--postgres-url-env names %s, which is not set", *pgEnv)}
		}
	}
	dir, err := private.MkdirTemp("", "ingestd-bench-archive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	lex := embedder.NewLexical(*dims)
	// Each store gets the daemon cmd/ingestd would open over it; the
	// stores' own deferred Close (which may run twice) closes both.
	deploy := func(driver string, s ingestd.Store, m daemon.Maintainer) (*daemon.Daemon, error) {
		return openDeployment(ctx, driver, s, m, *dims, nil, nil)
	}
	src, err := sqlite.Open(ctx, filepath.Join(dir, "src.db"), &sqlite.Options{FenceCheck: firewall.Check})
	if err != nil {
		return err
	}
	defer src.Close(context.Background())
	fmt.Fprintf(e.stderr, "bench archive: writing %d documents of %d chunks\n", *docs, *per)
	put, err := fillArchiveBench(ctx, src, lex, "bench", *docs, *per)
	if err != nil {
		return err
	}
	r := archiveBenchReport{Documents: *docs, Chunks: *docs * *per, Dims: *dims, Compression: *comp}
	// How the corpus was written, document by document as the pipeline
	// writes (its embedding not counted): what import saves a re-sync.
	r.Steps = append(r.Steps, archiveBenchStep{Step: "put sqlite", Seconds: put.Seconds()})
	if fi, err := os.Stat(filepath.Join(dir, "src.db")); err == nil {
		r.SQLiteBytes = fi.Size()
	}

	timed := func(step string, fn func() error) error {
		fmt.Fprintf(e.stderr, "bench archive: %s\n", step)
		start := time.Now()
		if err := fn(); err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		r.Steps = append(r.Steps, archiveBenchStep{Step: step, Seconds: time.Since(start).Seconds()})
		return nil
	}
	arch := filepath.Join(dir, "src.ingestd")
	exportFile := func(d *daemon.Daemon, path string) error {
		f, err := private.CreateAside(path)
		if err != nil {
			return err
		}
		if _, err := d.Export(ctx, f, *comp); err != nil {
			f.Abort()
			return err
		}
		return f.Commit()
	}
	srcD, err := deploy("sqlite", src, src)
	if err != nil {
		return err
	}
	if err := timed("export sqlite", func() error { return exportFile(srcD, arch) }); err != nil {
		return err
	}
	fi, err := os.Stat(arch)
	if err != nil {
		return err
	}
	r.ArchiveBytes = fi.Size()
	// The baseline: the same bytes copied as a file, synced as export
	// syncs. Its source is in the page cache, as export's database is.
	// A copy takes milliseconds, so one is noise: the median of five.
	var copies []float64
	for k := range 5 {
		start := time.Now()
		if err := copyAndSync(arch, filepath.Join(dir, fmt.Sprintf("copy-%d.ingestd", k))); err != nil {
			return fmt.Errorf("plain copy: %w", err)
		}
		copies = append(copies, time.Since(start).Seconds())
	}
	slices.Sort(copies)
	r.Steps = append(r.Steps, archiveBenchStep{Step: "plain copy", Seconds: copies[2]})
	if err := timed("backup sqlite", func() error {
		_, err := sqlite.Backup(ctx, filepath.Join(dir, "src.db"), filepath.Join(dir, "backup.db"))
		return err
	}); err != nil {
		return err
	}
	open := func() (*archive.Reader, io.Closer, error) {
		f, err := os.Open(arch)
		if err != nil {
			return nil, nil, err
		}
		rd, err := archive.NewReader(f)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return rd, f, nil
	}
	dst, err := sqlite.Open(ctx, filepath.Join(dir, "dst.db"), &sqlite.Options{FenceCheck: firewall.Check})
	if err != nil {
		return err
	}
	defer dst.Close(context.Background())
	dstD, err := deploy("sqlite", dst, dst)
	if err != nil {
		return err
	}
	if err := timed("import sqlite", func() error {
		_, err := dstD.Import(ctx, open, false, nil)
		return err
	}); err != nil {
		return err
	}
	if pgURL != "" {
		pg, err := postgres.Open(ctx, pgURL, &postgres.Options{Dims: *dims, FenceCheck: firewall.Check})
		if err != nil {
			return err
		}
		defer pg.Close(context.Background())
		a, err := deploy("postgres", pg, nil)
		if err != nil {
			return err
		}
		if err := timed("import postgres", func() error {
			_, err := a.Import(ctx, open, false, nil)
			return err
		}); err != nil {
			return err
		}
		if err := timed("export postgres", func() error { return exportFile(a, filepath.Join(dir, "pg.ingestd")) }); err != nil {
			return err
		}
		// The pipeline's way into the same database: the corpus again,
		// under another installation, document by document.
		fmt.Fprintf(e.stderr, "bench archive: put postgres\n")
		put, err := fillArchiveBench(ctx, pg, lex, "bench-put", *docs, *per)
		if err != nil {
			return fmt.Errorf("put postgres: %w", err)
		}
		r.Steps = append(r.Steps, archiveBenchStep{Step: "put postgres", Seconds: put.Seconds()})
	}

	var base float64
	for _, s := range r.Steps {
		if s.Step == "plain copy" {
			base = s.Seconds
		}
	}
	for i := range r.Steps {
		s := &r.Steps[i]
		s.MBps = float64(r.ArchiveBytes) / 1e6 / s.Seconds
		s.VsCopy = s.Seconds / base
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(e.stdout, "%d documents, %d chunks of %d dimensions; archive %.1f MB (%s), sqlite file %.1f MB\n",
		r.Documents, r.Chunks, r.Dims, float64(r.ArchiveBytes)/1e6, r.Compression, float64(r.SQLiteBytes)/1e6)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tseconds\tarchive MB/s\tdocuments/s\t× plain copy\t")
	for _, s := range r.Steps {
		fmt.Fprintf(tw, "%s\t%.3f\t%.1f\t%.0f\t%.2f\t\n", s.Step, s.Seconds, s.MBps, float64(r.Documents)/s.Seconds, s.VsCopy)
	}
	return tw.Flush()
}

// fillArchiveBench writes the synthetic corpus: documents of three tiers
// with links to their neighbours, chunks of about 200 words with their
// fenced text and lexical vectors.
func fillArchiveBench(ctx context.Context, s ingestd.Store, emb ingestd.Embedder, inst string, docs, per int) (put time.Duration, err error) {
	rnd := rand.New(rand.NewPCG(1, 2))
	words := make([]string, 5000)
	for i := range words {
		var b strings.Builder
		for range 3 + rnd.IntN(7) {
			b.WriteByte(byte('a' + rnd.IntN(26)))
		}
		words[i] = b.String()
	}
	tiers := []ingestd.Tier{ingestd.TierTrustedInternal, ingestd.TierUntrustedExternal, ingestd.TierMachineGenerated}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range docs {
		ext := fmt.Sprintf("doc-%06d", i)
		d := &ingestd.Document{Installation: inst, ExternalID: ext, SourceKind: "files", ItemKind: "file", URI: "file:///bench/" + ext,
			Title: "Document " + ext, Author: "author" + fmt.Sprint(i%50) + "@example.com", CreatedAt: at, UpdatedAt: at,
			ContentHash: fmt.Sprintf("h%d", i), Tier: tiers[i%len(tiers)], Meta: map[string]string{"path": ext + ".md"}}
		d.ID = ingestd.DocumentID(d.Installation, d.ExternalID)
		texts := make([]string, per)
		for k := range texts {
			var b strings.Builder
			for range 200 {
				b.WriteString(words[int(rnd.ExpFloat64()*300)%len(words)])
				b.WriteByte(' ')
			}
			texts[k] = b.String()
		}
		vecs, err := emb.Embed(ctx, texts)
		if err != nil {
			return 0, err
		}
		chunks := make([]ingestd.Chunk, per)
		for k, text := range texts {
			chunks[k] = ingestd.Chunk{ID: ingestd.ChunkID(d.ID, text, 0), Ordinal: k, Text: text,
				Fenced: firewall.Fence(text, firewall.Origin{Installation: d.Installation, SourceKind: d.SourceKind, Tier: string(d.Tier), URI: d.URI, Title: d.Title}),
				Tokens: 200, Embedding: vecs[k], EmbedderID: emb.ID(), HeadingPath: []string{d.Title}}
		}
		var links []ingestd.Link
		if i > 0 {
			links = []ingestd.Link{{From: d.ID, To: ingestd.DocumentID(inst, fmt.Sprintf("doc-%06d", i-1)), Relation: "xref"}}
		}
		start := time.Now()
		if _, err := s.PutDocument(ctx, d, chunks, links); err != nil {
			return 0, err
		}
		put += time.Since(start)
	}
	return put, nil
}

// copyAndSync copies src to dst and syncs dst.
func copyAndSync(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := private.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
