// Package api serves retrieval on one port: the connect-go
// ingestd.v1.RetrievalService (gRPC, gRPC-Web and Connect from one
// handler), gRPC reflection and health, the REST routes of the public
// HTTP surface, Prometheus metrics and health probes.
//
// It translates; it never decides. The verdict comes from the
// ingestd.Retriever it serves (package retrieval) unchanged, on every
// protocol. Every request, on every route, passes one guard (guard.go)
// that refuses a foreign Host (DNS rebinding), cross-origin browser
// requests and the Content-Types a browser sends without asking. Bearer tokens are compared in constant
// time and never echoed; every request body is size-limited.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/propagation"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
	"github.com/ingestd/ingestd/console"
	"github.com/ingestd/ingestd/gen/ingestd/v1/ingestdv1connect"
	"github.com/ingestd/ingestd/mcpserver"
)

// Scopes a token can hold (package access defines them).
const (
	ScopeRetrieve = access.ScopeRetrieve // retrieve, provenance, MCP, gRPC reflection
	ScopeMetrics  = access.ScopeMetrics  // /metrics, with a token that sees every installation (a Prometheus scrape)
	ScopeAdmin    = access.ScopeAdmin    // reject, delete, sync, add URLs, dead letters, erasures, sync history (its errors name hosts, accounts, paths)
)

// MaxBodyBytes bounds every request body except webhooks'.
const MaxBodyBytes = 1 << 20

// MaxWebhookBodyBytes bounds a webhook body (GitHub sends up to 25 MiB).
const MaxWebhookBodyBytes = 25 << 20

// Token is one configured bearer token with its scopes.
type Token struct {
	Name   string
	Token  string
	Scopes []string
	// Installations, when not nil, limits the token to the documents of
	// these installations on every route (see package access).
	Installations []string
	// User binds the token to one person; ActForUsers makes every
	// request name the person it is for; neither is a service token,
	// the operator's view (see package access). Groups resolves a
	// person's groups.
	User        ingestd.Principal
	ActForUsers bool
	Groups      ingestd.Groups
	// AssertionKey, when set, makes every request carry a principal
	// assertion signed with it (ingestd.SignAssertion, in the
	// ingestd.AssertionHeader): the request reads as the person it names,
	// as if the token were bound to them, and is refused (401) without a
	// valid one. Not with User or ActForUsers.
	AssertionKey []byte
}

