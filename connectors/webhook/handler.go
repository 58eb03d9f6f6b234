package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ingestd/ingestd"
)

// Defaults.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultReplayWindow = 24 * time.Hour
)

// Options configure the handler.
type Options struct {
	// Endpoints maps installation ids to their endpoints; Lookup, when
	// set, is used instead (for a configuration that can change).
	Endpoints map[string]Endpoint
	Lookup    func(installation string) (Endpoint, bool)
	// Enqueue durably queues one job under a message id the transport
	// deduplicates on (the delivery id, with "/<index>" when a delivery
	// yields several jobs). The handler answers 202 only after every job's
	// Enqueue returned nil; an error answers 503 so the sender retries.
	// Required. It must not wait for ingest.
	Enqueue func(ctx context.Context, job ingestd.Job, msgID string) error
	Logger  *slog.Logger
	Now     func() time.Time
	// MaxBodyBytes caps a body (413 above it); default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ReplayWindow is how long a delivery id is remembered (a replay in
	// it is acknowledged and ignored); default DefaultReplayWindow. The
	// memory is per process: the transport's msg-id dedupe covers the rest.
	ReplayWindow time.Duration
}

// Handler serves POST /v1/webhooks/{installation}.
type Handler struct {
	o    Options
	log  *slog.Logger
	seen *seenSet
}

var _ http.Handler = (*Handler)(nil)

// New returns the webhook handler. Errors are EINVALID.
func New(o Options) (*Handler, error) {
	if o.Enqueue == nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "webhook: Options.Enqueue is required")
	}
	if o.Lookup == nil {
		eps := o.Endpoints
		o.Lookup = func(id string) (Endpoint, bool) { ep, ok := eps[id]; return ep, ok }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.ReplayWindow <= 0 {
		o.ReplayWindow = DefaultReplayWindow
	}
	return &Handler{o: o, log: o.Logger, seen: &seenSet{m: map[string]seenEntry{}, window: o.ReplayWindow}}, nil
}

// ServeHTTP answers 405 for a method other than POST, 404 for an unknown
// installation, 415 for a body that is not JSON, 413 for one over the
// cap, 401 for a missing or bad signature (or a stale Standard Webhooks
// timestamp), 200 for a replay, ping or an event that changes nothing,
// 422 for a verified payload it cannot map, 503 when queueing failed, and
// 202 once every job is queued.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		reply(w, http.StatusMethodNotAllowed, "error", "method not allowed")
		return
	}
	id := r.PathValue("installation")
	if id == "" {
		id = r.URL.Path
		if rest, ok := strings.CutPrefix(id, "/v1/webhooks/"); ok {
			id = rest
		} else {
			id = id[strings.LastIndexByte(id, '/')+1:]
		}
	}
	ep, ok := h.o.Lookup(id)
	if !ok || id == "" || strings.Contains(id, "/") {
		reply(w, http.StatusNotFound, "error", "unknown webhook installation")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		reply(w, http.StatusUnsupportedMediaType, "error", "content type must be application/json")
		return
	}
	if r.ContentLength > h.o.MaxBodyBytes {
		reply(w, http.StatusRequestEntityTooLarge, "error", "body too large")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			reply(w, http.StatusRequestEntityTooLarge, "error", "body too large")
			return
		}
		reply(w, http.StatusBadRequest, "error", "cannot read body")
		return
	}

	var delivery string
	switch ep.Flavor {
	case FlavorStandard:
		delivery = r.Header.Get("webhook-id")
		err = VerifyStandard(ep.Secrets, delivery, r.Header.Get("webhook-timestamp"), body, r.Header.Get("webhook-signature"), h.o.Now(), ep.Tolerance)
	default:
		delivery = r.Header.Get("X-GitHub-Delivery")
		err = VerifyGitHub(ep.Secrets, body, r.Header.Get("X-Hub-Signature-256"))
	}
	if err != nil {
		// The reason only: never the payload, never a signature.
		h.log.Warn("webhook: rejected delivery", "installation", id, "delivery", truncate(delivery, 64), "reason", err.Error(), "remote", r.RemoteAddr)
		reply(w, http.StatusUnauthorized, "error", "signature verification failed")
		return
	}
	if delivery == "" {
		reply(w, http.StatusBadRequest, "error", "missing delivery id")
		return
	}

	key := id + "\x00" + delivery
	switch h.seen.begin(key, h.o.Now()) {
	case seenDone:
		h.log.Info("webhook: replayed delivery ignored", "installation", id, "delivery", delivery)
		reply(w, http.StatusOK, "status", "duplicate")
		return
	case seenInFlight:
		reply(w, http.StatusConflict, "error", "delivery is being processed")
		return
	}
	done := false
	defer func() {
		if done {
			h.seen.finish(key, h.o.Now())
		} else {
			h.seen.abort(key)
		}
	}()

	var jobs []ingestd.Job
	outcome := outcomeQueued
	event := r.Header.Get("X-GitHub-Event")
	if ep.Flavor == FlavorStandard {
		var job ingestd.Job
		job, err = StandardJob(ep, body)
		jobs = []ingestd.Job{job}
	} else {
		jobs, outcome, err = GitHubJobs(ep, event, body)
	}
	if err != nil {
		h.log.Warn("webhook: unprocessable delivery", "installation", id, "delivery", delivery, "event", event, "err", err)
		done = true // the same body will not map better next time
		reply(w, http.StatusUnprocessableEntity, "error", err.Error())
		return
	}
	if event == "installation" {
		h.log.Info("webhook: github app installation event", "installation", id, "delivery", delivery)
	}
	for i, job := range jobs {
		msgID := delivery
		if len(jobs) > 1 {
			msgID += "/" + strconv.Itoa(i)
		}
		if err := h.o.Enqueue(r.Context(), job, msgID); err != nil {
			h.log.Error("webhook: enqueue failed", "installation", id, "delivery", delivery, "err", err)
			reply(w, http.StatusServiceUnavailable, "error", "could not queue the delivery; retry")
			return
		}
	}
	done = true
	if len(jobs) == 0 {
		reply(w, http.StatusOK, "status", outcome)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(map[string]any{"status": outcomeQueued, "jobs": len(jobs)})
}

func reply(w http.ResponseWriter, code int, key, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{key: msg})
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// seenSet remembers delivery ids for the replay window. Only deliveries
// whose signature verified are remembered, so its size is bounded by
// legitimate traffic; expired ids are swept as time passes.
type seenSet struct {
	mu        sync.Mutex
	m         map[string]seenEntry
	window    time.Duration
	nextSweep time.Time
}

type seenEntry struct {
	at       time.Time
	inFlight bool
}

const (
	seenNew = iota
	seenInFlight
	seenDone
)

// begin reserves key; it reports seenDone for a replay within the window
// and seenInFlight while another request holds it.
func (s *seenSet) begin(key string, now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.After(s.nextSweep) {
		for k, e := range s.m {
			if !e.inFlight && now.Sub(e.at) > s.window {
				delete(s.m, k)
			}
		}
		s.nextSweep = now.Add(time.Minute)
	}
	if e, ok := s.m[key]; ok {
		switch {
		case e.inFlight:
			return seenInFlight
		case now.Sub(e.at) <= s.window:
			return seenDone
		}
	}
	s.m[key] = seenEntry{at: now, inFlight: true}
	return seenNew
}

func (s *seenSet) finish(key string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = seenEntry{at: now}
}

func (s *seenSet) abort(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}
