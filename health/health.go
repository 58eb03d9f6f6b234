// Package health says how each configured installation's syncs are going,
// from the sync-pass history the store keeps (ingestd.RunStore): its
// newest pass, its last success, the passes that failed in a row, when the
// next scheduled pass is due, and whether it needs a person — failing (its
// last passes failed) or stale (no pass succeeded within a few of its
// intervals). It also records passes, so the bound on the history and the
// pass metrics live in one place; GET /v1/installations, the Connect
// InstallationService, `ingestd status` and /metrics all read it.
//
// It judges syncs, never serving: readiness (/readyz) stays about whether
// retrieval works, so an installation that cannot sync never takes the API
// out of its load balancer. It reads only what the store holds: every
// process — a worker, an api process, the CLI beside a running serve —
// tells the same story.
package health

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
)

// Defaults.
const (
	// DefaultFailedPasses is how many passes in a row must fail before an
	// installation is failing: one, because a pass that failed was not
	// retried on its own when it was refused for good (a dead-lettered
	// job, a refused login), and an operator must see that now.
	DefaultFailedPasses = 1
	// DefaultStaleIntervals is how many of its intervals an installation
	// may go without a successful pass before it is stale.
	DefaultStaleIntervals = 3
	// MaxRuns is the most passes Runs returns at once.
	MaxRuns = 1000
)

// Store is what the monitor reads and writes: the sync history, and the
// document counts it shows beside it.
type Store interface {
	ingestd.RunStore
	CountDocumentsFor(ctx context.Context, metaKeys []string, r *ingestd.Reader) ([]ingestd.DocumentCount, error)
}

// Options configures a Monitor. Store is required.
type Options struct {
	Store Store
	// Installations are the configured installations, in the order shown.
	Installations []ingestd.Installation
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Next returns when the scheduler queues the installation's next
	// pass after now (package jobs computes it); nil, or a zero time,
	// shows none.
	Next func(inst ingestd.Installation, now time.Time) time.Time
	// Keep is how many passes per installation the history keeps (and
	// its newest successful one); default ingestd.DefaultKeepRuns.
	Keep int
	// FailedPasses is how many passes in a row must fail for an
	// installation to be failing; default DefaultFailedPasses.
	FailedPasses int
	// StaleIntervals is how many of its intervals an installation with
	// an interval may go without a successful pass before it is stale;
	// default DefaultStaleIntervals.
	StaleIntervals int
	// Logger receives a scrape's store failure; default discards.
	Logger *slog.Logger
}

// Monitor records sync passes and reports the installations' state. It
// is safe for concurrent use.
type Monitor struct {
	store  Store
	insts  []ingestd.Installation
	now    func() time.Time
	next   func(ingestd.Installation, time.Time) time.Time
	keep   int
	failed int
	stale  int
	log    *slog.Logger
	passes *prometheus.CounterVec
}

// New returns a Monitor. It fails when Store is missing or a bound is
// negative.
func New(o Options) (*Monitor, error) {
	if o.Store == nil {
		return nil, fmt.Errorf("health: a store is required")
	}
	if o.Keep < 0 || o.FailedPasses < 0 || o.StaleIntervals < 0 {
		return nil, fmt.Errorf("health: keep %d, failed passes %d, stale intervals %d: none may be negative", o.Keep, o.FailedPasses, o.StaleIntervals)
	}
	m := &Monitor{
		store: o.Store, insts: slices.Clone(o.Installations), now: o.Now, next: o.Next,
		keep: orDefault(o.Keep, ingestd.DefaultKeepRuns), failed: orDefault(o.FailedPasses, DefaultFailedPasses),
		stale: orDefault(o.StaleIntervals, DefaultStaleIntervals), log: o.Logger,
		passes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ingestd_sync_passes_total",
			Help: "Sync passes this process ran and recorded, by installation, trigger (schedule, manual, api, watch, queue) and result (ok, failed; a dead-lettered pass is failed).",
		}, []string{"installation", "trigger", "result"}),
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m, nil
}

// Collector returns the monitor's metrics: the passes this process
// recorded, counted by installation, trigger and result, and — read from
// the history at each scrape — every configured installation's last
// success, last pass, failures in a row and health.
func (m *Monitor) Collector() prometheus.Collector { return collector{m} }

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Record adds a finished pass to the history, keeping Keep passes of its
// installation, and counts it in ingestd_sync_passes_total. The pass's
// own result stands whatever Record returns: a caller logs the error.
func (m *Monitor) Record(ctx context.Context, run ingestd.SyncRun) error {
	result := "ok"
	if !run.OK() {
		result = "failed"
	}
	m.passes.WithLabelValues(run.Installation, run.Trigger, result).Inc()
	if err := m.store.AddRun(ctx, run, m.keep); err != nil {
		return fmt.Errorf("record the sync pass of %s: %w", run.Installation, err)
	}
	return nil
}

