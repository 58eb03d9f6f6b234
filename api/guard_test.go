package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/client"
	ingestdv1 "github.com/ingestd/ingestd/gen/ingestd/v1"
	"github.com/ingestd/ingestd/gen/ingestd/v1/ingestdv1connect"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// call is one raw request: what a browser, a rebinding page or curl sends.
type call struct {
	method, path string
	host         string // the Host header; "" is the server's address
	ctype        string // the Content-Type; "" sends none, "a\x00b" sends two
	body         string
	origin       string // "" sends none
	fetchSite    string // Sec-Fetch-Site; "" sends none
	token        string
}

// send makes c over HTTP/1.1 and returns the status and body.
func (e *env) send(tb testing.TB, c call) (int, string) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), c.method, e.URL+c.path, strings.NewReader(c.body))
	if err != nil {
		tb.Fatal(err)
	}
	if c.host != "" {
		req.Host = c.host
	}
	for _, ct := range strings.Split(c.ctype, "\x00") {
		if ct != "" {
			req.Header.Add("Content-Type", ct)
		}
	}
	if c.origin != "" {
		req.Header.Set("Origin", c.origin)
	}
	if c.fetchSite != "" {
		req.Header.Set("Sec-Fetch-Site", c.fetchSite)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
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
	return resp.StatusCode, string(b)
}

// port is the server's port.
func (e *env) port(tb testing.TB) string {
	tb.Helper()
	u, err := url.Parse(e.URL)
	if err != nil {
		tb.Fatal(err)
	}
	return u.Port()
}

// effects counts what the admin callbacks and the webhook handler were
// asked to do, so a refused request can be shown to have done nothing.
type effects struct{ sync, addURL, hook atomic.Int32 }

func (f *effects) options() api.Options {
	return api.Options{
		Sync:   func(context.Context, string) error { f.sync.Add(1); return nil },
		AddURL: func(context.Context, string, string) ([]string, error) { f.addURL.Add(1); return []string{"d1"}, nil },
		Webhooks: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			f.hook.Add(1)
			w.WriteHeader(http.StatusAccepted)
		}),
	}
}

func (f *effects) total() int32 { return f.sync.Load() + f.addURL.Load() + f.hook.Load() }

// mustStatus returns the status of a stored document.
func mustStatus(tb testing.TB, e *env, id string) ingestd.Status {
	tb.Helper()
	d, err := e.Store.Document(tb.Context(), id)
	if err != nil {
		tb.Fatal(err)
	}
	return d.Status
}

const retrieveBody = `{"query":"vacation days accrue","top_k":1}`

// routes is every route of the surface with a request that succeeds when
// it comes from curl on loopback.
func routes() []call {
	id := retrievaltest.Vacation.ID()
	json := "application/json"
	return []call{
		{method: "GET", path: "/healthz"},
		{method: "GET", path: "/readyz"},
		{method: "GET", path: "/metrics"},
		{method: "GET", path: "/v1/provenance"},
		{method: "POST", path: "/v1/retrieve", ctype: json, body: retrieveBody},
		{method: "POST", path: "/v1/documents/" + id + "/reject", ctype: json},
		{method: "GET", path: "/v1/documents/" + id},
		{method: "GET", path: "/v1/installations/handbook/documents?limit=2"},
		{method: "DELETE", path: "/v1/documents/" + id, ctype: json},
		{method: "POST", path: "/v1/installations/handbook/sync", ctype: json},
		{method: "POST", path: "/v1/installations/docs/urls", ctype: json, body: `{"url":"https://docs.example.com/"}`},
		{method: "GET", path: "/v1/installations"},
		{method: "GET", path: "/v1/installations/support/runs"},
		{method: "POST", path: "/v1/webhooks/gh-hooks", ctype: json, body: `{}`},
		{method: "POST", path: "/ingestd.v1.RetrievalService/Retrieve", ctype: json, body: retrieveBody},
		{method: "POST", path: "/ingestd.v1.RetrievalService/Provenance", ctype: json, body: `{}`},
		{method: "GET", path: "/ingestd.v1.RetrievalService/Provenance?connect=v1&encoding=json&message=%7B%7D"},
		{method: "POST", path: "/grpc.health.v1.Health/Check", ctype: json, body: `{}`},
		{method: "POST", path: "/ingestd.v1.InstallationService/ListInstallations", ctype: json, body: `{}`},
	}
}

