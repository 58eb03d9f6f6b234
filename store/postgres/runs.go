package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd"
)

var _ ingestd.RunStore = (*Store)(nil)

const runColumns = `installation, triggered_by, started_at, duration_ns, seen, added, changed, unchanged,
	deleted, failed, skipped, queued, complete, cursors, error, failed_in_row`

// AddRun records a pass and prunes the installation's history to the
// newest keep passes and its newest successful one, in one transaction.
// A transaction-scoped advisory lock per installation orders two
// processes recording passes of one installation at once (a foreground
// `ingestd sync` beside a worker), so each counts the other's failure.
func (s *Store) AddRun(ctx context.Context, run ingestd.SyncRun, keep int) error {
	if err := ingestd.CheckRun(run, keep); err != nil {
		return err
	}
	what := "record a sync pass of " + run.Installation
	return s.inTx(ctx, what, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('ingestd.sync_runs:' || $1, 0))", run.Installation); err != nil {
			return err
		}
		var prev int
		err := tx.QueryRow(ctx, "SELECT failed_in_row FROM sync_runs WHERE installation = $1 ORDER BY id DESC LIMIT 1",
			run.Installation).Scan(&prev)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		run.FailedInRow = 0
		if !run.OK() {
			run.FailedInRow = prev + 1
		}
		_, err = tx.Exec(ctx, "INSERT INTO sync_runs ("+runColumns+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
			run.Installation, run.Trigger, run.StartedAt, int64(run.Duration), run.Seen, run.Added, run.Changed, run.Unchanged,
			run.Deleted, run.Failed, run.Skipped, run.Queued, run.Complete, run.Cursors, run.Error, run.FailedInRow)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM sync_runs WHERE installation = $1
			AND id < (SELECT min(id) FROM (SELECT id FROM sync_runs WHERE installation = $1 ORDER BY id DESC LIMIT $2) AS newest)
			AND id <> coalesce((SELECT max(id) FROM sync_runs WHERE installation = $1 AND error = ''), 0)`,
			run.Installation, keep)
		return err
	})
}

// Runs returns the installation's newest passes, newest first.
func (s *Store) Runs(ctx context.Context, installation string, limit int) ([]ingestd.SyncRun, error) {
	if limit < 1 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d: ask for at least one pass", limit)
	}
	rows, err := s.pool.Query(ctx, "SELECT "+runColumns+" FROM sync_runs WHERE installation = $1 ORDER BY id DESC LIMIT $2",
		installation, limit)
	if err != nil {
		return nil, classify("read the sync history of "+installation, err)
	}
	out, err := pgx.CollectRows(rows, scanRun)
	if err != nil {
		return nil, classify("read the sync history of "+installation, err)
	}
	return out, nil
}

// RunStates returns each installation's newest pass, newest successful
// pass and the start of its oldest held pass.
func (s *Store) RunStates(ctx context.Context) (map[string]ingestd.RunState, error) {
	out := map[string]ingestd.RunState{}
	read := func(where string, set func(st *ingestd.RunState, r ingestd.SyncRun)) error {
		rows, err := s.pool.Query(ctx, "SELECT "+runColumns+" FROM sync_runs WHERE id IN ("+where+")")
		if err != nil {
			return classify("read the sync history", err)
		}
		runs, err := pgx.CollectRows(rows, scanRun)
		if err != nil {
			return classify("read the sync history", err)
		}
		for _, r := range runs {
			st := out[r.Installation]
			set(&st, r)
			out[r.Installation] = st
		}
		return nil
	}
	if err := read("SELECT max(id) FROM sync_runs GROUP BY installation", func(st *ingestd.RunState, r ingestd.SyncRun) { st.Last = r }); err != nil {
		return nil, err
	}
	if err := read("SELECT max(id) FROM sync_runs WHERE error = '' GROUP BY installation", func(st *ingestd.RunState, r ingestd.SyncRun) { st.LastSuccess = &r }); err != nil {
		return nil, err
	}
	if err := read("SELECT min(id) FROM sync_runs GROUP BY installation", func(st *ingestd.RunState, r ingestd.SyncRun) { st.Oldest = r.StartedAt }); err != nil {
		return nil, err
	}
	return out, nil
}

func scanRun(row pgx.CollectableRow) (ingestd.SyncRun, error) {
	var (
		r   ingestd.SyncRun
		dur int64
	)
	err := row.Scan(&r.Installation, &r.Trigger, &r.StartedAt, &dur, &r.Seen, &r.Added, &r.Changed, &r.Unchanged,
		&r.Deleted, &r.Failed, &r.Skipped, &r.Queued, &r.Complete, &r.Cursors, &r.Error, &r.FailedInRow)
	r.StartedAt, r.Duration = r.StartedAt.UTC(), time.Duration(dur)
	return r, err
}
