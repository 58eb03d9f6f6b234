package mcpserver

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// The fast path is a subset of the SDK, never a variant: every request it
// takes is answered as the SDK answers it (status, media type, the
// JSON-RPC response equal once decoded), and every request it does not
// recognise reaches the SDK untouched.
func TestFastPathAnswersAsTheSDK(t *testing.T) {
	o, ho := fastPathServer(t)
	fast, sdk := handler(o, ho, true), handler(o, ho, false)
	// sdkOnly is the fast path with the SDK replaced by a marker, to tell
	// which requests the fast path took.
	fp := handler(o, ho, true).(*fastPath)
	fp.sdk = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(599) })

	call := func(id, args string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"retrieve","arguments":` + args + `}}`
	}
	taken := []struct{ name, body string }{
		{"blocked answer", call("1", `{"query":"database migration plan orders"}`)},
		{"string id", call(`"a-1"`, `{"query":"release checklist"}`)},
		{"negative id", call("-7", `{"query":"deploy the payment service"}`)},
		{"members reordered", `{"params":{"arguments":{"query":"orders"},"name":"retrieve"},"method":"tools/call","id":3,"jsonrpc":"2.0"}`},
		{"no arguments", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"retrieve"}}`},
		{"null arguments", call("5", `null`)},
		{"trusted view and grounding", call("6", `{"query":"database migration plan orders","trusted_view":true,"grounding":"auto","limit":3}`)},
		{"installation filter", call("7", `{"query":"orders","installations":["`+retrievaltest.Installations()[0].ID+`"]}`)},
		{"unknown installation", call("8", `{"query":"orders","installations":["nope"]}`)},
		{"unknown argument", call("9", `{"query":"orders","tools":"all"}`)},
		{"argument of the wrong type", call("10", `{"query":7}`)},
		{"arguments not an object", call("11", `["orders"]`)},
		{"request id argument", call("12", `{"query":"orders","request_id":"mine"}`)},
		{"empty query", call("13", `{"query":""}`)},
	}
	passed := []struct{ name, body string }{
		{"other tool", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"provenance","arguments":{}}}`},
		{"other method", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{"batch", "[" + call("1", `{"query":"orders"}`) + "]"},
		{"notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"retrieve","arguments":{"query":"orders"}}}`},
		{"repeated member", `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"retrieve","arguments":{"query":"orders"}}}`},
		{"repeated name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"provenance","name":"retrieve","arguments":{"query":"orders"}}}`},
		{"unknown member", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"retrieve","arguments":{"query":"orders"}},"extra":1}`},
		{"member in another case", `{"jsonrpc":"2.0","id":1,"Method":"tools/call","params":{"name":"retrieve","arguments":{"query":"orders"}}}`},
		{"params _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"retrieve","arguments":{"query":"orders"},"_meta":{"progressToken":1}}}`},
		{"fractional id", call("1.5", `{"query":"orders"}`)},
		{"null id", call("null", `{"query":"orders"}`)},
		{"wrong version tag", `{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"retrieve","arguments":{"query":"orders"}}}`},
		{"not JSON", `{"jsonrpc":"2.0",`},
		{"trailing data", call("1", `{"query":"orders"}`) + `{}`},
		{"data after the arguments", call("12", `{"query":"orders"} {"query":"x"}`)},
	}
	for _, tt := range taken {
		t.Run("taken/"+tt.name, func(t *testing.T) {
			if code := post(fp, tt.body, nil).Code; code == 599 {
				t.Fatal("the fast path handed this request to the SDK")
			}
			same(t, post(fast, tt.body, nil), post(sdk, tt.body, nil))
		})
	}
	for _, tt := range passed {
		t.Run("passed/"+tt.name, func(t *testing.T) {
			if code := post(fp, tt.body, nil).Code; code != 599 {
				t.Fatalf("the fast path answered this request itself (%d)", code)
			}
			same(t, post(fast, tt.body, nil), post(sdk, tt.body, nil))
		})
	}
	body := call("1", `{"query":"orders"}`)
	for name, h := range map[string]http.Header{
		"future protocol":     {"Mcp-Protocol-Version": {"2026-07-28"}},
		"unknown protocol":    {"Mcp-Protocol-Version": {"1999-01-01"}},
		"no event stream":     {"Accept": {"application/json"}},
		"text content type":   {"Content-Type": {"text/plain"}},
		"wildcard accept":     {"Accept": {"*/*"}},
		"oversized body":      {"X-Pad": {"1"}},
		"request id (header)": {"X-Request-Id": {"req-42"}},
	} {
		t.Run("headers/"+name, func(t *testing.T) {
			b := body
			if name == "oversized body" {
				b = call("1", `{"query":"`+strings.Repeat("x", 1<<16)+`"}`)
			}
			// An oversized body is refused by the fast path, which has
			// read it, with the SDK's own answer.
			wantFast := name == "request id (header)" || name == "oversized body"
			if code := post(fp, b, h).Code; (code != 599) != wantFast {
				t.Fatalf("fast path took it: %v, want %v", code != 599, wantFast)
			}
			same(t, post(fast, b, h), post(sdk, b, h))
		})
	}
	t.Run("GET", func(t *testing.T) {
		for _, h := range []http.Handler{fast, sdk} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest("GET", "/mcp", nil))
			if w.Code != http.StatusMethodNotAllowed {
				t.Fatalf("GET: %d", w.Code)
			}
		}
	})
}