// TestForeignHostRefusedOnEveryRoute is DNS rebinding: a page on
// evil.example whose name now resolves to 127.0.0.1 talks to the server as
// its own origin (Origin matches Host, Sec-Fetch-Site same-origin), so only
// the Host gives it away. Without tokens no route answers it, and nothing
// is changed.
func TestForeignHostRefusedOnEveryRoute(t *testing.T) {
	var fx effects
	e := MustServe(t, ingestd.ModeEnforce, fx.options())
	port := e.port(t)
	foreign := []string{
		"evil.example", "evil.example:" + port, "EVIL.EXAMPLE.:" + port,
		"localhost.evil.example:" + port, "127.0.0.1.nip.io:" + port, "app.localhost:" + port,
		"10.0.0.1:" + port, "[::2]:" + port, "[fe80::1]:" + port, "0.0.0.0:" + port,
		"127.1:" + port, "2130706433:" + port, "localhost:x" + port, "local_host:" + port,
	}
	for _, rt := range routes() {
		for _, h := range foreign {
			t.Run(rt.method+" "+rt.path+" Host "+h, func(t *testing.T) {
				c := rt
				c.host, c.origin, c.fetchSite = h, "http://"+h, "same-origin"
				status, body := e.send(t, c)
				want := http.StatusMisdirectedRequest
				if strings.HasPrefix(c.path, "/ingestd.") || strings.HasPrefix(c.path, "/grpc.") {
					want = http.StatusForbidden // a Connect error: permission_denied
				}
				if status != want || !strings.Contains(body, "listen_hosts") {
					t.Errorf("status = %d, want %d naming listen_hosts: %s", status, want, body)
				}
			})
		}
	}
	if got := mustStatus(t, e, retrievaltest.Vacation.ID()); got != ingestd.StatusActive {
		t.Errorf("after refused requests the document is %s", got)
	}
	if n := fx.total(); n != 0 {
		t.Errorf("refused requests reached %d handlers", n)
	}
}

// TestLoopbackHostsServed: every spelling of a loopback host is served on
// every route, with or without a port.
func TestLoopbackHostsServed(t *testing.T) {
	var fx effects
	o := fx.options()
	o.Installations = mustHistory(t)
	e := MustServe(t, ingestd.ModeEnforce, o)
	port := e.port(t)
	hosts := []string{
		"127.0.0.1", "127.0.0.1:" + port, "127.0.0.1.:" + port, "127.9.8.7:" + port,
		"localhost", "localhost:" + port, "LOCALHOST:" + port, "LocalHost.:" + port, "localhost.",
		"[::1]", "[::1]:" + port, "[0:0:0:0:0:0:0:1]:" + port, "[::ffff:127.0.0.1]:" + port, "[::FFFF:7F00:1]",
	}
	for _, rt := range routes() {
		if rt.method == "DELETE" || strings.HasSuffix(rt.path, "/reject") {
			continue // changes the corpus for the other routes; TestCrossSite covers them
		}
		for _, h := range hosts {
			t.Run(rt.method+" "+rt.path+" Host "+h, func(t *testing.T) {
				c := rt
				c.host = h
				if status, body := e.send(t, c); status >= 300 {
					t.Errorf("status = %d: %s", status, body)
				}
			})
		}
	}
}