// Options configures the handler. Retriever is required.
type Options struct {
	// Retriever answers retrieve and provenance on every protocol: the
	// retrieval service, wrapped in its metrics (retrieval/metrics).
	Retriever ingestd.Retriever
	// Documents serves the admin routes (reject, delete); nil answers
	// them with EUNAVAILABLE.
	Documents ingestd.DocumentStore
	// Tokens, when any are configured, are required on every route but
	// /healthz, /readyz, gRPC health and webhooks; /metrics needs one
	// with the metrics scope.
	Tokens []Token
	// Hosts lists the Host names served besides the loopback ones
	// (listen_hosts). Without Tokens, or when Hosts is not empty, a
	// request to any other Host is refused with 421 on every route,
	// probes and webhooks included (see guard). Each entry must pass
	// NormalizeHost; New panics on one that does not (cmd checks them
	// when it loads the configuration).
	Hosts  []string
	Logger *slog.Logger
	// Gatherer serves /metrics; nil leaves /metrics unmounted.
	Gatherer prometheus.Gatherer
	// Ready reports readiness for /readyz and gRPC health (cmd asks the
	// store and the job queue); nil means always ready. /readyz shows the
	// message of an error coded EUNAVAILABLE ("waiting for the job
	// stream"), so it must say what the process waits for and never carry
	// internals; any other error reads "not ready".
	Ready func(ctx context.Context) error
	// Sync queues a sync of the installation; nil answers 501. It returns
	// ENOTFOUND for an installation that is not configured.
	Sync func(ctx context.Context, installation string) error
	// AddURL fetches one URL into a url installation in the foreground,
	// held to that installation's SSRF guard, and returns the ids of the
	// documents it stored; nil answers 501. Returns ENOTFOUND for an
	// installation that is not configured and EINVALID for one that does
	// not take URLs or a URL the guard refuses (naming the rule).
	AddURL func(ctx context.Context, installation, rawURL string) ([]string, error)
	// Webhooks is mounted at /v1/webhooks/ when set. It authenticates by
	// signature itself: no bearer token is asked there.
	Webhooks http.Handler
	// DeadLetters, when set, serves the dead-letter routes (admin scope).
	DeadLetters ingestd.DeadLetters
	// Installations serves the installations' sync history and health
	// (admin scope); nil answers those routes with EUNAVAILABLE.
	Installations Installations
	// DocumentReader serves MCP's ingestd://documents/{id} resource
	// (retrieval.Service); nil leaves that resource out.
	DocumentReader access.DocumentReader
	// DocumentLister serves GET /v1/installations/{id}/documents
	// (retrieval.Service); nil answers it with EUNAVAILABLE. The reader
	// above serves GET /v1/documents/{id}.
	DocumentLister access.DocumentLister
	// Version is the server version MCP clients are told.
	Version string
	// Erasures, when set, serves the erasure routes (admin scope; see
	// erase.go).
	Erasures Erasures
	// MCPExtension, when set, is installed on the MCP server at /mcp (the
	// gateway), which then keeps sessions (mcpserver.Handler). Its tools
	// take the retrieve scope, as /mcp does.
	MCPExtension MCPExtension
	// Blocks, when set, serves GET /v1/blocks (admin scope): the turns
	// the verdicts blocked and the documents that caused most blocks
	// (retrieval/metrics keeps them).
	Blocks ingestd.BlockLog
	// GatewayDecisions, when set, serves GET /v1/gateway/decisions (admin
	// scope, every installation): the gateway's held calls.
	GatewayDecisions ingestd.GatewayLog
}

// MCPExtension adds tools to /mcp: mcpserver.Extension.
type MCPExtension = mcpserver.Extension

type server struct {
	svc     ingestd.Retriever
	docs    access.DocumentActions
	log     *slog.Logger
	ready   func(context.Context) error
	sync    func(context.Context, string) error
	addURL  func(context.Context, string, string) ([]string, error)
	auth    *authenticator
	errConn *connect.ErrorWriter
}

