package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/erasure"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/jobs"
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
			return nil, &configError{path: a.cfg.path, line: a.cfg.line("erasure"), msg: fmt.Sprintf("erasure: key_env names %s, which is not set", env)}
		}
		k, err := erasure.NewKeyer([]byte(v))
		if err != nil {
			return nil, &configError{path: a.cfg.path, line: a.cfg.line("erasure"), msg: fmt.Sprintf(
				"erasure: the key in %s is %d bytes; use at least %d random bytes (e.g. `openssl rand -hex 32`)", env, len(v), erasure.MinKeyBytes)}
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
	key, err := readOrMakeKey(filepath.Join(dir, erasureKeyFile))
	if err != nil {
		return nil, err
	}
	return erasure.NewKeyer(key)
}

// readOrMakeKey returns the key in the file, making the file when there
// is none (two processes racing make it once: O_EXCL).
func readOrMakeKey(path string) ([]byte, error) {
	for range 3 {
		b, err := os.ReadFile(path)
		if err == nil {
			info, err := os.Stat(path)
			if err != nil {
				return nil, fmt.Errorf("erasure key: %w", err)
			}
			if info.Mode().Perm()&0o077 != 0 {
				return nil, ingestd.Errorf(ingestd.EINVALID, "erasure key %s can be read by others (mode %v): run chmod 600 %s", path, info.Mode().Perm(), path)
			}
			key := []byte(strings.TrimSpace(string(b)))
			if len(key) < erasure.MinKeyBytes {
				return nil, ingestd.Errorf(ingestd.EINVALID, "erasure key %s holds %d bytes; want at least %d", path, len(key), erasure.MinKeyBytes)
			}
			return key, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("erasure key: %w", err)
		}
		var raw [32]byte
		if _, err := rand.Read(raw[:]); err != nil {
			return nil, fmt.Errorf("erasure key: %w", err)
		}
		f, err := private.Create(path)
		if errors.Is(err, fs.ErrExist) {
			continue // another process made it: read that one
		}
		if err != nil {
			return nil, fmt.Errorf("erasure key: %w", err)
		}
		_, werr := f.WriteString(hex.EncodeToString(raw[:]) + "\n")
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			os.Remove(path)
			return nil, fmt.Errorf("erasure key: %w", err)
		}
	}
	return nil, fmt.Errorf("erasure key %s: could not be read or made", path)
}

// eraser plans and runs erasures over the app's store and connectors.
func (a *app) eraser() *erasure.Eraser {
	return erasure.New(erasure.Options{Keys: a.keys, Store: a.store, Forget: a.forget})
}

// forget asks the installation's connector for the cursor edits that drop
// the external ids from its own state; nil when it keeps none.
func (a *app) forget(ctx context.Context, installation string, externalIDs []string) ([]ingestd.Cursor, error) {
	c, ok := a.sources[installation]
	if !ok || c.Forgetter == nil {
		return nil, nil
	}
	return c.Forgetter.Forget(ctx, installationCursors{a.store, installation}, externalIDs)
}

// installationCursors lists one installation's cursors for a connector.
type installationCursors struct {
	store        ingestd.Eraser
	installation string
}

var _ connectors.CursorLister = installationCursors{}

func (c installationCursors) Cursors(ctx context.Context, prefix string) ([]ingestd.Cursor, error) {
	return c.store.Cursors(ctx, c.installation, prefix)
}

// erase runs an erasure in this process: the plan, the store, then, when
// q is set, the job streams (the installations of the erased documents
// and every configured one: a job for an erased author may wait for any).
// A dry run only plans.
func (a *app) erase(ctx context.Context, req ingestd.ErasureRequest, q *jobs.Queue) (ingestd.ErasureReport, error) {
	e := a.eraser()
	plan, err := e.Plan(ctx, req)
	if err != nil {
		return ingestd.ErasureReport{}, err
	}
	if req.DryRun {
		return plan.Report(true), nil
	}
	counts, err := e.Erase(ctx, plan)
	rep := plan.Report(false)
	rep.Erased = &counts
	if err != nil {
		return rep, err
	}
	a.log.Info("erasure.done", "documents", counts.Documents, "chunks", counts.Chunks, "tombstones", counts.Tombstones)
	if q == nil {
		return rep, nil
	}
	insts := slices.Clone(a.order)
	for _, d := range plan.Documents {
		if !slices.Contains(insts, d.Installation) && jobs.CheckToken("installation id", d.Installation) == nil {
			insts = append(insts, d.Installation)
		}
	}
	sr, err := q.Scrub(ctx, insts, plan.Erasure.DocumentIDs, a.gate.ErasedJob)
	n := sr.Jobs + sr.DeadLetters + sr.Events
	rep.Messages, rep.QueueBusy = &n, sr.Busy
	if err != nil {
		return rep, fmt.Errorf("erased from the store; the job streams: %w", err)
	}
	return rep, nil
}

// followLoop brings the store's in-memory indexes up to date every period
// (one PRAGMA when nothing changed), so that what another process erased
// leaves this process's memory within a period even when no search comes
// to catch it up.
func (a *app) followLoop(ctx context.Context, period time.Duration) {
	if a.maint == nil {
		return
	}
	every(ctx, period, func() {
		if err := a.maint.Warm(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("store.catch_up_failed", "error", err.Error())
		}
	})
}