// TestCrossSite: a page on another site (or another port of localhost)
// cannot change or read anything, even with a correct document id; curl
// and the CLI, which send no Origin and no Sec-Fetch headers, keep working.
func TestCrossSite(t *testing.T) {
	var fx effects
	e := MustServe(t, ingestd.ModeEnforce, fx.options())
	self := "http://127.0.0.1:" + e.port(t)
	id := retrievaltest.Vacation.ID()
	targets := []call{
		{method: "POST", path: "/v1/documents/" + id + "/reject"},
		{method: "DELETE", path: "/v1/documents/" + id},
		{method: "POST", path: "/v1/installations/handbook/sync"},
		{method: "POST", path: "/v1/installations/docs/urls", body: `{"url":"https://docs.example.com/"}`},
		{method: "POST", path: "/v1/retrieve", body: retrieveBody},
		{method: "POST", path: "/ingestd.v1.RetrievalService/Retrieve", body: retrieveBody},
		{method: "POST", path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	}
	refused := []struct {
		name, ctype, origin, fetchSite string
		want                           int
	}{
		{name: "form text/plain from another site", ctype: "text/plain", origin: "http://evil.example", fetchSite: "cross-site", want: 403},
		{name: "text/plain, old browser", ctype: "text/plain;charset=UTF-8", origin: "http://evil.example", want: 403},
		{name: "text/plain without Origin", ctype: "text/plain", want: 415},
		{name: "multipart/form-data", ctype: "multipart/form-data; boundary=x", want: 415},
		{name: "urlencoded", ctype: "application/x-www-form-urlencoded", want: 415},
		{name: "no Content-Type", want: 415},
		{name: "two Content-Types", ctype: "application/json\x00text/plain", want: 415},
		{name: "json lookalike", ctype: "application/jsonp", want: 415},
		{name: "json from another site", ctype: "application/json", origin: "http://evil.example", fetchSite: "cross-site", want: 403},
		{name: "json, Origin null", ctype: "application/json", origin: "null", want: 403},
		{name: "json, Origin null, cross-site", ctype: "application/json", origin: "null", fetchSite: "cross-site", want: 403},
		{name: "Origin matches Host but Sec-Fetch-Site cross-site", ctype: "application/json", origin: self, fetchSite: "cross-site", want: 403},
		{name: "another port of localhost", ctype: "application/json", origin: "http://localhost:8080", fetchSite: "same-site", want: 403},
		{name: "another port, old browser", ctype: "application/json", origin: "http://127.0.0.1:8080", want: 403},
		{name: "https origin for an http host, cross-site", ctype: "application/json", origin: "https://127.0.0.1:1", fetchSite: "cross-site", want: 403},
	}
	for _, tg := range targets {
		for _, v := range refused {
			t.Run(tg.method+" "+tg.path+" "+v.name, func(t *testing.T) {
				c := tg
				c.ctype, c.origin, c.fetchSite = v.ctype, v.origin, v.fetchSite
				status, body := e.send(t, c)
				if status != v.want {
					t.Errorf("status = %d, want %d: %s", status, v.want, body)
				}
				if v.want == 403 && !strings.Contains(body, "cross-origin") {
					t.Errorf("refusal does not name the rule: %s", body)
				}
			})
		}
	}
	if got := mustStatus(t, e, id); got != ingestd.StatusActive {
		t.Fatalf("a cross-site request changed the document to %s", got)
	}
	if n := fx.total(); n != 0 {
		t.Fatalf("cross-site requests reached %d handlers", n)
	}

	// What curl, the CLI and same-origin requests send is served.
	allowed := []struct{ name, ctype, origin, fetchSite string }{
		{name: "curl", ctype: "application/json"},
		{name: "charset", ctype: "application/json; charset=utf-8"},
		{name: "upper case", ctype: "Application/JSON"},
		{name: "same origin", ctype: "application/json", origin: self, fetchSite: "same-origin"},
		{name: "same origin, old browser", ctype: "application/json", origin: self},
		{name: "user typed it", ctype: "application/json", fetchSite: "none"},
	}
	for _, v := range allowed {
		t.Run("allowed "+v.name, func(t *testing.T) {
			c := call{method: "POST", path: "/v1/retrieve", body: retrieveBody, ctype: v.ctype, origin: v.origin, fetchSite: v.fetchSite}
			if status, body := e.send(t, c); status != http.StatusOK {
				t.Errorf("retrieve: %d %s", status, body)
			}
			c.path = "/ingestd.v1.RetrievalService/Retrieve"
			if status, body := e.send(t, c); status != http.StatusOK {
				t.Errorf("Connect: %d %s", status, body)
			}
			c = call{method: "POST", path: "/v1/installations/handbook/sync", ctype: v.ctype, origin: v.origin, fetchSite: v.fetchSite}
			if status, body := e.send(t, c); status != http.StatusAccepted {
				t.Errorf("sync: %d %s", status, body)
			}
		})
	}
	// The same reject, sent by curl, does what the refused ones did not:
	// the check above could have failed.
	if status, body := e.send(t, call{method: "POST", path: "/v1/documents/" + id + "/reject", ctype: "application/json"}); status != http.StatusOK {
		t.Fatalf("reject from curl: %d %s", status, body)
	}
	if got := mustStatus(t, e, id); got != ingestd.StatusRejected {
		t.Errorf("after reject from curl the document is %s", got)
	}
}

// TestRPCFromBrowsersRefused: Connect and gRPC-Web calls carrying a
// foreign Origin are refused in their own protocol; gRPC and Connect from
// the Go client (no Origin) keep working, over h2c too.
func TestRPCFromBrowsersRefused(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	browser := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Origin", "http://evil.example")
			req.Header().Set("Sec-Fetch-Site", "cross-site")
			return next(ctx, req)
		}
	})
	msg := &ingestdv1.RetrieveRequest{Query: "vacation days accrue", TopK: 1}
	for name, opts := range map[string][]connect.ClientOption{
		"gRPC-Web":     {connect.WithGRPCWeb(), connect.WithInterceptors(browser)},
		"Connect JSON": {connect.WithProtoJSON(), connect.WithInterceptors(browser)},
		"Connect":      {connect.WithInterceptors(browser)},
	} {
		t.Run(name, func(t *testing.T) {
			c := ingestdv1connect.NewRetrievalServiceClient(http.DefaultClient, e.URL, opts...)
			_, err := c.Retrieve(t.Context(), connect.NewRequest(msg))
			if got := connect.CodeOf(err); got != connect.CodePermissionDenied || !strings.Contains(err.Error(), "cross-origin") {
				t.Errorf("err = %v, want permission_denied naming the rule", err)
			}
		})
	}
	for name, o := range map[string]*client.Options{
		"gRPC over h2c":    {HTTPClient: e.H2C, GRPC: true},
		"Connect over h2c": {HTTPClient: e.H2C},
		"Connect":          nil,
	} {
		t.Run("CLI "+name, func(t *testing.T) {
			resp, err := client.New(e.URL, o).Retrieve(t.Context(), ingestd.RetrieveRequest{Query: "vacation days accrue", TopK: 1})
			if err != nil || resp.Verdict == nil || !resp.Verdict.ToolsAllowed {
				t.Errorf("retrieve = %+v, %v", resp, err)
			}
		})
	}
	t.Run("gRPC health", func(t *testing.T) {
		resp, err := grpchealth.NewClient(e.H2C, e.URL, connect.WithGRPC()).Check(t.Context(), &grpchealth.CheckRequest{})
		if err != nil || resp.Status != grpchealth.StatusServing {
			t.Errorf("health = %v, %v", resp, err)
		}
	})
	t.Run("gRPC with a foreign authority", func(t *testing.T) {
		tr := e.H2C.Transport.(*http.Transport)
		hc := &http.Client{Transport: hostRewriter{rt: tr, host: "evil.example"}}
		_, err := client.New(e.URL, &client.Options{HTTPClient: hc, GRPC: true}).Retrieve(t.Context(), ingestd.RetrieveRequest{Query: "vacation", TopK: 1})
		if got := ingestd.ErrorCode(err); got != ingestd.EFORBIDDEN || !strings.Contains(ingestd.ErrorMessage(err), "listen_hosts") {
			t.Errorf("err = %v, want forbidden naming listen_hosts", err)
		}
	})
}