// Installations returns every configured installation's status, in
// configuration order. Errors are the store's.
func (m *Monitor) Installations(ctx context.Context) ([]ingestd.InstallationStatus, error) {
	return m.statuses(ctx, true)
}

// statuses is Installations, with the documents counted when count is
// set (a scrape does not show them: counting reads every document).
func (m *Monitor) statuses(ctx context.Context, count bool) ([]ingestd.InstallationStatus, error) {
	states, err := m.store.RunStates(ctx)
	if err != nil {
		return nil, err
	}
	docs, unmapped := map[string]int{}, map[string]int{}
	if count {
		// The service view: every document, each count of one readers
		// state.
		counts, err := m.store.CountDocumentsFor(ctx, nil, nil)
		if err != nil {
			return nil, err
		}
		for _, c := range counts {
			docs[c.Installation] += c.Count
			if c.ReadersState == ingestd.ReadersUnmapped {
				unmapped[c.Installation] += c.Count
			}
		}
	}
	now := m.now()
	out := make([]ingestd.InstallationStatus, 0, len(m.insts))
	for _, inst := range m.insts {
		st := ingestd.InstallationStatus{
			ID: inst.ID, Kind: inst.Kind, Tier: string(inst.Tier),
			IntervalSeconds: int64(inst.Interval / time.Second), Documents: docs[inst.ID], Unmapped: unmapped[inst.ID],
		}
		state, ok := states[inst.ID]
		if ok {
			last := state.Last
			st.LastRun = &last
			st.ConsecutiveFailures = last.FailedInRow
			if state.LastSuccess != nil {
				st.LastSuccessAt = state.LastSuccess.EndedAt()
			}
		}
		if m.next != nil && inst.Interval > 0 {
			st.NextRunAt = m.next(inst, now)
		}
		st.Health = m.judge(inst, state, ok, now)
		out = append(out, st)
	}
	return out, nil
}

// judge is the health of an installation whose history says state (ok:
// it holds any pass) at now.
func (m *Monitor) judge(inst ingestd.Installation, state ingestd.RunState, ok bool, now time.Time) ingestd.Health {
	if !ok {
		return ingestd.Health{Status: ingestd.HealthPending, Reasons: []string{"no sync pass is recorded yet"}}
	}
	var h ingestd.Health
	if n := state.Last.FailedInRow; n >= m.failed {
		h.Status = ingestd.HealthFailing
		what := "the last pass failed"
		if n > 1 {
			what = fmt.Sprintf("the last %d passes failed", n)
		}
		h.Reasons = append(h.Reasons, what+": "+state.Last.Error)
	}
	if inst.Interval > 0 {
		bound := time.Duration(m.stale) * inst.Interval
		since, what := state.Oldest, "no pass has succeeded since the first recorded one at "+state.Oldest.UTC().Format(time.RFC3339)
		if state.LastSuccess != nil {
			since = state.LastSuccess.EndedAt()
			what = "the last successful pass ended at " + since.UTC().Format(time.RFC3339)
		}
		if now.Sub(since) > bound {
			if h.Status == "" {
				h.Status = ingestd.HealthStale
			}
			h.Reasons = append(h.Reasons, fmt.Sprintf("%s, more than %d × its interval of %s ago", what, m.stale, inst.Interval))
		}
	}
	if h.Status == "" {
		h.Status = ingestd.HealthOK
	}
	return h
}

// Runs returns up to limit of the installation's recorded passes, newest
// first; limit 0 means as many as the history keeps. Returns ENOTFOUND
// for an installation that is not configured (naming those that are) and
// EINVALID for a limit outside 0..MaxRuns.
func (m *Monitor) Runs(ctx context.Context, installation string, limit int) ([]ingestd.SyncRun, error) {
	if !slices.ContainsFunc(m.insts, func(i ingestd.Installation) bool { return i.ID == installation }) {
		return nil, ingestd.Errorf(ingestd.ENOTFOUND, "no installation %q is configured (%s)", installation, m.configured())
	}
	switch {
	case limit < 0 || limit > MaxRuns:
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d is not between 1 and %d", limit, MaxRuns)
	case limit == 0:
		limit = m.keep + 1 // the newest success may be kept beyond keep
	}
	runs, err := m.store.Runs(ctx, installation, limit)
	if err != nil {
		return nil, err
	}
	if runs == nil {
		runs = []ingestd.SyncRun{}
	}
	return runs, nil
}

// configured names the configured installations for an error message.
func (m *Monitor) configured() string {
	if len(m.insts) == 0 {
		return "none is"
	}
	ids := make([]string, len(m.insts))
	for i, inst := range m.insts {
		ids[i] = inst.ID
	}
	return "configured: " + strings.Join(ids, ", ")
}