// New returns the handler serving every route behind the guard. It panics
// when Retriever is nil or a Host is invalid: those are wiring errors.
func New(o Options) http.Handler {
	if o.Retriever == nil {
		panic("api: Retriever is required")
	}
	// The one scope check: every route that serves retrieval, on every
	// protocol, MCP included, serves through these.
	scoped := access.NewRetriever(o.Retriever)
	s := newServer(o, scoped)
	copts := []connect.HandlerOption{
		connect.WithCodec(jsonCodec{}),
		connect.WithReadMaxBytes(MaxBodyBytes),
		connect.WithInterceptors(s.errorInterceptor()),
	}
	s.errConn = connect.NewErrorWriter(copts...)

	mux := http.NewServeMux()
	g := &guard{next: mux, checkHost: len(o.Tokens) == 0 || len(o.Hosts) > 0, tokens: len(o.Tokens) > 0,
		hosts: map[string]bool{}, cop: http.NewCrossOriginProtection(), rpc: map[string]bool{}, errConn: s.errConn}
	for i, h := range o.Hosts {
		n, err := NormalizeHost(h)
		if err != nil {
			panic(fmt.Sprintf("api: Hosts[%d]: %v", i, err))
		}
		g.hosts[n] = true
	}
	s.mountRPC(mux, g, o, copts)

	mcpOpts := mcpserver.Options{Retriever: scoped, Version: o.Version, Logger: s.log, Extension: o.MCPExtension}
	if o.DocumentReader != nil {
		mcpOpts.Documents = access.NewDocuments(o.DocumentReader)
	}
	g.mcp = "/mcp"
	mux.Handle(g.mcp, s.protect(mcpserver.Handler(mcpOpts, &mcpserver.HandlerOptions{MaxBodyBytes: MaxBodyBytes, Logger: s.log}), ScopeRetrieve, false))
	mux.Handle("POST /v1/retrieve", s.protect(http.HandlerFunc(s.handleRetrieve), ScopeRetrieve, false))
	mux.Handle("GET /v1/provenance", s.protect(http.HandlerFunc(s.handleProvenance), ScopeRetrieve, false))
	mux.Handle("POST /v1/documents/{id}/reject", s.protect(http.HandlerFunc(s.handleReject), ScopeAdmin, false))
	mux.Handle("DELETE /v1/documents/{id}", s.protect(http.HandlerFunc(s.handleDelete), ScopeAdmin, false))
	mux.Handle("POST /v1/installations/{id}/sync", s.protect(http.HandlerFunc(s.handleSync), ScopeAdmin, false))
	mux.Handle("POST /v1/installations/{id}/urls", s.protect(http.HandlerFunc(s.handleAddURL), ScopeAdmin, false))
	s.mountDocuments(mux, o.DocumentReader, o.DocumentLister)
	s.mountDLQ(mux, o.DeadLetters)
	s.mountBlocks(mux, o.Blocks)
	s.mountGatewayDecisions(mux, o.GatewayDecisions)
	s.mountInstallations(mux, scopeInstallations(o.Installations))
	s.mountErasures(mux, o.Erasures)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", s.handleReady)
	mux.Handle("GET "+console.Prefix, console.Handler()) // static files, no token: the page asks for one
	if o.Gatherer != nil {
		// The metrics name every installation and its sync health, so a
		// scrape needs the metrics scope and a principal that sees them
		// all; a token-less loopback server's operator holds both.
		scrape := promhttp.HandlerFor(o.Gatherer, promhttp.HandlerOpts{})
		mux.Handle("GET /metrics", s.protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := access.RequireAll(r.Context(), ScopeMetrics); err != nil {
				writeError(w, err)
				return
			}
			scrape.ServeHTTP(w, r)
		}), ScopeMetrics, false))
	}
	g.webhook = "/v1/webhooks/"
	if o.Webhooks != nil {
		mux.Handle(g.webhook, http.MaxBytesHandler(o.Webhooks, MaxWebhookBodyBytes))
	} else {
		mux.HandleFunc(g.webhook, noWebhooks)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowedMethods(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: errorDetail{Code: "method_not_allowed",
				Message: fmt.Sprintf("%s is not a method of %s: use %s", r.Method, r.URL.Path, strings.Join(allow, " or "))}})
			return
		}
		writeError(w, ingestd.Errorf(ingestd.ENOTFOUND, "no route for %s %s", r.Method, r.URL.Path))
	})
	return g
}

