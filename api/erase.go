package api

import (
	"context"
	"net/http"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
)

// Erasures runs erasures (package erasure, wired by cmd with the store and
// the job streams). It serves POST /v1/erasures, GET /v1/erasures and POST
// /v1/erasures/lift, admin scope, so that `ingestd erase` reaches the NATS
// embedded in serve, whose streams an erasure scrubs too.
type Erasures interface {
	// Erase erases what req names (or, with DryRun, lists it). Returns
	// EINVALID for a request that names nothing or mixes ids with another
	// selector, ENOTFOUND for a document id the store does not hold.
	Erase(ctx context.Context, req ingestd.ErasureRequest) (ingestd.ErasureReport, error)
	// Tombstones lists the erasure tombstones, oldest first.
	Tombstones(ctx context.Context) ([]ingestd.Tombstone, error)
	// Lift removes the tombstones req names and returns how many there
	// were. Returns EINVALID for a request that names none.
	Lift(ctx context.Context, req ingestd.LiftRequest) (int, error)
}

// everyInstallation holds Erasures to a token that may act on every
// installation (access.RequireAll): an erasure by author spans
// installations, a tombstone names none, and a lift brings back what
// another installation's operator erased.
type everyInstallation struct{ next Erasures }

func (e everyInstallation) Erase(ctx context.Context, req ingestd.ErasureRequest) (ingestd.ErasureReport, error) {
	if _, err := access.RequireAll(ctx, ScopeAdmin); err != nil {
		return ingestd.ErasureReport{}, err
	}
	return e.next.Erase(ctx, req)
}

func (e everyInstallation) Tombstones(ctx context.Context) ([]ingestd.Tombstone, error) {
	if _, err := access.RequireAll(ctx, ScopeAdmin); err != nil {
		return nil, err
	}
	return e.next.Tombstones(ctx)
}

func (e everyInstallation) Lift(ctx context.Context, req ingestd.LiftRequest) (int, error) {
	if _, err := access.RequireAll(ctx, ScopeAdmin); err != nil {
		return 0, err
	}
	return e.next.Lift(ctx, req)
}

// mountErasures adds the erasure routes, admin scope, when er is set; a
// token limited to some installations is refused them.
func (s *server) mountErasures(mux *http.ServeMux, er Erasures) {
	if er == nil {
		return
	}
	er = everyInstallation{next: er}
	mux.Handle("POST /v1/erasures", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req ingestd.ErasureRequest
		if err := decodeJSON(r.Body, &req); err != nil {
			s.fail(w, r, err)
			return
		}
		rep, err := er.Erase(r.Context(), req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, rep)
	}), ScopeAdmin, false))
	mux.Handle("GET /v1/erasures", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts, err := er.Tombstones(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if ts == nil {
			ts = []ingestd.Tombstone{}
		}
		writeJSON(w, http.StatusOK, ts)
	}), ScopeAdmin, false))
	mux.Handle("POST /v1/erasures/lift", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req ingestd.LiftRequest
		if err := decodeJSON(r.Body, &req); err != nil {
			s.fail(w, r, err)
			return
		}
		n, err := er.Lift(r.Context(), req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]int{"lifted": n})
	}), ScopeAdmin, false))
}
