package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/ingestd/ingestd"
)

var _ ingestd.RunStore = (*Store)(nil)

const runColumns = `installation, triggered_by, started_at, duration_ns, seen, added, changed, unchanged,
	deleted, failed, skipped, queued, complete, cursors, error, failed_in_row`

// AddRun records a pass and prunes the installation's history to the
// newest keep passes and its newest successful one, in one transaction.
func (s *Store) AddRun(ctx context.Context, run ingestd.SyncRun, keep int) error {
	if err := ingestd.CheckRun(run, keep); err != nil {
		return err
	}
	return s.writeTx(ctx, func(tx *sql.Tx) error {
		var prev int
		err := tx.QueryRowContext(ctx, "SELECT failed_in_row FROM sync_runs WHERE installation = ? ORDER BY id DESC LIMIT 1",
			run.Installation).Scan(&prev)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return unavailable("read the sync history of %s", run.Installation, err)
		}
		run.FailedInRow = 0
		if !run.OK() {
			run.FailedInRow = prev + 1
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO sync_runs ("+runColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
			run.Installation, run.Trigger, ts(run.StartedAt), int64(run.Duration), run.Seen, run.Added, run.Changed, run.Unchanged,
			run.Deleted, run.Failed, run.Skipped, run.Queued, run.Complete, run.Cursors, run.Error, run.FailedInRow)
		if err != nil {
			return unavailable("record a sync pass of %s", run.Installation, err)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM sync_runs WHERE installation = ?1
			AND id < (SELECT min(id) FROM (SELECT id FROM sync_runs WHERE installation = ?1 ORDER BY id DESC LIMIT ?2))
			AND id <> coalesce((SELECT max(id) FROM sync_runs WHERE installation = ?1 AND error = ''), 0)`,
			run.Installation, keep)
		if err != nil {
			return unavailable("prune the sync history of %s", run.Installation, err)
		}
		return nil
	})
}

// Runs returns the installation's newest passes, newest first.
func (s *Store) Runs(ctx context.Context, installation string, limit int) ([]ingestd.SyncRun, error) {
	if limit < 1 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d: ask for at least one pass", limit)
	}
	rows, err := s.read.QueryContext(ctx, "SELECT "+runColumns+" FROM sync_runs WHERE installation = ? ORDER BY id DESC LIMIT ?",
		installation, limit)
	if err != nil {
		return nil, unavailable("read the sync history of %s", installation, err)
	}
	defer rows.Close()
	var out []ingestd.SyncRun
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, unavailable("read the sync history of %s", installation, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("read the sync history of %s", installation, err)
	}
	return out, nil
}

// RunStates returns each installation's newest pass, newest successful
// pass and the start of its oldest held pass.
func (s *Store) RunStates(ctx context.Context) (map[string]ingestd.RunState, error) {
	out := map[string]ingestd.RunState{}
	read := func(where string, set func(st *ingestd.RunState, r ingestd.SyncRun)) error {
		rows, err := s.read.QueryContext(ctx, "SELECT "+runColumns+" FROM sync_runs WHERE id IN ("+where+")")
		if err != nil {
			return unavailable("read the sync history%s", "", err)
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return unavailable("read the sync history%s", "", err)
			}
			st := out[r.Installation]
			set(&st, r)
			out[r.Installation] = st
		}
		if err := rows.Err(); err != nil {
			return unavailable("read the sync history%s", "", err)
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

func scanRun(rows *sql.Rows) (ingestd.SyncRun, error) {
	var (
		r       ingestd.SyncRun
		started sql.NullString
		dur     int64
	)
	err := rows.Scan(&r.Installation, &r.Trigger, &started, &dur, &r.Seen, &r.Added, &r.Changed, &r.Unchanged,
		&r.Deleted, &r.Failed, &r.Skipped, &r.Queued, &r.Complete, &r.Cursors, &r.Error, &r.FailedInRow)
	r.StartedAt, r.Duration = parseTS(started), time.Duration(dur)
	return r, err
}