// newServer is the server of o's admin actions, each through the scope
// check, over scoped, with a discarding logger and an always-ready probe
// for those o leaves nil.
func newServer(o Options, scoped ingestd.Retriever) *server {
	s := &server{svc: scoped, log: o.Logger, ready: o.Ready, auth: newAuthenticator(o.Tokens)}
	if o.Documents != nil {
		s.docs = access.NewAdmin(o.Documents)
	}
	if o.Sync != nil {
		s.sync = func(ctx context.Context, id string) error {
			if _, err := access.RequireInstallation(ctx, ScopeAdmin, id); err != nil {
				return err
			}
			return o.Sync(ctx, id)
		}
	}
	if o.AddURL != nil {
		s.addURL = func(ctx context.Context, id, rawURL string) ([]string, error) {
			if _, err := access.RequireInstallation(ctx, ScopeAdmin, id); err != nil {
				return nil, err
			}
			return o.AddURL(ctx, id, rawURL)
		}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.ready == nil {
		s.ready = func(context.Context) error { return nil }
	}
	return s
}

// mountRPC mounts the Connect/gRPC services (retrieval, installations,
// reflection, health) on mux, each through the token and scope check and
// known to g as an RPC path.
func (s *server) mountRPC(mux *http.ServeMux, g *guard, o Options, copts []connect.HandlerOption) {
	mount := func(path string, h http.Handler, scope string) {
		g.rpc[path] = true
		mux.Handle(path, s.protect(h, scope, true))
	}
	p, h := ingestdv1connect.NewRetrievalServiceHandler(&connectService{svc: s.svc}, copts...)
	mount(p, h, ScopeRetrieve)
	p, h = ingestdv1connect.NewInstallationServiceHandler(&installationService{insts: scopeInstallations(o.Installations)}, copts...)
	mount(p, h, ScopeAdmin)
	reflector := grpcreflect.NewStaticReflector(ingestdv1connect.RetrievalServiceName, ingestdv1connect.InstallationServiceName, grpchealth.HealthV1ServiceName)
	p, h = grpcreflect.NewHandlerV1(reflector)
	mount(p, h, ScopeRetrieve)
	p, h = grpcreflect.NewHandlerV1Alpha(reflector)
	mount(p, h, ScopeRetrieve)
	p, h = grpchealth.NewHandler(&checker{ready: s.ready})
	mount(p, h, "") // probes carry no token
}

// routeMethods are the methods the REST routes use, in the order an Allow
// header lists them.
var routeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowedMethods lists the methods that have a route for r's path, when
// r's own method has none: the Allow header of a 405. It is empty for a
// path no route serves (404) and for a request that has its route. The
// catch-all pattern "/" is no route: it answers 404 and 405 themselves.
func allowedMethods(mux *http.ServeMux, r *http.Request) []string {
	var allow []string
	for _, m := range routeMethods {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" && pattern != "/" {
			if m == r.Method {
				return nil
			}
			allow = append(allow, m)
		}
	}
	return allow
}

// protect limits the body and, when scope is not empty, authenticates
// the caller, puts its access.Principal in the request's context and
// asks access whether it holds scope; what it may see is decided by
// access again where retrieval is served. Connect routes get their errors
// in the protocol the client speaks.
func (s *server) protect(h http.Handler, scope string, isConnect bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		r = r.WithContext(propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))) // W3C traceparent: retrieval's span is its child
		if scope != "" {
			p, err := s.auth.principal(r)
			if err == nil {
				r = r.WithContext(access.NewContext(r.Context(), p))
				_, err = access.Require(r.Context(), scope)
			}
			if err != nil {
				if isConnect {
					_ = s.errConn.Write(w, r, connectError(err))
					return
				}
				writeError(w, err)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// requestBody is the REST body of POST /v1/retrieve.
type requestBody struct {
	Query            string   `json:"query"`
	TopK             int      `json:"top_k"`
	Installations    []string `json:"installations"`
	Tiers            []string `json:"tiers"`
	SourceKinds      []string `json:"source_kinds"`
	Expand           *bool    `json:"expand"`
	IncludeRejected  *bool    `json:"include_rejected"`
	ExcludeUntrusted bool     `json:"exclude_untrusted"`
	RequestID        string   `json:"request_id"`
	Grounding        string   `json:"grounding"`
	TrustedView      bool     `json:"trusted_view"`
	Principal        string   `json:"principal"`
}

// request is the body as a request; its Reader is access's to set.
func (b requestBody) request() ingestd.RetrieveRequest {
	return ingestd.RetrieveRequest{Query: b.Query, TopK: b.TopK, Installations: b.Installations, Tiers: b.Tiers,
		SourceKinds: b.SourceKinds, Expand: b.Expand, IncludeRejected: b.IncludeRejected, ExcludeUntrusted: b.ExcludeUntrusted,
		RequestID: b.RequestID, Grounding: b.Grounding, TrustedView: b.TrustedView, Principal: b.Principal}
}

func (s *server) handleRetrieve(w http.ResponseWriter, r *http.Request) {
	var b requestBody
	if err := decodeJSON(r.Body, &b); err != nil {
		writeError(w, err)
		return
	}
	if b.RequestID == "" {
		b.RequestID = r.Header.Get("X-Request-Id")
	}
	resp, err := s.svc.Retrieve(r.Context(), b.request())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *server) handleProvenance(w http.ResponseWriter, r *http.Request) {
	rep, err := s.svc.Provenance(r.Context(), ingestd.ProvenanceRequest{Installations: r.URL.Query()["installation"],
		Principal: r.URL.Query().Get("principal")})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

func (s *server) handleReject(w http.ResponseWriter, r *http.Request) {
	if s.docs == nil {
		writeError(w, ingestd.Errorf(ingestd.EUNAVAILABLE, "no store configured"))
		return
	}
	id := r.PathValue("id")
	if err := s.docs.SetStatus(r.Context(), id, ingestd.StatusRejected); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"document_id": id, "status": string(ingestd.StatusRejected)})
}

func (s *server) handleDelete(w http.ResponseWriter, r *http.Request) {
	if s.docs == nil {
		writeError(w, ingestd.Errorf(ingestd.EUNAVAILABLE, "no store configured"))
		return
	}
	id := r.PathValue("id")
	if err := s.docs.DeleteDocument(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"document_id": id, "status": string(ingestd.StatusDeleted)})
}

