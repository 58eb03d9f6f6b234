package api

import (
	"context"
	"net/http"
	"slices"
	"time"

	"connectrpc.com/connect"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
	ingestdv1 "github.com/ingestd/ingestd/gen/ingestd/v1"
	"github.com/ingestd/ingestd/gen/ingestd/v1/ingestdv1connect"
)

// Installations reports the installations' syncs from the sync-pass
// history (package health's Monitor). It serves GET /v1/installations, GET
// /v1/installations/{id}/runs and the Connect InstallationService, all
// under the admin scope: a pass's error names hosts, accounts and paths,
// which a retrieval token has no need to read.
type Installations interface {
	// Installations returns every configured installation's status, in
	// configuration order.
	Installations(ctx context.Context) ([]ingestd.InstallationStatus, error)
	// Runs returns up to limit of the installation's passes, newest
	// first; 0 means every one the history keeps. Returns ENOTFOUND for an
	// installation that is not configured and EINVALID for a limit out of
	// range.
	Runs(ctx context.Context, installation string, limit int) ([]ingestd.SyncRun, error)
}

// scopedInstallations is Installations as a token may see it: a token
// limited to some installations lists only those and is refused the runs
// of any other (access decides, as on every other route), so the REST
// routes and the Connect service cannot disagree about it.
type scopedInstallations struct{ next Installations }

// scopeInstallations wraps insts in the token's scope; nil stays nil.
func scopeInstallations(insts Installations) Installations {
	if insts == nil {
		return nil
	}
	return scopedInstallations{next: insts}
}

func (s scopedInstallations) Installations(ctx context.Context) ([]ingestd.InstallationStatus, error) {
	p, err := access.Require(ctx, ScopeAdmin)
	if err != nil {
		return nil, err
	}
	sts, err := s.next.Installations(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(sts, func(st ingestd.InstallationStatus) bool { return !p.Sees(st.ID) }), nil
}

func (s scopedInstallations) Runs(ctx context.Context, installation string, limit int) ([]ingestd.SyncRun, error) {
	if _, err := access.RequireInstallation(ctx, ScopeAdmin, installation); err != nil {
		return nil, err
	}
	return s.next.Runs(ctx, installation, limit)
}

// errNoHistory answers the history's routes on a server without one.
var errNoHistory = ingestd.Errorf(ingestd.EUNAVAILABLE, "the sync history is not available on this server")

// mountInstallations adds GET /v1/installations and GET
// /v1/installations/{id}/runs, admin scope.
func (s *server) mountInstallations(mux *http.ServeMux, insts Installations) {
	mux.Handle("GET /v1/installations", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if insts == nil {
			s.fail(w, r, errNoHistory)
			return
		}
		sts, err := insts.Installations(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if sts == nil {
			sts = []ingestd.InstallationStatus{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"installations": sts})
	}), ScopeAdmin, false))
	mux.Handle("GET /v1/installations/{id}/runs", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if insts == nil {
			s.fail(w, r, errNoHistory)
			return
		}
		limit, err := queryLimit(r, "passes", 0)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		id := r.PathValue("id")
		runs, err := insts.Runs(r.Context(), id, limit)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if runs == nil {
			runs = []ingestd.SyncRun{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"installation": id, "runs": runs})
	}), ScopeAdmin, false))
}

var _ ingestdv1connect.InstallationServiceHandler = (*installationService)(nil)

// installationService is the InstallationService over connect-go.
type installationService struct {
	insts Installations
}

func (c *installationService) ListInstallations(ctx context.Context, _ *connect.Request[ingestdv1.ListInstallationsRequest]) (*connect.Response[ingestdv1.ListInstallationsResponse], error) {
	if c.insts == nil {
		return nil, errNoHistory
	}
	sts, err := c.insts.Installations(ctx)
	if err != nil {
		return nil, err
	}
	out := &ingestdv1.ListInstallationsResponse{Installations: make([]*ingestdv1.InstallationStatus, len(sts))}
	for i, st := range sts {
		out.Installations[i] = statusToProto(st)
	}
	return connect.NewResponse(out), nil
}

func (c *installationService) ListRuns(ctx context.Context, req *connect.Request[ingestdv1.ListRunsRequest]) (*connect.Response[ingestdv1.ListRunsResponse], error) {
	if c.insts == nil {
		return nil, errNoHistory
	}
	limit := req.Msg.GetLimit()
	if limit < 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d: ask for at least one pass, or 0 for all", limit)
	}
	runs, err := c.insts.Runs(ctx, req.Msg.GetInstallation(), int(limit))
	if err != nil {
		return nil, err
	}
	out := &ingestdv1.ListRunsResponse{Installation: req.Msg.GetInstallation(), Runs: make([]*ingestdv1.SyncRun, len(runs))}
	for i, r := range runs {
		out.Runs[i] = runToProto(r)
	}
	return connect.NewResponse(out), nil
}

func statusToProto(s ingestd.InstallationStatus) *ingestdv1.InstallationStatus {
	m := &ingestdv1.InstallationStatus{
		Id: s.ID, Kind: s.Kind, Tier: s.Tier, IntervalSeconds: s.IntervalSeconds, Documents: int64(s.Documents), Unmapped: int64(s.Unmapped),
		LastSuccessAt: timeText(s.LastSuccessAt), ConsecutiveFailures: int64(s.ConsecutiveFailures),
		NextRunAt: timeText(s.NextRunAt), Health: &ingestdv1.Health{Status: s.Health.Status, Reasons: s.Health.Reasons},
	}
	if s.LastRun != nil {
		m.LastRun = runToProto(*s.LastRun)
	}
	return m
}

func runToProto(r ingestd.SyncRun) *ingestdv1.SyncRun {
	return &ingestdv1.SyncRun{
		Installation: r.Installation, Trigger: r.Trigger, StartedAt: timeText(r.StartedAt), DurationNs: int64(r.Duration),
		Seen: int64(r.Seen), Added: int64(r.Added), Changed: int64(r.Changed), Unchanged: int64(r.Unchanged),
		Deleted: int64(r.Deleted), Failed: int64(r.Failed), Skipped: int64(r.Skipped), Queued: int64(r.Queued),
		Complete: r.Complete, Cursors: r.Cursors, Error: r.Error, FailedInRow: int64(r.FailedInRow),
	}
}

// timeText is t as the REST JSON writes it (RFC 3339, UTC), "" for none.
func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
