package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/client"
	"github.com/ingestd/ingestd/firewall"
	ingestdv1 "github.com/ingestd/ingestd/gen/ingestd/v1"
	"github.com/ingestd/ingestd/gen/ingestd/v1/ingestdv1connect"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/metrics"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
	"github.com/ingestd/ingestd/store/sqlite"
)

const (
	chatToken  = "chat-secret-token-1234-5e0b9a7c3d81f62"
	adminToken = "admin-secret-token-5678-a4c29e1f7b0d36"
)

// env is a real server on a loopback port over the acceptance retrievaltest.
type env struct {
	URL   string
	Store *sqlite.Store
	// H2C is an HTTP client that speaks unencrypted HTTP/2, as plain gRPC
	// clients do.
	H2C *http.Client
}

// MustServe starts the handler on 127.0.0.1 with api.NewServer (h2c) and
// shuts it down at cleanup. Options' Retriever (the service in its
// metrics, as serve wires it), Documents, DocumentReader and DocumentLister
// are filled in.
func MustServe(tb testing.TB, mode string, o api.Options) *env {
	tb.Helper()
	s, e := retrievaltest.MustAcceptance(tb)
	reg := prometheus.NewRegistry()
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, FirewallMode: mode, Installations: retrievaltest.Installations(), Documents: s, Index: s})
	if err != nil {
		tb.Fatal(err)
	}
	if o.DocumentReader == nil {
		o.DocumentReader = svc
	}
	if o.DocumentLister == nil {
		o.DocumentLister = svc
	}
	measured, err := metrics.New(svc, &metrics.Options{Registerer: reg})
	if err != nil {
		tb.Fatal(err)
	}
	o.Retriever, o.Documents = measured, s
	if o.Blocks == nil {
		o.Blocks = measured
	}
	if o.Gatherer == nil {
		o.Gatherer = reg
	}
	srv, err := api.NewServer("127.0.0.1:0", api.New(o), "", "")
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- api.Serve(srv, ln) }()
	tb.Cleanup(func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			tb.Errorf("serve: %v", err)
		}
	})
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	tb.Cleanup(tr.CloseIdleConnections)
	return &env{URL: "http://" + ln.Addr().String(), Store: s, H2C: &http.Client{Transport: tr}}
}

