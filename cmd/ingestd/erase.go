package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/daemon"
	"github.com/ingestd/ingestd/erasure"
	"github.com/ingestd/ingestd/internal/cli"
	"github.com/ingestd/ingestd/internal/private"
)

// erasureKeyFile is where the erasure key lives when erasure.key_env is
// not set: made once, 0600, beside the store.
const erasureKeyFile = "erasure.key"

// erasureKeys returns the keyer of the deployment's erasure key: the value
// of the variable erasure.key_env names (at least erasure.MinKeyBytes), or
// the content of data_dir/erasure.key, which the first process to need it
// makes (32 random bytes, hex) with mode 0600. A key file others can read
// is refused: whoever holds the key can test a guessed identity against
// the tombstones.
func (a *app) erasureKeys(e *env) (*erasure.Keyer, error) {
	if env := a.cfg.Erasure.KeyEnv; env != "" {
		v, ok := e.lookupEnv(env)
		if !ok || v == "" {
			return nil, a.cfg.At(a.cfg.Line("erasure"), fmt.Sprintf("erasure: key_env names %s, which is not set", env))
		}
		k, err := erasure.NewKeyer([]byte(v))
		if err != nil {
			return nil, a.cfg.At(a.cfg.Line("erasure"), fmt.Sprintf(
				"erasure: the key in %s is %d bytes; use at least %d random bytes (e.g. `openssl rand -hex 32`)", env, len(v), erasure.MinKeyBytes))
		}
		return k, nil
	}
	if a.cfg.NATS.URL != "" || a.cfg.Store.Driver == "postgres" {
		a.log.Warn("erasure.key_per_host", "file", filepath.Join(a.cfg.Path(a.cfg.DataDir), erasureKeyFile),
			"hint", "processes on other hosts need the same erasure key: set erasure.key_env to it in every process")
	}
	dir := a.cfg.Path(a.cfg.DataDir)
	if err := private.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	key, err := daemon.ReadOrMakeKey(filepath.Join(dir, erasureKeyFile))
	if err != nil {
		return nil, err
	}
	return erasure.NewKeyer(key)
}

// eraseFlags is the command line of `ingestd erase`.
type eraseFlags struct {
	cfgPath                         *string
	docs, inst, author, extID, keys *string
	dryRun, lift, list, asJSON      *bool
}

// parseErase parses and checks the command line of `ingestd erase`.
func parseErase(e *env, args []string) (eraseFlags, error) {
	fs := flag.NewFlagSet("erase", flag.ContinueOnError)
	f := eraseFlags{cfgPath: configFlag(fs, e)}
	f.docs = fs.String("document", "", "erase these documents (ids, comma-separated) and what derives from them")
	f.inst = fs.String("installation", "", "erase every document of the installation; with --author, only the author's there")
	f.author = fs.String("author", "", "erase what this author wrote: a mail address or a login")
	f.dryRun = fs.Bool("dry-run", false, "list what would be erased and change nothing")
	f.lift = fs.Bool("lift", false, "lift tombstones instead, so that what they kept out may be ingested again: by --key, --external-id with --installation, --author, or --installation")
	f.extID = fs.String("external-id", "", "with --lift and --installation: the document's external id")
	f.keys = fs.String("key", "", "with --lift: tombstone keys (comma-separated), as --list shows them")
	f.list = fs.Bool("list", false, "list the tombstones")
	f.asJSON = fs.Bool("json", false, "print the report as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return f, err
	}
	if len(pos) > 0 {
		return f, &usageError{Cmd: "erase", Msg: fmt.Sprintf("unexpected argument %q (name documents with --document)", pos[0])}
	}
	switch {
	case *f.list && (*f.lift || *f.docs != "" || *f.inst != "" || *f.author != "" || *f.dryRun):
		return f, &usageError{Cmd: "erase", Msg: "--list takes no selector"}
	case *f.lift && (*f.docs != "" || *f.dryRun):
		return f, &usageError{Cmd: "erase", Msg: "--lift lifts tombstones: by --key, --external-id with --installation, --author or --installation (not --document or --dry-run)"}
	case !*f.lift && (*f.extID != "" || *f.keys != ""):
		return f, &usageError{Cmd: "erase", Msg: "--external-id and --key go with --lift"}
	case !*f.lift && !*f.list && *f.docs == "" && *f.inst == "" && *f.author == "":
		return f, &usageError{Cmd: "erase", Msg: "erase what: --document, --installation or --author"}
	}
	return f, nil
}

