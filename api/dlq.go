package api

import (
	"context"
	"net/http"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
)

var _ ingestd.DeadLetters = wholeCorpus{}

// wholeCorpus holds the dead letters to callers that may see every
// installation (access.RequireAll): the queue holds every installation's
// jobs.
type wholeCorpus struct{ next ingestd.DeadLetters }

func (w wholeCorpus) ListDLQ(ctx context.Context) ([]ingestd.DeadLetter, error) {
	if _, err := access.RequireAll(ctx, ScopeAdmin); err != nil {
		return nil, err
	}
	return w.next.ListDLQ(ctx)
}

func (w wholeCorpus) Replay(ctx context.Context, id string) error {
	if _, err := access.RequireAll(ctx, ScopeAdmin); err != nil {
		return err
	}
	return w.next.Replay(ctx, id)
}

func (w wholeCorpus) ReplayAll(ctx context.Context) (int, error) {
	if _, err := access.RequireAll(ctx, ScopeAdmin); err != nil {
		return 0, err
	}
	return w.next.ReplayAll(ctx)
}

// mountDLQ adds the dead-letter routes, admin scope, when dl is set.
func (s *server) mountDLQ(mux *http.ServeMux, dl ingestd.DeadLetters) {
	if dl == nil {
		return
	}
	dl = wholeCorpus{dl}
	mux.Handle("GET /v1/dlq", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dead, err := dl.ListDLQ(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if dead == nil {
			dead = []ingestd.DeadLetter{}
		}
		writeJSON(w, http.StatusOK, dead)
	}), ScopeAdmin, false))
	mux.Handle("POST /v1/dlq/{id}/replay", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := dl.Replay(r.Context(), id); err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "status": "queued"})
	}), ScopeAdmin, false))
	mux.Handle("POST /v1/dlq/replay", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := dl.ReplayAll(r.Context())
		if err != nil {
			if n > 0 && ingestd.ErrorCode(err) == ingestd.EINVALID {
				err = ingestd.Errorf(ingestd.EINVALID, "%d queued again; %s", n, ingestd.ErrorMessage(err))
			}
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"replayed": n})
	}), ScopeAdmin, false))
}