// hostRewriter sends every request with another Host (:authority).
type hostRewriter struct {
	rt   http.RoundTripper
	host string
}

func (h hostRewriter) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = h.host
	return h.rt.RoundTrip(r)
}

// TestWebhooksKeepTheirOwnRules: a webhook comes from a server in the
// media type its sender chooses, authenticated by its signature, so the
// cross-origin and Content-Type rules do not apply to it; the Host rule
// does.
func TestWebhooksKeepTheirOwnRules(t *testing.T) {
	var fx effects
	e := MustServe(t, ingestd.ModeEnforce, fx.options())
	if status, body := e.send(t, call{method: "POST", path: "/v1/webhooks/gh-hooks", ctype: "application/x-www-form-urlencoded", body: "payload=%7B%7D"}); status != http.StatusAccepted {
		t.Errorf("form-encoded webhook: %d %s", status, body)
	}
	if status, body := e.send(t, call{method: "POST", path: "/v1/webhooks/gh-hooks", host: "hooks.example.com", ctype: "application/json", body: "{}"}); status != http.StatusMisdirectedRequest {
		t.Errorf("webhook to a foreign Host: %d %s", status, body)
	}
	if got := fx.hook.Load(); got != 1 {
		t.Errorf("webhook handler ran %d times, want 1", got)
	}
}