// do sends a request with an optional bearer token and returns the status
// and body.
func (e *env) do(tb testing.TB, method, path, token string, body any) (int, []byte, http.Header) {
	tb.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	case []byte:
		r = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			tb.Fatal(err)
		}
		r = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(tb.Context(), method, e.URL+path, r)
	if err != nil {
		tb.Fatal(err)
	}
	if body != nil || method == http.MethodPost || method == http.MethodDelete {
		// Every POST and DELETE says application/json, even without a
		// body: the guard refuses the media types of cross-site forms.
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// comparable is what must be the same on every protocol.
type comparable struct {
	Verdict  ingestd.Verdict
	Chunks   []string
	Excluded int
}

func fromResponse(tb testing.TB, r *ingestd.RetrieveResponse) comparable {
	tb.Helper()
	if r.Verdict == nil {
		tb.Fatal("answer without a verdict")
	}
	c := comparable{Verdict: *r.Verdict, Excluded: r.ExcludedUntrustedDocuments}
	for i, b := range [][]ingestd.ServedChunk{r.Primary, r.Expanded, r.Rejected} {
		for _, ch := range b {
			if ch.Fenced == "" {
				tb.Errorf("chunk %s has no fenced text", ch.ChunkID)
			} else if err := firewall.Check(ch.Fenced); err != nil {
				tb.Errorf("chunk %s: %v", ch.ChunkID, err)
			}
			c.Chunks = append(c.Chunks, []string{"p", "e", "r"}[i]+":"+ch.ChunkID+":"+ch.Via)
		}
	}
	return c
}

func TestVerdictSameOnEveryProtocol(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	queries := []ingestd.RetrieveRequest{
		{Query: "vacation days accrue", TopK: 1},
		{Query: "process my refund by wire transfer", TopK: 2},
		{Query: "flaky scheduler timezone boundaries", TopK: 1},
		{Query: "database migration plan orders", TopK: 1},
		{Query: "quarterly partner loyalty points", TopK: 1},
		{Query: "legacy printer setup third floor", TopK: 1},
		{Query: "please process my refund by wire transfer today", TopK: 3, ExcludeUntrusted: true},
	}
	grpc := client.New(e.URL, &client.Options{HTTPClient: e.H2C, GRPC: true})
	connectProto := client.New(e.URL, nil)
	grpcWeb := ingestdv1connect.NewRetrievalServiceClient(http.DefaultClient, e.URL, connect.WithGRPCWeb())
	for _, q := range queries {
		t.Run(q.Query, func(t *testing.T) {
			// REST.
			status, body, _ := e.do(t, "POST", "/v1/retrieve", "", q)
			if status != http.StatusOK {
				t.Fatalf("REST: %d %s", status, body)
			}
			var rest ingestd.RetrieveResponse
			if err := json.Unmarshal(body, &rest); err != nil {
				t.Fatal(err)
			}
			want := fromResponse(t, &rest)
			if rest.Verdict.UntrustedDocumentIDs == nil {
				t.Errorf("REST untrusted_document_ids is null")
			}

			// Connect JSON, raw.
			status, body, _ = e.do(t, "POST", "/ingestd.v1.RetrievalService/Retrieve", "", q)
			if status != http.StatusOK {
				t.Fatalf("Connect JSON: %d %s", status, body)
			}
			var cj ingestd.RetrieveResponse
			if err := json.Unmarshal(body, &cj); err != nil {
				t.Fatal(err)
			}
			if got := fromResponse(t, &cj); !equal(got, want) {
				t.Errorf("Connect JSON = %+v\nREST = %+v", got, want)
			}
			// The raw Connect JSON body passes the client's JSON gate the
			// same way as REST's.
			tools := []string{"transfer"}
			if got := len(client.AllowedToolsJSON(body, tools)) == 1; got != want.Verdict.ToolsAllowed {
				t.Errorf("gate over Connect JSON allows = %v, verdict says %v", got, want.Verdict.ToolsAllowed)
			}

			for name, c := range map[string]*client.Client{"gRPC": grpc, "Connect proto": connectProto} {
				resp, err := c.Retrieve(t.Context(), q)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got := fromResponse(t, resp); !equal(got, want) {
					t.Errorf("%s = %+v\nREST = %+v", name, got, want)
				}
			}

			// gRPC-Web.
			gw, err := grpcWeb.Retrieve(t.Context(), connect.NewRequest(&ingestdv1.RetrieveRequest{Query: q.Query, TopK: int32(q.TopK), ExcludeUntrusted: q.ExcludeUntrusted}))
			if err != nil {
				t.Fatal(err)
			}
			v := gw.Msg.GetVerdict()
			if v.GetToolsAllowed() != want.Verdict.ToolsAllowed || v.GetReason() != want.Verdict.Reason ||
				!slices.Equal(nonNil(v.GetUntrustedDocumentIds()), want.Verdict.UntrustedDocumentIDs) {
				t.Errorf("gRPC-Web verdict = %v, REST %+v", v, want.Verdict)
			}
		})
	}
}

// TestClientIsARetrieverLikeTheService: the Go client over the server
// and the service it serves are both ingestd.Retrievers and answer alike,
// on gRPC and Connect: the same blocks, scores, verdict and request id
// (the caller's, or the one the server made up and logged under).
func TestClientIsARetrieverLikeTheService(t *testing.T) {
	s, e := retrievaltest.MustAcceptance(t)
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, Installations: retrievaltest.Installations()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(api.New(api.Options{Retriever: svc}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	retrievers := map[string]ingestd.Retriever{
		"gRPC":    client.New(srv.URL, &client.Options{HTTPClient: srv.Client(), GRPC: true}),
		"Connect": client.New(srv.URL, &client.Options{HTTPClient: srv.Client()}),
	}
	var reqs []ingestd.RetrieveRequest
	for _, q := range []string{"process my refund by wire transfer", "vacation days accrue", "database migration rollback"} {
		reqs = append(reqs, ingestd.RetrieveRequest{Query: q, RequestID: "turn-7"},
			ingestd.RetrieveRequest{Query: q, RequestID: "turn-7", Grounding: ingestd.GroundingAuto, TrustedView: true})
	}
	for _, req := range reqs {
		q := req.Query
		want, err := svc.Retrieve(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got, wantView := want.TrustedView != nil, req.TrustedView; got != wantView {
			t.Fatalf("%q: trusted view %v, asked %v", q, got, wantView)
		}
		for name, r := range retrievers {
			got, err := r.Retrieve(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(normalized(got), normalized(want)) {
				t.Errorf("%s, %+v:\n got %+v\nwant %+v", name, req, got, want)
			}
			if got.TrustedView != nil && !reflect.DeepEqual(got.TrustedView.Verdict, want.TrustedView.Verdict) {
				t.Errorf("%s, %+v: view verdict %+v, want %+v", name, req, got.TrustedView.Verdict, want.TrustedView.Verdict)
			}
			made, err := r.Retrieve(t.Context(), ingestd.RetrieveRequest{Query: q})
			if err != nil {
				t.Fatal(err)
			}
			if len(made.RequestID) != 16 || made.RequestID == "turn-7" {
				t.Errorf("%s: request id %q, want the 16 hex digits the server made up", name, made.RequestID)
			}
		}
	}
	for name, r := range retrievers {
		got, err := r.Provenance(t.Context(), ingestd.ProvenanceRequest{})
		if err != nil {
			t.Fatal(err)
		}
		want, err := svc.Provenance(t.Context(), ingestd.ProvenanceRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s provenance:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

// normalized makes empty slices nil, as protobuf does not tell them
// apart, in the answer and its trusted view.
func normalized(r *ingestd.RetrieveResponse) *ingestd.RetrieveResponse {
	c := *r
	blocks := []*[]ingestd.ServedChunk{&c.Primary, &c.Expanded, &c.Rejected}
	if r.TrustedView != nil {
		v := *r.TrustedView
		c.TrustedView = &v
		blocks = append(blocks, &v.Primary, &v.Expanded, &v.Rejected)
	}
	for _, b := range blocks {
		out := make([]ingestd.ServedChunk, len(*b))
		for i, ch := range *b {
			if len(ch.HeadingPath) == 0 {
				ch.HeadingPath = nil
			}
			out[i] = ch
		}
		*b = out
	}
	return &c
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func equal(a, b comparable) bool {
	return a.Verdict.ToolsAllowed == b.Verdict.ToolsAllowed && a.Verdict.Mode == b.Verdict.Mode &&
		a.Verdict.Reason == b.Verdict.Reason && a.Verdict.WouldBlock == b.Verdict.WouldBlock &&
		slices.Equal(a.Verdict.UntrustedDocumentIDs, b.Verdict.UntrustedDocumentIDs) &&
		slices.Equal(a.Chunks, b.Chunks) && a.Excluded == b.Excluded
}

func TestRESTShapes(t *testing.T) {
	e := MustServe(t, ingestd.ModeShadow, api.Options{})
	status, body, _ := e.do(t, "POST", "/v1/retrieve", "", map[string]any{"query": "flaky scheduler timezone boundaries", "top_k": 1})
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"primary", "expanded", "rejected", "verdict", "excluded_untrusted_documents"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("response lacks %q", k)
		}
	}
	var v map[string]any
	if err := json.Unmarshal(raw["verdict"], &v); err != nil {
		t.Fatal(err)
	}
	if v["tools_allowed"] != true || v["would_block"] != true || v["mode"] != "shadow" || v["reason"] != "untrusted_grounding" {
		t.Errorf("verdict = %v", v)
	}
	var chunks []map[string]any
	if err := json.Unmarshal(raw["primary"], &chunks); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"chunk_id", "document_id", "installation", "source_kind", "uri", "title", "tier", "score", "fenced", "text"} {
		if _, ok := chunks[0][k]; !ok {
			t.Errorf("chunk lacks %q", k)
		}
	}

	status, body, _ = e.do(t, "GET", "/v1/provenance?per_installation=true", "", nil)
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	var rep struct {
		Total         int              `json:"total"`
		Installations []map[string]any `json:"installations"`
		Policy        struct {
			FirewallMode string `json:"firewall_mode"`
		} `json:"policy"`
	}
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Total != 13 || len(rep.Installations) == 0 || rep.Policy.FirewallMode != "shadow" {
		t.Errorf("report = %s", body)
	}
	// The same report over gRPC.
	got, err := client.New(e.URL, &client.Options{HTTPClient: e.H2C, GRPC: true}).Provenance(t.Context(), ingestd.ProvenanceRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Total != 13 || got.Policy.FirewallMode != "shadow" || len(got.Installations) != len(rep.Installations) {
		t.Errorf("gRPC report = %+v", got)
	}
}

func TestErrors(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	tests := []struct {
		name       string
		method     string
		path       string
		body       any
		wantStatus int
		wantCode   string
		wantMsg    string
	}{
		{name: "top_k too large", method: "POST", path: "/v1/retrieve", body: `{"query":"refund","top_k":101}`, wantStatus: 400, wantCode: "invalid", wantMsg: "top_k must be a whole number from 1 to 100, not 101"},
		{name: "empty query", method: "POST", path: "/v1/retrieve", body: `{"query":""}`, wantStatus: 400, wantCode: "invalid", wantMsg: "query is empty"},
		{name: "unknown field", method: "POST", path: "/v1/retrieve", body: `{"query":"refund","topk":3}`, wantStatus: 400, wantCode: "invalid", wantMsg: `unknown field "topk"`},
		{name: "wrong type", method: "POST", path: "/v1/retrieve", body: `{"query":"refund","top_k":"3"}`, wantStatus: 400, wantCode: "invalid", wantMsg: `"top_k"`},
		{name: "garbled", method: "POST", path: "/v1/retrieve", body: `{"query":`, wantStatus: 400, wantCode: "invalid", wantMsg: "not valid JSON"},
		{name: "trailing data", method: "POST", path: "/v1/retrieve", body: `{"query":"a"} {}`, wantStatus: 400, wantCode: "invalid", wantMsg: "after the JSON object"},
		{name: "too large", method: "POST", path: "/v1/retrieve", body: `{"query":"` + strings.Repeat("a", api.MaxBodyBytes) + `"}`, wantStatus: 413, wantCode: "too_large", wantMsg: "larger than"},
		{name: "reject unknown document", method: "POST", path: "/v1/documents/dnope/reject", wantStatus: 404, wantCode: "not_found"},
		{name: "sync not wired", method: "POST", path: "/v1/installations/handbook/sync", wantStatus: 501, wantCode: "not_implemented"},
		{name: "no route", method: "GET", path: "/v2/nothing", wantStatus: 404, wantCode: "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, h := e.do(t, tt.method, tt.path, "", tt.body)
			if status != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", status, tt.wantStatus, body)
			}
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type %q", ct)
			}
			var eb struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(body, &eb); err != nil {
				t.Fatalf("error body %s: %v", body, err)
			}
			if eb.Error.Code != tt.wantCode || !strings.Contains(eb.Error.Message, tt.wantMsg) {
				t.Errorf("error = %+v, want code %s with %q", eb.Error, tt.wantCode, tt.wantMsg)
			}
		})
	}
	t.Run("top_k too large over gRPC", func(t *testing.T) {
		_, err := client.New(e.URL, &client.Options{HTTPClient: e.H2C, GRPC: true}).Retrieve(t.Context(), ingestd.RetrieveRequest{Query: "refund", TopK: 500})
		if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(ingestd.ErrorMessage(err), "top_k must be a whole number from 1 to 100") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestAdminRoutes(t *testing.T) {
	synced := ""
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Sync: func(ctx context.Context, inst string) error {
		if inst != "handbook" {
			return ingestd.Errorf(ingestd.ENOTFOUND, "installation %q is not configured", inst)
		}
		synced = inst
		return nil
	}})
	q := map[string]any{"query": "vacation days accrue", "top_k": 1}
	id := retrievaltest.Vacation.ID()
	if status, body, _ := e.do(t, "POST", "/v1/documents/"+id+"/reject", "", nil); status != http.StatusOK {
		t.Fatalf("reject: %d %s", status, body)
	}
	_, body, _ := e.do(t, "POST", "/v1/retrieve", "", q)
	var resp ingestd.RetrieveResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Rejected) != 1 || resp.Rejected[0].DocumentID != id {
		t.Errorf("after reject: rejected = %+v", resp.Rejected)
	}
	for _, c := range resp.Primary {
		if c.DocumentID == id {
			t.Errorf("rejected document in primary")
		}
	}
	if status, body, _ := e.do(t, "DELETE", "/v1/documents/"+id, "", nil); status != http.StatusOK {
		t.Fatalf("delete: %d %s", status, body)
	}
	_, body, _ = e.do(t, "POST", "/v1/retrieve", "", q)
	if strings.Contains(string(body), id) {
		t.Errorf("deleted document served: %s", body)
	}
	if status, body, _ := e.do(t, "POST", "/v1/installations/handbook/sync", "", nil); status != http.StatusAccepted || synced != "handbook" {
		t.Errorf("sync: %d %s", status, body)
	}
	if status, _, _ := e.do(t, "POST", "/v1/installations/nope/sync", "", nil); status != http.StatusNotFound {
		t.Errorf("sync unknown: %d", status)
	}
}

func TestAuth(t *testing.T) {
	hook := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	e := MustServe(t, ingestd.ModeEnforce, api.Options{
		Tokens: []api.Token{
			{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
			{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin}},
		},
		Webhooks: hook,
	})
	retrieve := `{"query":"vacation"}`
	tests := []struct {
		name, method, path, token string
		body                      any
		wantStatus                int
	}{
		{"retrieve without token", "POST", "/v1/retrieve", "", retrieve, 401},
		{"retrieve with wrong token", "POST", "/v1/retrieve", "nope", retrieve, 401},
		{"retrieve with token prefix", "POST", "/v1/retrieve", chatToken[:10], retrieve, 401},
		{"retrieve with admin token", "POST", "/v1/retrieve", adminToken, retrieve, 403},
		{"retrieve with chat token", "POST", "/v1/retrieve", chatToken, retrieve, 200},
		{"provenance without token", "GET", "/v1/provenance", "", nil, 401},
		{"provenance with chat token", "GET", "/v1/provenance", chatToken, nil, 200},
		{"reject with chat token", "POST", "/v1/documents/" + retrievaltest.Vacation.ID() + "/reject", chatToken, nil, 403},
		{"reject with admin token", "POST", "/v1/documents/" + retrievaltest.Vacation.ID() + "/reject", adminToken, nil, 200},
		{"delete without token", "DELETE", "/v1/documents/" + retrievaltest.Vacation.ID(), "", nil, 401},
		{"sync with chat token", "POST", "/v1/installations/handbook/sync", chatToken, nil, 403},
		{"healthz open", "GET", "/healthz", "", nil, 200},
		{"readyz open", "GET", "/readyz", "", nil, 200},
		{"metrics without token", "GET", "/metrics", "", nil, 401},
		{"metrics with chat token", "GET", "/metrics", chatToken, nil, 403},
		{"webhook by signature", "POST", "/v1/webhooks/gh-hooks", "", `{}`, 202},
		{"connect without token", "POST", "/ingestd.v1.RetrievalService/Retrieve", "", retrieve, 401},
		{"connect with admin token", "POST", "/ingestd.v1.RetrievalService/Retrieve", adminToken, retrieve, 403},
		{"connect with chat token", "POST", "/ingestd.v1.RetrievalService/Retrieve", chatToken, retrieve, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body, h := e.do(t, tt.method, tt.path, tt.token, tt.body)
			if status != tt.wantStatus {
				t.Fatalf("status = %d, want %d: %s", status, tt.wantStatus, body)
			}
			for _, tok := range []string{chatToken, adminToken, chatToken[:10]} {
				if strings.Contains(string(body), tok) || strings.Contains(h.Get("WWW-Authenticate"), tok) {
					t.Errorf("response echoes a token: %s", body)
				}
			}
			if status == 401 && !strings.HasPrefix(tt.path, "/ingestd.") && !strings.Contains(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
	t.Run("gRPC", func(t *testing.T) {
		cases := []struct {
			token string
			want  string
		}{{"", ingestd.EUNAUTHORIZED}, {adminToken, ingestd.EFORBIDDEN}, {chatToken, ""}}
		for _, c := range cases {
			_, err := client.New(e.URL, &client.Options{HTTPClient: e.H2C, GRPC: true, Token: c.token}).Retrieve(t.Context(), ingestd.RetrieveRequest{Query: "vacation"})
			if got := ingestd.ErrorCode(err); got != c.want {
				t.Errorf("token %q: code %q, want %q (%v)", c.token, got, c.want, err)
			}
		}
	})
	t.Run("gRPC health needs no token", func(t *testing.T) {
		hc := grpchealth.NewClient(e.H2C, e.URL, connect.WithGRPC())
		resp, err := hc.Check(t.Context(), &grpchealth.CheckRequest{})
		if err != nil || resp.Status != grpchealth.StatusServing {
			t.Errorf("health = %v, %v", resp, err)
		}
	})
}

func TestReflection(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	rc := grpcreflect.NewClient(e.H2C, e.URL, connect.WithGRPC())
	stream := rc.NewStream(t.Context())
	defer stream.Close()
	names, err := stream.ListServices()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range names {
		got = append(got, string(n))
	}
	for _, want := range []string{ingestdv1connect.RetrievalServiceName, ingestdv1connect.InstallationServiceName, grpchealth.HealthV1ServiceName} {
		if !slices.Contains(got, want) {
			t.Errorf("reflection lists %v, lacks %s", got, want)
		}
		if want == grpchealth.HealthV1ServiceName {
			continue
		}
		hc := grpchealth.NewClient(e.H2C, e.URL, connect.WithGRPC())
		if resp, err := hc.Check(t.Context(), &grpchealth.CheckRequest{Service: want}); err != nil || resp.Status != grpchealth.StatusServing {
			t.Errorf("health of %s: %v, %v", want, resp, err)
		}
	}
	files, err := stream.FileContainingSymbol(ingestdv1connect.RetrievalServiceName)
	if err != nil || len(files) == 0 {
		t.Errorf("file for service: %v, %v", files, err)
	}
}

func TestReady(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Ready: func(context.Context) error { return errors.New("nats down") }})
	status, body, _ := e.do(t, "GET", "/readyz", "", nil)
	if status != http.StatusServiceUnavailable || strings.Contains(string(body), "nats down") {
		t.Errorf("readyz = %d %s", status, body)
	}
	if status, _, _ := e.do(t, "GET", "/healthz", "", nil); status != 200 {
		t.Errorf("healthz = %d", status)
	}
	hc := grpchealth.NewClient(e.H2C, e.URL, connect.WithGRPC())
	resp, err := hc.Check(t.Context(), &grpchealth.CheckRequest{})
	if err != nil || resp.Status != grpchealth.StatusNotServing {
		t.Errorf("health = %v, %v", resp, err)
	}

	// What a process waits for (coded unavailable) is shown.
	e = MustServe(t, ingestd.ModeEnforce, api.Options{Ready: func(context.Context) error {
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "waiting for the job stream")
	}})
	status, body, _ = e.do(t, "GET", "/readyz", "", nil)
	if status != http.StatusServiceUnavailable || !strings.Contains(string(body), "not ready: waiting for the job stream") {
		t.Errorf("readyz while waiting = %d %s", status, body)
	}
}

func TestMetrics(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	e.do(t, "POST", "/v1/retrieve", "", `{"query":"process my refund by wire transfer","top_k":1}`)
	_, body, _ := e.do(t, "GET", "/metrics", "", nil)
	for _, want := range []string{`ingestd_retrieval_verdicts_total{blocked="true",mode="enforce",reason="untrusted_grounding"} 1`, "ingestd_retrieval_duration_seconds_count 1"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

func TestCheckListen(t *testing.T) {
	tests := []struct {
		name          string
		addr          string
		tokens, allow bool
		wantErr       bool
	}{
		{name: "loopback v4", addr: "127.0.0.1:7700"},
		{name: "loopback range", addr: "127.0.0.2:7700"},
		{name: "loopback v6", addr: "[::1]:7700"},
		{name: "localhost", addr: "localhost:7700"},
		{name: "all interfaces", addr: ":7700", wantErr: true},
		{name: "any v4", addr: "0.0.0.0:7700", wantErr: true},
		{name: "public", addr: "192.0.2.1:7700", wantErr: true},
		{name: "hostname", addr: "example.com:7700", wantErr: true},
		{name: "tokens", addr: "0.0.0.0:7700", tokens: true},
		{name: "explicitly allowed", addr: "0.0.0.0:7700", allow: true},
		{name: "garbage", addr: "nope", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := api.CheckListen(tt.addr, tt.tokens, tt.allow); (err != nil) != tt.wantErr {
				t.Errorf("err = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

func TestNewServerTLSNeedsBoth(t *testing.T) {
	if _, err := api.NewServer("127.0.0.1:0", http.NotFoundHandler(), "cert.pem", ""); err == nil {
		t.Error("cert without key accepted")
	}
	if _, err := api.NewServer("127.0.0.1:0", http.NotFoundHandler(), "testdata/missing/cert.pem", "testdata/missing/key.pem"); err == nil {
		t.Error("missing files accepted")
	}
}

func TestAddURLRoute(t *testing.T) {
	var got []string
	e := MustServe(t, ingestd.ModeEnforce, api.Options{AddURL: func(ctx context.Context, inst, u string) ([]string, error) {
		if strings.Contains(u, "127.0.0.1") {
			return nil, ingestd.Errorf(ingestd.EINVALID, "refused: 127.0.0.1 is loopback (allow_private_networks is off)")
		}
		got = append(got, inst, u)
		return []string{"d1"}, nil
	}})
	status, body, _ := e.do(t, "POST", "/v1/installations/docs/urls", "", map[string]any{"url": "https://docs.example.com/a"})
	if status != http.StatusOK || !strings.Contains(string(body), `"d1"`) || len(got) != 2 || got[0] != "docs" {
		t.Fatalf("add url: %d %s (%v)", status, body, got)
	}
	status, body, _ = e.do(t, "POST", "/v1/installations/docs/urls", "", map[string]any{"url": "http://127.0.0.1/"})
	if status != http.StatusBadRequest || !strings.Contains(string(body), "loopback") {
		t.Fatalf("refused url: %d %s", status, body)
	}
	if status, _, _ := e.do(t, "POST", "/v1/installations/docs/urls", "", map[string]any{}); status != http.StatusBadRequest {
		t.Fatalf("missing url: %d", status)
	}
}
