package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
)

// Defaults.
const (
	DefaultMaxBodyBytes       = 1 << 20
	DefaultMaxUnverified      = 64
	DefaultMaxUnverifiedBytes = 128 << 20
)

// RetryAfter is the Retry-After (seconds) of a 503: unverified intake is
// full, or the replay memory or the queue did not answer.
const RetryAfter = "5"

// Options configure the handler.
type Options struct {
	// Endpoints maps installation ids to their endpoints (the Intake each
	// webhook installation declares); Lookup, when set, is used instead
	// (for a configuration that can change).
	Endpoints map[string]Endpoint
	Lookup    func(installation string) (Endpoint, bool)
	// Enqueue durably queues one job under a message id the transport
	// deduplicates on (derived from what the signature covers, with
	// "/<index>" when a delivery yields several jobs). The handler answers
	// 202 only after every job's Enqueue returned nil; an error answers
	// 503 so the sender retries. Required. It must not wait for ingest.
	Enqueue func(ctx context.Context, job ingestd.Job, msgID string) error
	// Replays remembers accepted deliveries for each endpoint's
	// ReplayWindow; default NewMemoryReplays(), which protects one
	// process until it restarts. serve passes the JetStream bucket.
	Replays Replays
	Logger  *slog.Logger
	Now     func() time.Time
	// MaxBodyBytes caps a body (413 above it); default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// SpoolDir is where the part of an unverified body past its first 64
	// KiB waits for its signature check, in unlinked temporary files;
	// default os.TempDir(). serve uses <data_dir>/spool.
	SpoolDir string
	// MaxUnverified bounds the requests whose body is being received and
	// not yet verified (default DefaultMaxUnverified); MaxUnverifiedBytes
	// bounds their declared lengths together, a body without a length
	// counting as MaxBodyBytes (default DefaultMaxUnverifiedBytes, which
	// is also the most SpoolDir holds for them). A request past either is
	// answered 503 with Retry-After before its body is read.
	MaxUnverified      int
	MaxUnverifiedBytes int64
}

// Handler serves POST /v1/webhooks/{installation}.
type Handler struct {
	o    Options
	log  *slog.Logger
	gate gate
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
	if o.Replays == nil {
		o.Replays = NewMemoryReplays()
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
	if o.SpoolDir == "" {
		o.SpoolDir = os.TempDir()
	}
	if o.MaxUnverified <= 0 {
		o.MaxUnverified = DefaultMaxUnverified
	}
	if o.MaxUnverifiedBytes <= 0 {
		o.MaxUnverifiedBytes = DefaultMaxUnverifiedBytes
	}
	return &Handler{o: o, log: o.Logger, gate: gate{maxN: o.MaxUnverified, maxBytes: o.MaxUnverifiedBytes}}, nil
}

// ServeHTTP answers 405 for a method other than POST, 404 for an unknown
// installation, 415 for a body that is not JSON, 401 for a missing or
// malformed signature header or a stale Standard Webhooks timestamp
// (before reading the body), 413 for a body over the cap, 503 with
// Retry-After when unverified intake is full, 401 for a signature that
// does not match the body, 200 for a replay, ping or an event that changes
// nothing, 422 for a verified payload it cannot map, 503 when the replay
// memory or the queue failed, and 202 once every job is queued.
//
// The body is read only after the headers made a well-formed signature
// claim and the request fit the gate; it is MAC'd as it arrives and held
// in a spool (bounded memory) until the MAC is checked. Only a verified
// body is parsed, logged by reason or remembered.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		Refuse(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not a method of "+r.URL.Path+": use POST")
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
		Refuse(w, http.StatusNotFound, ingestd.ENOTFOUND, NoWebhooks(id))
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
		Refuse(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
		return
	}

	now := h.o.Now()
	var c claim
	var delivery string // for logs; signed only for Standard Webhooks
	var err error
	switch ep.Scheme {
	case connectors.SchemeStandardWebhooks:
		delivery = r.Header.Get("webhook-id")
		c, err = standardClaim(delivery, r.Header.Get("webhook-timestamp"), r.Header.Get("webhook-signature"), now, ep.Tolerance)
	default:
		delivery = r.Header.Get("X-GitHub-Delivery")
		c, err = githubClaim(r.Header.Get("X-Hub-Signature-256"))
	}
	if err != nil {
		// Refused before a byte of the body is read.
		h.reject(r, id, delivery, err)
		Refuse(w, http.StatusUnauthorized, ingestd.EUNAUTHORIZED, "signature verification failed")
		return
	}
	if r.ContentLength > h.o.MaxBodyBytes {
		Refuse(w, http.StatusRequestEntityTooLarge, ingestd.ETOOLARGE, fmt.Sprintf("body is larger than %d bytes", h.o.MaxBodyBytes))
		return
	}

	body, err := h.receive(w, r, ep, c)
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.Is(err, ErrBadSignature):
			h.reject(r, id, delivery, err)
			Refuse(w, http.StatusUnauthorized, ingestd.EUNAUTHORIZED, "signature verification failed")
		case errors.Is(err, errIntakeFull):
			h.log.Warn("webhook: unverified intake full", "installation", id, "remote", r.RemoteAddr)
			w.Header().Set("Retry-After", RetryAfter)
			Refuse(w, http.StatusServiceUnavailable, ingestd.EUNAVAILABLE, "too many unverified deliveries in flight; retry")
		case errors.As(err, &mbe):
			Refuse(w, http.StatusRequestEntityTooLarge, ingestd.ETOOLARGE, fmt.Sprintf("body is larger than %d bytes", h.o.MaxBodyBytes))
		case errors.Is(err, errSpool):
			h.log.Error("webhook: cannot hold the body", "installation", id, "err", err)
			w.Header().Set("Retry-After", RetryAfter)
			Refuse(w, http.StatusServiceUnavailable, ingestd.EUNAVAILABLE, "could not receive the delivery; retry")
		default:
			Refuse(w, http.StatusBadRequest, ingestd.EINVALID, "the body could not be read")
		}
		return
	}
	h.accept(w, r, id, ep, c, delivery, body)
}