// TestTokensDefeatRebinding: with tokens configured and no listen_hosts,
// any Host is served to a request with a token (a rebinding page has
// none), but cross-origin requests are still refused.
func TestTokensDefeatRebinding(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Tokens: []api.Token{{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}}}})
	for _, c := range []struct {
		call
		want int
	}{
		{call{method: "POST", path: "/v1/retrieve", host: "ingestd.example.com", ctype: "application/json", body: retrieveBody, token: chatToken}, 200},
		{call{method: "POST", path: "/v1/retrieve", host: "evil.example", ctype: "application/json", body: retrieveBody, origin: "http://evil.example", fetchSite: "same-origin"}, 401},
		{call{method: "POST", path: "/v1/retrieve", ctype: "application/json", body: retrieveBody, token: chatToken, origin: "http://evil.example", fetchSite: "cross-site"}, 403},
		{call{method: "POST", path: "/v1/retrieve", ctype: "text/plain", body: retrieveBody, token: chatToken}, 415},
		{call{method: "GET", path: "/healthz", host: "ingestd.example.com"}, 200},
	} {
		if status, body := e.send(t, c.call); status != c.want {
			t.Errorf("%s %s Host %q: %d, want %d: %s", c.method, c.path, c.host, status, c.want, body)
		}
	}
}

// TestRefusalBodies: a refusal is JSON that names the rule and the key.
func TestRefusalBodies(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	for _, c := range []struct {
		call
		code, want string
	}{
		{call{method: "GET", path: "/v1/provenance", host: "evil.example"}, "misdirected_request", "listen_hosts"},
		{call{method: "POST", path: "/v1/retrieve", ctype: "application/json", body: retrieveBody, origin: "null"}, "forbidden", "cross-origin"},
		{call{method: "POST", path: "/v1/retrieve", ctype: "text/plain", body: retrieveBody}, "unsupported_media_type", "Content-Type: application/json"},
	} {
		_, body := e.send(t, c.call)
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &eb); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if eb.Error.Code != c.code || !strings.Contains(eb.Error.Message, c.want) {
			t.Errorf("error = %+v, want code %s naming %q", eb.Error, c.code, c.want)
		}
	}
}

// TestListenHosts: listed names are served in any case, with or without a
// trailing dot or port; with tokens, listing names switches the Host rule
// on.
func TestListenHosts(t *testing.T) {
	hosts := []string{"ingestd.internal", "10.0.0.5", "[fd00::1]", "Search.Example.COM."}
	for _, tokens := range []bool{false, true} {
		o := api.Options{Hosts: hosts}
		tok := ""
		if tokens {
			o.Tokens = []api.Token{{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}}}
			tok = chatToken
		}
		e := MustServe(t, ingestd.ModeEnforce, o)
		tests := []struct {
			host string
			want int
		}{
			{"ingestd.internal", 200},
			{"INGESTD.INTERNAL.:7700", 200},
			{"10.0.0.5:7700", 200},
			{"[fd00::1]:7700", 200},
			{"[FD00:0::1]", 200},
			{"search.example.com", 200},
			{"localhost:7700", 200},
			{"[::1]", 200},
			{"evil.ingestd.internal", 421},
			{"ingestd.internal.evil.example", 421},
			{"10.0.0.6", 421},
			{"evil.example", 421},
		}
		for _, tt := range tests {
			c := call{method: "POST", path: "/v1/retrieve", host: tt.host, ctype: "application/json", body: retrieveBody, token: tok}
			if status, body := e.send(t, c); status != tt.want {
				t.Errorf("tokens %v, Host %q: %d, want %d: %s", tokens, tt.host, status, tt.want, body)
			}
		}
	}
}

