package api

import (
	"net/http"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
)

// mountBlocks adds GET /v1/blocks, admin scope, when bl is set: the
// turns the verdicts blocked and the documents that caused most blocks.
// A token limited to some installations gets the documents of those
// only (the turn counts are the whole server's, as /metrics has them).
func (s *server) mountBlocks(mux *http.ServeMux, bl ingestd.BlockLog) {
	if bl == nil {
		return
	}
	mux.Handle("GET /v1/blocks", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := access.Require(r.Context(), ScopeAdmin)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		rep, err := bl.BlockReport(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		seen := []ingestd.BlockedDocument{}
		for _, d := range rep.Documents {
			if p.Sees(d.Installation) && len(seen) < ingestd.MaxBlockedDocuments {
				seen = append(seen, d)
			}
		}
		rep.Documents = seen
		writeJSON(w, http.StatusOK, rep)
	}), ScopeAdmin, false))
}

// mountGatewayDecisions adds GET /v1/gateway/decisions, admin scope, when
// gl is set: the gateway's last refused, asked, confirmed and declined
// calls, newest first. They name documents of every installation, so a
// token limited to some is refused (access.RequireAll).
func (s *server) mountGatewayDecisions(mux *http.ServeMux, gl ingestd.GatewayLog) {
	if gl == nil {
		return
	}
	mux.Handle("GET /v1/gateway/decisions", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := access.RequireAll(r.Context(), ScopeAdmin); err != nil {
			s.fail(w, r, err)
			return
		}
		limit, err := queryLimit(r, "decisions", 500)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if limit == 0 {
			limit = 100
		}
		ds, err := gl.GatewayDecisions(r.Context(), limit)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if ds == nil {
			ds = []ingestd.GatewayDecision{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"decisions": ds})
	}), ScopeAdmin, false))
}