func (s *server) handleSync(w http.ResponseWriter, r *http.Request) {
	if s.sync == nil {
		writeJSON(w, http.StatusNotImplemented, errorBody{Error: errorDetail{Code: "not_implemented", Message: "sync is not available on this server"}})
		return
	}
	id := r.PathValue("id")
	if err := s.sync(r.Context(), id); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"installation": id, "status": "queued"})
}

func (s *server) handleAddURL(w http.ResponseWriter, r *http.Request) {
	if s.addURL == nil {
		writeJSON(w, http.StatusNotImplemented, errorBody{Error: errorDetail{Code: "not_implemented", Message: "adding URLs is not available on this server"}})
		return
	}
	var req struct {
		URL string `json:"url"`
	}
	if err := decodeJSON(r.Body, &req); err != nil {
		s.fail(w, r, err)
		return
	}
	if req.URL == "" {
		s.fail(w, r, ingestd.Errorf(ingestd.EINVALID, "url is required"))
		return
	}
	id := r.PathValue("id")
	ids, err := s.addURL(r.Context(), id, req.URL)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"installation": id, "document_ids": ids})
}

func (s *server) handleReady(w http.ResponseWriter, r *http.Request) {
	if err := s.ready(r.Context()); err != nil {
		s.log.Warn("not ready", slog.Any("err", err))
		msg := "not ready"
		if ingestd.ErrorCode(err) == ingestd.EUNAVAILABLE {
			msg += ": " + ingestd.ErrorMessage(err)
		}
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Error: errorDetail{Code: ingestd.EUNAVAILABLE, Message: msg}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// fail writes err and logs it when it is a server fault. A request whose
// client went away is not one, whatever words the store found for the
// query it interrupted.
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		s.log.Debug("request abandoned", slog.String("method", r.Method), slog.String("path", r.URL.Path))
		return
	}
	if ingestd.ErrorCode(err) == ingestd.EINTERNAL {
		s.log.Error("request failed", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Any("err", err))
	}
	writeError(w, err)
}

