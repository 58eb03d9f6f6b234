package daemon

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/erasure"
	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/jobs"
)

// Eraser plans and runs erasures over the daemon's store and connectors.
func (d *Daemon) Eraser() *erasure.Eraser {
	return erasure.New(erasure.Options{Keys: d.keys, Store: d.store, Forget: d.forget})
}

// forget asks the installation's connector for the cursor edits that drop
// the external ids from its own state; nil when it keeps none.
func (d *Daemon) forget(ctx context.Context, installation string, externalIDs []string) ([]ingestd.Cursor, error) {
	inst, ok := d.insts[installation]
	if !ok || inst.Connector.Forgetter == nil {
		return nil, nil
	}
	return inst.Connector.Forgetter.Forget(ctx, installationCursors{d.store, installation}, externalIDs)
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

// Erase runs an erasure in this process: the plan, the store, then, when
// q is set, the job streams (the installations of the erased documents
// and every configured one: a job for an erased author may wait for any).
// A dry run only plans.
func (d *Daemon) Erase(ctx context.Context, req ingestd.ErasureRequest, q *jobs.Queue) (ingestd.ErasureReport, error) {
	e := d.Eraser()
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
	d.log.Info("erasure.done", "documents", counts.Documents, "chunks", counts.Chunks, "tombstones", counts.Tombstones)
	if q == nil {
		return rep, nil
	}
	insts := slices.Clone(d.order)
	for _, doc := range plan.Documents {
		if !slices.Contains(insts, doc.Installation) && jobs.CheckToken("installation id", doc.Installation) == nil {
			insts = append(insts, doc.Installation)
		}
	}
	sr, err := q.Scrub(ctx, insts, plan.Erasure.DocumentIDs, d.gate.ErasedJob)
	n := sr.Jobs + sr.DeadLetters + sr.Events
	rep.Messages, rep.QueueBusy = &n, sr.Busy
	if err != nil {
		return rep, fmt.Errorf("erased from the store; the job streams: %w", err)
	}
	return rep, nil
}

// erasures serves the admin erasure routes from the job queue once serve
// has opened it (the streams are scrubbed with the store); until then an
// erasure answers "waiting for the job stream", and listing or lifting
// tombstones, which touch the store alone, works.
type erasures struct {
	d *Daemon
	g *queueGate
}

var _ api.Erasures = erasures{}

func (er erasures) Erase(ctx context.Context, req ingestd.ErasureRequest) (ingestd.ErasureReport, error) {
	if req.DryRun {
		return er.d.Erase(ctx, req, nil)
	}
	jq, err := er.g.get()
	if err != nil {
		return ingestd.ErasureReport{}, err
	}
	return er.d.Erase(ctx, req, jq.Queue)
}

func (er erasures) Tombstones(ctx context.Context) ([]ingestd.Tombstone, error) {
	return er.d.store.Tombstones(ctx)
}

func (er erasures) Lift(ctx context.Context, req ingestd.LiftRequest) (int, error) {
	return er.d.Eraser().Lift(ctx, req)
}

// ReadOrMakeKey returns the erasure key in the file at path, making the
// file when there is none (32 random bytes, hex, mode 0600; two processes
// racing make it once: O_EXCL). A key file others can read is refused
// (EINVALID): whoever holds the key can test a guessed identity against
// the tombstones; so is one shorter than erasure.MinKeyBytes.
func ReadOrMakeKey(path string) ([]byte, error) {
	for range 3 {
		b, err := os.ReadFile(path)
		if err == nil {
			return checkKeyFile(path, b)
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

// checkKeyFile checks the mode and length of the key file's content b.
func checkKeyFile(path string, b []byte) ([]byte, error) {
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
