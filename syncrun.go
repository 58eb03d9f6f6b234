package ingestd

import (
	"context"
	"time"
)

// Triggers say what started a sync pass (Job.Trigger, SyncRun.Trigger). A
// job that names none of them (queued by an older version) is recorded
// as "unknown".
const (
	TriggerSchedule = "schedule" // the installation's interval came round
	TriggerManual   = "manual"   // `ingestd sync`, run in the foreground
	TriggerAPI      = "api"      // POST /v1/installations/{id}/sync (and `sync --queue` through serve)
	TriggerWatch    = "watch"    // the source reported a change (IMAP IDLE)
	TriggerQueue    = "queue"    // `ingestd sync --queue` on its own NATS connection
)

// Triggers lists every trigger.
var Triggers = []string{TriggerSchedule, TriggerManual, TriggerAPI, TriggerWatch, TriggerQueue}

// SyncRun is one sync pass as the history keeps it: what started it,
// when, how long it took, what it did to the items it saw and how it
// ended. A pass succeeded when Error is empty; items it could not read
// are counted in Failed and do not fail the pass.
type SyncRun struct {
	Installation string    `json:"installation"`
	Trigger      string    `json:"trigger"`
	StartedAt    time.Time `json:"started_at"`
	// Duration is how long the pass ran.
	Duration  time.Duration `json:"duration_ns"`
	Seen      int           `json:"seen"`
	Added     int           `json:"added"`
	Changed   int           `json:"changed"`
	Unchanged int           `json:"unchanged"`
	Deleted   int           `json:"deleted"`
	Failed    int           `json:"failed"`
	Skipped   int           `json:"skipped"`
	// Queued counts the item jobs a pass run by the workers published.
	Queued int `json:"queued"`
	// Complete says the listing was whole, so what it no longer lists
	// was tombstoned.
	Complete bool `json:"complete"`
	// Cursors summarises the sync cursors the pass wrote (key=value,
	// values shortened); empty when it wrote none.
	Cursors string `json:"cursors,omitempty"`
	// Error is why the pass stopped; empty for a pass that succeeded.
	Error string `json:"error,omitempty"`
	// FailedInRow counts the passes of the installation that failed in a
	// row up to this one, this one included: 0 for a pass that
	// succeeded. The store computes it when the pass is added.
	FailedInRow int `json:"failed_in_row"`
}

// OK reports whether the pass succeeded.
func (r SyncRun) OK() bool { return r.Error == "" }

// EndedAt is when the pass ended.
func (r SyncRun) EndedAt() time.Time { return r.StartedAt.Add(r.Duration) }

// DefaultKeepRuns is how many passes per installation the history keeps
// unless configured otherwise.
const DefaultKeepRuns = 100

// RunState is what the history says of one installation: its newest
// pass and its newest successful one.
type RunState struct {
	Last SyncRun
	// LastSuccess is the newest pass that succeeded; nil when none is
	// recorded.
	LastSuccess *SyncRun
	// Oldest is when the oldest pass the history holds started.
	Oldest time.Time
}

// RunStore keeps the history of sync passes, a bounded number per
// installation, in the store every process shares: a pass a worker ran
// is visible to every api process and to `ingestd status`. Errors as for
// Store.
type RunStore interface {
	// AddRun records a finished pass, computing its FailedInRow from the
	// installation's newest pass, and drops the installation's oldest
	// passes beyond the newest keep — but never its newest successful
	// one, however old, so the last success is never forgotten. Returns
	// EINVALID for a pass without installation, trigger or start, or keep
	// below 1.
	AddRun(ctx context.Context, run SyncRun, keep int) error
	// Runs returns up to limit of the installation's passes, newest (last
	// added) first; none for an installation without any. Returns
	// EINVALID for limit below 1.
	Runs(ctx context.Context, installation string, limit int) ([]SyncRun, error)
	// RunStates returns the state of every installation with a recorded
	// pass, by installation id.
	RunStates(ctx context.Context) (map[string]RunState, error)
}

// CheckRun validates a pass for RunStore.AddRun; every store calls it, so
// all of them refuse the same passes with the same EINVALID messages.
func CheckRun(run SyncRun, keep int) error {
	switch {
	case run.Installation == "":
		return Errorf(EINVALID, "sync run without an installation")
	case run.Trigger == "":
		return Errorf(EINVALID, "sync run of %s without a trigger", run.Installation)
	case run.StartedAt.IsZero():
		return Errorf(EINVALID, "sync run of %s without a start time", run.Installation)
	case run.Duration < 0:
		return Errorf(EINVALID, "sync run of %s with a negative duration", run.Installation)
	case keep < 1:
		return Errorf(EINVALID, "keep %d: the history keeps at least one pass per installation", keep)
	}
	return nil
}

// InstallationStatus is one installation as GET /v1/installations and
// `ingestd status` show it: what is configured, what the store holds,
// how its syncs went and what needs a person.
type InstallationStatus struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Tier is the declared tier.
	Tier string `json:"tier"`
	// IntervalSeconds is how often serve syncs it; 0: only on demand.
	IntervalSeconds int64 `json:"interval_seconds"`
	// Documents counts its not-deleted documents.
	Documents int `json:"documents"`
	// Unmapped counts those of them whose readers could not be
	// determined (the source's permissions were not read): no person may
	// read them until a pass maps them.
	Unmapped int `json:"unmapped"`
	// LastRun is its newest recorded pass; nil when none is.
	LastRun *SyncRun `json:"last_run"`
	// LastSuccessAt is when its newest successful pass ended.
	LastSuccessAt time.Time `json:"last_success_at,omitzero"`
	// ConsecutiveFailures counts the passes that failed since the last
	// success (or since the first recorded pass).
	ConsecutiveFailures int `json:"consecutive_failures"`
	// NextRunAt is when serve queues its next scheduled pass; zero
	// without an interval.
	NextRunAt time.Time `json:"next_run_at,omitzero"`
	Health    Health    `json:"health"`
}

// Health is the verdict on an installation's syncs.
type Health struct {
	// Status is one of the Health constants.
	Status string `json:"status"`
	// Reasons says, for a status other than ok, why, in words.
	Reasons []string `json:"reasons,omitempty"`
}

// Health statuses.
const (
	HealthOK      = "ok"      // its last pass succeeded, recently enough
	HealthFailing = "failing" // its last passes failed (health.failed_passes in a row)
	HealthStale   = "stale"   // no pass succeeded within health.stale_intervals of its interval
	HealthPending = "pending" // no pass is recorded yet
)