// erasures serves the admin erasure routes from the job queue once serve
// has opened it (the streams are scrubbed with the store); until then an
// erasure answers "waiting for the job stream", and listing or lifting
// tombstones, which touch the store alone, works.
type erasures struct {
	a *app
	g *queueGate
}

var _ api.Erasures = erasures{}

func (er erasures) Erase(ctx context.Context, req ingestd.ErasureRequest) (ingestd.ErasureReport, error) {
	if req.DryRun {
		return er.a.erase(ctx, req, nil)
	}
	jq, err := er.g.get()
	if err != nil {
		return ingestd.ErasureReport{}, err
	}
	return er.a.erase(ctx, req, jq.Queue)
}

func (er erasures) Tombstones(ctx context.Context) ([]ingestd.Tombstone, error) {
	return er.a.store.Tombstones(ctx)
}

func (er erasures) Lift(ctx context.Context, req ingestd.LiftRequest) (int, error) {
	return er.a.eraser().Lift(ctx, req)
}

// Erase is POST /v1/erasures.
func (d *daemon) Erase(ctx context.Context, req ingestd.ErasureRequest) (ingestd.ErasureReport, error) {
	var rep ingestd.ErasureReport
	err := d.callJSON(ctx, http.MethodPost, "/v1/erasures", req, &rep)
	return rep, err
}

// runErase is `ingestd erase`.
func runErase(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("erase", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	docs := fs.String("document", "", "erase these documents (ids, comma-separated) and what derives from them")
	inst := fs.String("installation", "", "erase every document of the installation; with --author, only the author's there")
	author := fs.String("author", "", "erase what this author wrote: a mail address or a login")
	dryRun := fs.Bool("dry-run", false, "list what would be erased and change nothing")
	lift := fs.Bool("lift", false, "lift tombstones instead, so that what they kept out may be ingested again: by --key, --external-id with --installation, --author, or --installation")
	extID := fs.String("external-id", "", "with --lift and --installation: the document's external id")
	keys := fs.String("key", "", "with --lift: tombstone keys (comma-separated), as --list shows them")
	list := fs.Bool("list", false, "list the tombstones")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{cmd: "erase", msg: fmt.Sprintf("unexpected argument %q (name documents with --document)", pos[0])}
	}
	switch {
	case *list && (*lift || *docs != "" || *inst != "" || *author != "" || *dryRun):
		return &usageError{cmd: "erase", msg: "--list takes no selector"}
	case *lift && (*docs != "" || *dryRun):
		return &usageError{cmd: "erase", msg: "--lift lifts tombstones: by --key, --external-id with --installation, --author or --installation (not --document or --dry-run)"}
	case !*lift && (*extID != "" || *keys != ""):
		return &usageError{cmd: "erase", msg: "--external-id and --key go with --lift"}
	case !*lift && !*list && *docs == "" && *inst == "" && *author == "":
		return &usageError{cmd: "erase", msg: "erase what: --document, --installation or --author"}
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	out := func(v any) error {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}

	switch {
	case *list:
		ts, err := a.store.Tombstones(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			if ts == nil {
				ts = []ingestd.Tombstone{}
			}
			return out(ts)
		}
		if len(ts) == 0 {
			e.stdout.Println("no tombstones")
			return nil
		}
		tb := e.stdout.table("", "KEY", "KIND", "INSTALLATION", "ERASED AT")
		for _, t := range ts {
			in := t.Installation
			if in == "" {
				in = "(every installation)"
			}
			tb.row(t.Key, t.Kind, in, t.CreatedAt.Format(time.RFC3339))
		}
		return tb.flush()
	case *lift:
		n, err := a.eraser().Lift(ctx, ingestd.LiftRequest{Keys: splitList(*keys), Installation: *inst, ExternalID: *extID, Author: *author})
		if err != nil {
			return err
		}
		if *asJSON {
			return out(map[string]int{"lifted": n})
		}
		e.stdout.Printf("%s lifted: what %s kept out is ingested again at the next sync\n", plural(n, "tombstone"), map[bool]string{true: "it", false: "they"}[n == 1])
		return nil
	}

	req := ingestd.ErasureRequest{DocumentIDs: splitList(*docs), Installation: *inst, Author: *author, DryRun: *dryRun}
	var rep ingestd.ErasureReport
	if req.DryRun {
		rep, err = a.erase(ctx, req, nil)
	} else {
		rep, err = a.eraseReaching(ctx, e, req)
	}
	if err != nil && rep.Erased == nil {
		return err
	}
	if *asJSON {
		if oerr := out(rep); oerr != nil {
			return oerr
		}
		return err
	}
	printErasure(e, rep)
	return err
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
	return a.erase(ctx, req, jq.Queue)
}

// printErasure writes the report for a person.
func printErasure(e *env, rep ingestd.ErasureReport) {
	if rep.DryRun {
		if len(rep.Documents) == 0 {
			e.stdout.Printf("nothing to erase (%s would be recorded)\n", plural(rep.Tombstones, "tombstone"))
			return
		}
		e.stdout.Printf("would erase %s and record %s:\n", plural(len(rep.Documents), "document"), plural(rep.Tombstones, "tombstone"))
		tb := e.stdout.table("  ", "ID", "INSTALLATION", "EXTERNAL ID", "KIND", "STATUS", "TITLE")
		for _, d := range rep.Documents {
			tb.row(d.ID, d.Installation, d.ExternalID, d.ItemKind, d.Status, snippet(d.Title, 60))
		}
		_ = tb.flush()
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
