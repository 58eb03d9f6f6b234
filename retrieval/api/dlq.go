package api

import (
	"context"
	"net/http"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/jobs"
	"github.com/ingestd/ingestd/retrieval/access"
)

// DeadLetters lists and re-queues the jobs that dead-lettered (see
// jobs.Queue). It serves GET /v1/dlq, POST /v1/dlq/{id}/replay and POST
// /v1/dlq/replay, so that `ingestd dlq` reaches the NATS embedded in serve,
// which has no listener of its own.
type DeadLetters interface {
	// ListDLQ returns the dead letters, oldest first.
	ListDLQ(ctx context.Context) ([]jobs.DeadJob, error)
	// Replay queues one again. Returns ENOTFOUND for an id that is not a
	// dead letter and EINVALID for one that cannot be replayed.
	Replay(ctx context.Context, id string) error
	// ReplayAll replays every dead letter and returns how many it queued;
	// one it cannot replay is left in place and named in an EINVALID error.
	ReplayAll(ctx context.Context) (int, error)
}

var (
	_ DeadLetters = (*jobs.Queue)(nil)
	_ DeadLetters = wholeCorpus{}
)

// wholeCorpus holds the dead letters to callers that may see every
// installation (access.RequireAll): the queue holds every installation's
// jobs.
type wholeCorpus struct{ next DeadLetters }

func (w wholeCorpus) ListDLQ(ctx context.Context) ([]jobs.DeadJob, error) {
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
func (s *server) mountDLQ(mux *http.ServeMux, dl DeadLetters) {
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
			dead = []jobs.DeadJob{}
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