func TestNormalizeHost(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: "ingestd.internal", want: "ingestd.internal"},
		{in: "Ingestd.Internal.", want: "ingestd.internal"},
		{in: "my_host", want: "my_host"},
		{in: "10.0.0.5", want: "10.0.0.5"},
		{in: "10.0.0.5.", want: "10.0.0.5"},
		{in: "::1", want: "::1"},
		{in: "[FD00:0:0::1]", want: "fd00::1"},
		{in: "::ffff:10.0.0.5", want: "::ffff:10.0.0.5"},
		{in: "", wantErr: true},
		{in: "ingestd.internal:7700", wantErr: true},
		{in: "http://ingestd.internal", wantErr: true},
		{in: "ingestd.internal/x", wantErr: true},
		{in: "*.example.com", wantErr: true},
		{in: "a..b", wantErr: true},
		{in: "ingestd.internal..", wantErr: true},
		{in: "[10.0.0.5]", wantErr: true},
		{in: "[::1", wantErr: true},
		{in: "fe80::1%eth0", wantErr: true},
		{in: "0.0.0.0", wantErr: true},
		{in: "::", wantErr: true},
		{in: "127.1", wantErr: true},
		{in: "2130706433", wantErr: true},
		{in: "010.0.0.5", wantErr: true},
		{in: "exa mple", wantErr: true},
		{in: "ex\u0430mple.com", wantErr: true}, // Cyrillic a: a browser sends punycode
		{in: strings.Repeat("a", 64) + ".com", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := api.NormalizeHost(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NormalizeHost(%q) = %q, %v; wantErr %v", tt.in, got, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("NormalizeHost(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNewPanicsOnBadHost(t *testing.T) {
	st, emb := retrievaltest.MustAcceptance(t)
	svc, err := retrieval.New(retrieval.Options{Store: st, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "Hosts[1]") {
			t.Errorf("recover() = %v, want a panic naming Hosts[1]", r)
		}
	}()
	api.New(api.Options{Retriever: svc, Hosts: []string{"ok.example", "bad.example:80"}})
}

// TestMCPCrossOrigin: /mcp is held to the cross-origin rule on every
// method, as the MCP specification asks (GET opens an event stream,
// DELETE ends a session): a page of another origin gets 403 whatever it
// sends, while an SDK (no Origin, no Sec-Fetch-Site) is served. POSTs
// there must say application/json.
func TestMCPCrossOrigin(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	self := "http://127.0.0.1:" + e.port(t)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	cases := []struct {
		name string
		c    call
		want int
	}{
		{"GET from another site", call{method: "GET", path: "/mcp", origin: "http://evil.example", fetchSite: "cross-site"}, 403},
		{"GET, old browser, foreign Origin", call{method: "GET", path: "/mcp", origin: "http://evil.example"}, 403},
		{"GET, Origin null", call{method: "GET", path: "/mcp", origin: "null"}, 403},
		{"DELETE from another site", call{method: "DELETE", path: "/mcp", origin: "http://evil.example", fetchSite: "cross-site"}, 403},
		{"POST from another port", call{method: "POST", path: "/mcp", body: list, ctype: "application/json", origin: "http://localhost:8080", fetchSite: "same-site"}, 403},
		{"POST text/plain", call{method: "POST", path: "/mcp", body: list, ctype: "text/plain"}, 415},
		// Stateless: no session to stream or end; the guard let them by.
		{"GET from an SDK", call{method: "GET", path: "/mcp"}, 405},
		{"DELETE from an SDK, no Content-Type", call{method: "DELETE", path: "/mcp"}, 405},
		{"GET same origin", call{method: "GET", path: "/mcp", origin: self, fetchSite: "same-origin"}, 405},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.send(t, tc.c)
			if status != tc.want {
				t.Errorf("status = %d, want %d: %s", status, tc.want, body)
			}
			if tc.want == 403 && !strings.Contains(body, "cross-origin") {
				t.Errorf("refusal does not name the rule: %s", body)
			}
		})
	}
}