// decodeJSON decodes one JSON value, refusing unknown fields, trailing
// data and oversized bodies with EINVALID / ETOOLARGE messages that say
// what was wrong.
func decodeJSON(body io.Reader, v any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooLarge):
			return ingestd.Errorf(ingestd.ETOOLARGE, "request body is larger than %d bytes", tooLarge.Limit)
		case errors.Is(err, io.EOF):
			return ingestd.Errorf(ingestd.EINVALID, "request body is empty: a JSON object is expected")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return ingestd.Errorf(ingestd.EINVALID, "request body is not valid JSON: it ends early")
		case errors.As(err, &syntax):
			return ingestd.Errorf(ingestd.EINVALID, "request body is not valid JSON at byte %d", syntax.Offset)
		case errors.As(err, &typ) && typ.Field == "":
			return ingestd.Errorf(ingestd.EINVALID, "request body must be a JSON object, not %s", jsonArticle(typ.Value))
		case errors.As(err, &typ) && typ.Field == "top_k":
			// retrieval's words for a top_k out of range, as MCP says it.
			return ingestd.Errorf(ingestd.EINVALID, "request body: field \"top_k\" must be a whole number from 1 to %d, not %s", ingestd.MaxTopK, jsonArticle(typ.Value))
		case errors.As(err, &typ):
			return ingestd.Errorf(ingestd.EINVALID, "request body: field %q must be %s, not %s", typ.Field, jsonKind(typ.Type), jsonArticle(typ.Value))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return ingestd.Errorf(ingestd.EINVALID, "request body has an unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		default:
			return ingestd.Errorf(ingestd.EINVALID, "request body: %v", err)
		}
	}
	if dec.More() {
		return ingestd.Errorf(ingestd.EINVALID, "request body has data after the JSON object")
	}
	return nil
}

// jsonKind names, in JSON's words, what a field of Go type t takes: the
// message is for someone who writes JSON, not Go.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.String {
			return "an array of strings"
		}
		return "an array"
	default:
		return "an object"
	}
}

// jsonArticle names the JSON value an UnmarshalTypeError's Value
// describes ("array", "number -1.5", "string", "bool") with its article.
func jsonArticle(value string) string {
	switch kind, _, _ := strings.Cut(value, " "); kind {
	case "array", "object":
		return "an " + kind
	case "number", "string":
		return "a " + kind
	case "bool":
		return "true or false"
	default:
		return kind
	}
}

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// httpStatus maps an application error code to an HTTP status.
func httpStatus(code string) int {
	switch code {
	case ingestd.EINVALID:
		return http.StatusBadRequest
	case ingestd.ENOTFOUND:
		return http.StatusNotFound
	case ingestd.ECONFLICT:
		return http.StatusConflict
	case ingestd.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case ingestd.EFORBIDDEN:
		return http.StatusForbidden
	case ingestd.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case ingestd.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusInternalServerError
	}
}

func writeError(w http.ResponseWriter, err error) {
	code := ingestd.ErrorCode(err)
	if code == ingestd.EUNAUTHORIZED {
		w.Header().Set("WWW-Authenticate", `Bearer realm="ingestd"`)
	}
	writeJSON(w, httpStatus(code), errorBody{Error: errorDetail{Code: code, Message: ingestd.ErrorMessage(err)}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// noWebhooks answers the webhook route of a server where no installation
// takes webhooks, in the words the intake uses for one that takes none
// (connectors/webhook.NoWebhooks): it names no configured installation.
func noWebhooks(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/v1/webhooks/")
	writeError(w, ingestd.Errorf(ingestd.ENOTFOUND, "installation %q takes no webhooks: only an installation with webhook settings does", id))
}

// checker answers gRPC health from Ready.
type checker struct{ ready func(context.Context) error }

func (c *checker) Check(ctx context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	switch req.Service {
	case "", ingestdv1connect.RetrievalServiceName, ingestdv1connect.InstallationServiceName:
	default:
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("unknown service %q", req.Service))
	}
	if err := c.ready(ctx); err != nil {
		return &grpchealth.CheckResponse{Status: grpchealth.StatusNotServing}, nil
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
}