// errIntakeFull: the gate is full.
var errIntakeFull = errors.New("unverified intake full")

// receive streams the body through the claim's MACs into a spool, under
// the gate and the size cap, and returns it once verified. Errors:
// errIntakeFull, *http.MaxBytesError, errSpool, ErrBadSignature, or the
// connection's read error.
func (h *Handler) receive(w http.ResponseWriter, r *http.Request, ep Endpoint, c claim) ([]byte, error) {
	size := r.ContentLength
	if size < 0 {
		size = h.o.MaxBodyBytes
	}
	if !h.gate.acquire(size) {
		return nil, errIntakeFull
	}
	defer h.gate.release(size)
	sp := &spool{dir: h.o.SpoolDir}
	defer sp.Close()
	m := c.macs(ep.Secrets)
	buf := copyBufs.Get().(*[]byte)
	_, err := io.CopyBuffer(io.MultiWriter(m, sp), http.MaxBytesReader(w, r.Body, h.o.MaxBodyBytes), *buf)
	copyBufs.Put(buf)
	if err != nil {
		return nil, err
	}
	if err := m.verify(c); err != nil {
		return nil, err
	}
	return sp.Bytes()
}

// reject logs a refused delivery by reason only: never the payload, never
// a signature.
func (h *Handler) reject(r *http.Request, id, delivery string, err error) {
	h.log.Warn("webhook: rejected delivery", "installation", id, "delivery", truncate(delivery, 64), "reason", err.Error(), "remote", r.RemoteAddr)
}