// FuzzFastPathAnswersAsTheSDK holds any body to the same property: the
// fast path and the SDK answer it alike, whichever of them takes it.
//
//	go test ./mcpserver -run XXX -fuzz FuzzFastPathAnswersAsTheSDK
func FuzzFastPathAnswersAsTheSDK(f *testing.F) {
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"retrieve","arguments":{"query":"database migration plan orders"}}}`
	for _, seed := range []string{
		call,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"retrieve","arguments":{"query":"orders","trusted_view":true,"grounding":"auto"}}}`,
		`{"params":{"arguments":{"query":"orders","limit":-1},"name":"retrieve"},"method":"tools/call","id":3,"jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"retrieve","arguments":{"query":"orders","installations":["nope"]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"retrieve","arguments":{"query":"orders"},"_meta":{}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		"[" + call + "]",
	} {
		f.Add(seed)
	}
	o, ho := fastPathServer(f)
	fast, sdk := handler(o, ho, true), handler(o, ho, false)
	f.Fuzz(func(t *testing.T, body string) {
		same(t, post(fast, body, nil), post(sdk, body, nil))
	})
}

func fastPathServer(tb testing.TB) (Options, *HandlerOptions) {
	s, e := retrievaltest.MustAcceptance(tb)
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, FirewallMode: ingestd.ModeEnforce, Installations: retrievaltest.Installations()})
	if err != nil {
		tb.Fatal(err)
	}
	return Options{Retriever: svc}, &HandlerOptions{MaxBodyBytes: 1 << 16}
}

func post(h http.Handler, body string, hdr http.Header) *httptest.ResponseRecorder {
	r := httptest.NewRequest("POST", "/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	r.Header.Set("X-Request-Id", "req-test") // else each answer names a random one
	for k, v := range hdr {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func same(t *testing.T, fast, sdk *httptest.ResponseRecorder) {
	t.Helper()
	if fast.Code != sdk.Code || fast.Header().Get("Content-Type") != sdk.Header().Get("Content-Type") {
		t.Fatalf("fast path %d %q, SDK %d %q", fast.Code, fast.Header().Get("Content-Type"), sdk.Code, sdk.Header().Get("Content-Type"))
	}
	var f, s any
	if err := json.Unmarshal(fast.Body.Bytes(), &f); err != nil {
		if !bytes.Equal(fast.Body.Bytes(), sdk.Body.Bytes()) {
			t.Fatalf("fast path %q, SDK %q", fast.Body.Bytes(), sdk.Body.Bytes())
		}
		return
	}
	if err := json.Unmarshal(sdk.Body.Bytes(), &s); err != nil {
		t.Fatalf("SDK answer is not JSON: %v: %.300s", err, sdk.Body.Bytes())
	}
	if !reflect.DeepEqual(f, s) {
		a, b := fast.Body.Bytes(), sdk.Body.Bytes()
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		from := max(0, i-200)
		t.Fatalf("answers differ at byte %d:\nfast …%.400s\nSDK  …%.400s", i, a[from:], b[from:])
	}
}