// runErase is `ingestd erase`.
func runErase(ctx context.Context, e *env, args []string) error {
	f, err := parseErase(e, args)
	if err != nil {
		return err
	}
	a, err := openApp(ctx, e, *f.cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	switch {
	case *f.list:
		return listTombstones(ctx, e, a, *f.asJSON)
	case *f.lift:
		return liftTombstones(ctx, e, a, f)
	}
	req := ingestd.ErasureRequest{DocumentIDs: cli.SplitList(*f.docs), Installation: *f.inst, Author: *f.author, DryRun: *f.dryRun}
	var rep ingestd.ErasureReport
	if req.DryRun {
		rep, err = a.Erase(ctx, req, nil)
	} else {
		rep, err = a.eraseReaching(ctx, e, req)
	}
	if err != nil && rep.Erased == nil {
		return err
	}
	if *f.asJSON {
		if oerr := writeIndented(e.stdout, rep); oerr != nil {
			return oerr
		}
		return err
	}
	printErasure(e, rep)
	return err
}

// listTombstones is `ingestd erase --list`.
func listTombstones(ctx context.Context, e *env, a *app, asJSON bool) error {
	ts, err := a.Store().Tombstones(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		if ts == nil {
			ts = []ingestd.Tombstone{}
		}
		return writeIndented(e.stdout, ts)
	}
	if len(ts) == 0 {
		e.stdout.Println("no tombstones")
		return nil
	}
	tb := e.stdout.Table("", "KEY", "KIND", "INSTALLATION", "ERASED AT")
	for _, t := range ts {
		in := t.Installation
		if in == "" {
			in = "(every installation)"
		}
		tb.Row(t.Key, t.Kind, in, t.CreatedAt.Format(time.RFC3339))
	}
	return tb.Flush()
}

// liftTombstones is `ingestd erase --lift`.
func liftTombstones(ctx context.Context, e *env, a *app, f eraseFlags) error {
	n, err := a.Eraser().Lift(ctx, ingestd.LiftRequest{Keys: cli.SplitList(*f.keys), Installation: *f.inst, ExternalID: *f.extID, Author: *f.author})
	if err != nil {
		return err
	}
	if *f.asJSON {
		return writeIndented(e.stdout, map[string]int{"lifted": n})
	}
	e.stdout.Printf("%s lifted: what %s kept out is ingested again at the next sync\n", plural(n, "tombstone"), map[bool]string{true: "it", false: "they"}[n == 1])
	return nil
}

// eraseReaching runs an erasure where the job streams are: in this
// process with nats.url or nats.listen, or without a serve (which then
// holds data_dir and runs the embedded NATS for the erasure's length);
// through the serve that runs the embedded NATS otherwise.
func (a *app) eraseReaching(ctx context.Context, e *env, req ingestd.ErasureRequest) (ingestd.ErasureReport, error) {
	jq, d, err := a.reachQueue(ctx, e)
	if err != nil {
		return ingestd.ErasureReport{}, err
	}
	if d != nil {
		return d.Erase(ctx, req)
	}
	defer jq.Close()
	return a.Erase(ctx, req, jq.Queue)
}

// printErasure writes the report for a person.
func printErasure(e *env, rep ingestd.ErasureReport) {
	if rep.DryRun {
		if len(rep.Documents) == 0 {
			e.stdout.Printf("nothing to erase (%s would be recorded)\n", plural(rep.Tombstones, "tombstone"))
			return
		}
		e.stdout.Printf("would erase %s and record %s:\n", plural(len(rep.Documents), "document"), plural(rep.Tombstones, "tombstone"))
		tb := e.stdout.Table("  ", "ID", "INSTALLATION", "EXTERNAL ID", "KIND", "STATUS", "TITLE")
		for _, d := range rep.Documents {
			tb.Row(d.ID, d.Installation, d.ExternalID, d.ItemKind, d.Status, snippet(d.Title, 60))
		}
		_ = tb.Flush()
		e.stdout.Println("run again without --dry-run to erase them")
		return
	}
	n := rep.Erased
	e.stdout.Printf("erased %s (%s, %s, %s, %s); %s recorded",
		plural(n.Documents, "document"), plural(n.Chunks, "chunk"), plural(n.Links, "link"),
		plural(n.CachedEmbeddings, "cached embedding"), plural(n.Cursors, "cursor"), plural(n.Tombstones, "tombstone"))
	if rep.Messages != nil {
		e.stdout.Printf("; %s erased from the job streams", plural(*rep.Messages, "message"))
	}
	e.stdout.Println()
	for _, s := range rep.QueueBusy {
		e.stderr.Printf("note: stream %s held other messages, so its files were kept: a message consumed before may remain in them until the stream empties (see docs/SECURITY.md, Erasure)\n", s)
	}
}