// accept handles a verified body: drops a replay, maps, queues, remembers.
func (h *Handler) accept(w http.ResponseWriter, r *http.Request, id string, ep Endpoint, c claim, delivery string, body []byte) {
	now := h.o.Now()
	// The replay key is what the signature covers: for
	// X-Hub-Signature-256 the body alone (X-GitHub-Delivery and
	// X-GitHub-Event are not signed, so they are no part of it), for
	// Standard Webhooks the signed msg id, kept at least until its
	// timestamp leaves the tolerance window.
	kind, signed, ttl := "gh", body, ep.ReplayWindow
	if ep.Scheme == connectors.SchemeStandardWebhooks {
		kind, signed = "std", []byte(delivery)
		ttl = max(ttl, c.sentAt.Add(ep.Tolerance).Sub(now)+time.Second)
	}
	sum := sha256.Sum256(signed)
	digest := hex.EncodeToString(sum[:])
	key := id + "." + kind + "." + digest
	seen, err := h.o.Replays.Seen(r.Context(), key, now)
	if err != nil {
		h.log.Error("webhook: replay memory unavailable", "installation", id, "err", err)
		w.Header().Set("Retry-After", RetryAfter)
		Refuse(w, http.StatusServiceUnavailable, ingestd.EUNAVAILABLE, "could not check the delivery against replays; retry")
		return
	}
	if seen {
		h.log.Info("webhook: replayed delivery ignored", "installation", id, "delivery", truncate(delivery, 64))
		reply(w, http.StatusOK, "status", "duplicate")
		return
	}
	remember := func() {
		// Even if the sender hung up: what was queued must be known.
		if err := h.o.Replays.Remember(context.WithoutCancel(r.Context()), key, now, ttl); err != nil {
			// The jobs are queued; a replay would meet the event-time rule.
			h.log.Warn("webhook: cannot remember delivery", "installation", id, "err", err)
		}
	}

	event := r.Header.Get("X-GitHub-Event") // for logs: not signed
	jobs, err := ep.Mapper.Map(connectors.Delivery{Header: r.Header, Body: body, SentAt: c.sentAt})
	if err == nil {
		err = ownJobs(id, jobs)
	}
	if err != nil {
		h.log.Warn("webhook: unprocessable delivery", "installation", id, "delivery", truncate(delivery, 64), "event", truncate(event, 64), "err", err)
		remember() // the same body will not map better next time
		msg := err.Error()
		if ingestd.ErrorCode(err) != ingestd.EINTERNAL {
			msg = ingestd.ErrorMessage(err)
		}
		Refuse(w, http.StatusUnprocessableEntity, ingestd.EINVALID, msg)
		return
	}
	// The message id names the signed content too, so two processes
	// racing on one delivery queue it once (the stream's dedupe window).
	msgID := id + ":" + kind + ":" + digest[:32]
	for i, job := range jobs {
		mid := msgID
		if len(jobs) > 1 {
			mid += "/" + strconv.Itoa(i)
		}
		if err := h.o.Enqueue(r.Context(), job, mid); err != nil {
			h.log.Error("webhook: enqueue failed", "installation", id, "delivery", truncate(delivery, 64), "err", err)
			w.Header().Set("Retry-After", RetryAfter)
			Refuse(w, http.StatusServiceUnavailable, ingestd.EUNAVAILABLE, "could not queue the delivery; retry")
			return
		}
	}
	remember()
	if len(jobs) == 0 {
		h.log.Info("webhook: delivery changes nothing", "installation", id, "delivery", truncate(delivery, 64), "event", truncate(event, 64))
		reply(w, http.StatusOK, "status", "ignored")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(map[string]any{"status": "queued", "jobs": len(jobs)})
}

// ownJobs refuses a mapping whose item or delete job is for another
// installation than the one the delivery was signed for: the document
// would take that installation's tier. A sync job may name any.
func ownJobs(installation string, jobs []ingestd.Job) error {
	for i, j := range jobs {
		if j.Kind != ingestd.JobSync && j.Installation != installation {
			return fmt.Errorf("job %d is for installation %q, not %q", i, j.Installation, installation)
		}
	}
	return nil
}

func reply(w http.ResponseWriter, code int, key, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{key: msg})
}

// Refuse answers a refusal in the API's one error shape, {"error":
// {"code", "message"}}, with the API's codes (ingestd's, and the
// HTTP-only ones the API's guard uses).
func Refuse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]map[string]string{"error": {"code": code, "message": msg}})
}

// NoWebhooks is the message for a delivery to an installation that takes
// none: not configured, or configured without webhook settings. It never
// says which, so an unauthenticated sender learns no installation's name.
func NoWebhooks(installation string) string {
	return fmt.Sprintf("installation %q takes no webhooks: only an installation with webhook settings does", installation)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
