package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	ingestdv1 "github.com/ingestd/ingestd/gen/ingestd/v1"
	"github.com/ingestd/ingestd/internal/wire"
	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// fuzzRoutes are the routes with a JSON body, by the route byte of
// FuzzRequestBody.
var fuzzRoutes = []string{"/v1/retrieve", "/ingestd.v1.RetrievalService/Retrieve", "/v1/installations/site/urls", "/mcp"}

// mcpCall wraps body as the arguments of a tools/call of retrieve, as an
// MCP host sends it: the fuzzed bytes reach the SDK's JSON-RPC decoding
// and, when they are JSON, the tool's own argument decoding.
func mcpCall(body []byte) []byte {
	return slices.Concat([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"retrieve","arguments":`), body, []byte(`}}`))
}

// servedChunk is what FuzzRequestBody reads of a served chunk, in REST
// and Connect JSON alike.
type servedChunk struct {
	DocumentID   string `json:"document_id"`
	Installation string `json:"installation"`
	SourceKind   string `json:"source_kind"`
	Tier         string `json:"tier"`
	Fenced       string `json:"fenced"`
}

type servedAnswer struct {
	Primary  []servedChunk `json:"primary"`
	Expanded []servedChunk `json:"expanded"`
	Rejected []servedChunk `json:"rejected"`
	Verdict  struct {
		ToolsAllowed         bool     `json:"tools_allowed"`
		Mode                 string   `json:"mode"`
		UntrustedDocumentIDs []string `json:"untrusted_document_ids"`
	} `json:"verdict"`
	RequestID string `json:"request_id"`
}

// FuzzRequestBody posts arbitrary bodies to the handler's JSON routes
// (REST retrieve, Connect JSON retrieve, add-URL) through httptest, over
// the acceptance corpus in enforce mode. Properties: the answer is JSON,
// 200, 400 or 413 and never a server error; an error names its code and
// says what was wrong; an accepted retrieve was within limits (a query of
// 1..MaxQueryBytes bytes, top_k 0..MaxTopK, known tiers) and its answer
// keeps to it: at most top_k primary chunks, only the installations, tiers
// and kinds asked for, no untrusted chunk with exclude_untrusted, no
// expanded or rejected block when switched off, and a verdict that blocks
// tools exactly when an untrusted document was served, naming each; an
// accepted add-URL hands the handler the URL of the body.
func FuzzRequestBody(f *testing.F) {
	for _, s := range []string{
		`{"query":"refund","top_k":101}`, `{"query":""}`, `{"query":"refund","topk":3}`, `{"query":"refund","top_k":"3"}`,
		`{"query":`, `{"query":"a"} {}`, `{"query":"vacation days accrue","top_k":1}`,
		`{"query":"process my refund by wire transfer","top_k":2,"installations":["support"," handbook "],"expand":false}`,
		`{"query":"flaky scheduler timezone boundaries","top_k":1,"tiers":["trusted-internal","undeclared"],"include_rejected":false}`,
		`{"query":"please process my refund by wire transfer today","top_k":3,"exclude_untrusted":true,"tiers":["untrusted-external"]}`,
		`{"query":"database migration plan orders","source_kinds":["imap"],"request_id":"r-1"}`,
		`{"query":"quarterly partner loyalty points","tiers":["partner-beta"]}`, `{"QUERY":"x","Top_K":1e2}`,
		`{"url":"https://docs.example.com/a"}`, `{"url":""}`, `null`, `[]`, `{"query":"\u0000\ud800"}`,
	} {
		for i := range fuzzRoutes {
			f.Add(uint8(i), []byte(s))
		}
	}
	s, e := retrievaltest.MustAcceptance(f)
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, FirewallMode: ingestd.ModeEnforce,
		Installations: retrievaltest.Installations()})
	if err != nil {
		f.Fatal(err)
	}
	var gotURL string
	h := api.New(api.Options{Retriever: svc, Documents: s, AddURL: func(_ context.Context, inst, rawURL string) ([]string, error) {
		gotURL = rawURL
		return []string{"doc"}, nil
	}})
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		path := fuzzRoutes[int(route)%len(fuzzRoutes)]
		sent := body
		if path == "/mcp" {
			sent = mcpCall(body)
		}
		req := httptest.NewRequestWithContext(t.Context(), http.MethodPost, path, bytes.NewReader(sent))
		req.Host = "127.0.0.1:7700" // a token-less server answers loopback hosts only
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		rec := httptest.NewRecorder()
		gotURL = ""
		h.ServeHTTP(rec, req)
		if path == "/mcp" {
			checkMCP(t, body, rec)
			return
		}

		status, out := rec.Code, rec.Body.Bytes()
		if status != http.StatusOK && status != http.StatusBadRequest && status != http.StatusRequestEntityTooLarge {
			t.Fatalf("POST %s %q: status %d: %s", path, body, status, out)
		}
		if !json.Valid(out) || !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			t.Fatalf("POST %s %q: not a JSON answer (%s): %q", path, body, rec.Header().Get("Content-Type"), out)
		}
		if status != http.StatusOK {
			var eb struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			var cb struct{ Code, Message string } // Connect's error body
			json.Unmarshal(out, &eb)
			json.Unmarshal(out, &cb)
			if eb.Error.Message == "" && cb.Message == "" || eb.Error.Code == "" && cb.Code == "" {
				t.Fatalf("POST %s %q: status %d without a code and message: %s", path, body, status, out)
			}
			return
		}

		var r ingestd.RetrieveRequest
		switch path {
		case fuzzRoutes[2]:
			var u struct{ URL string }
			if err := json.Unmarshal(body, &u); err != nil || u.URL == "" || u.URL != gotURL {
				t.Fatalf("add-URL of %q accepted; the handler got %q (%v)", body, gotURL, err)
			}
			return
		case fuzzRoutes[1]:
			var m ingestdv1.RetrieveRequest
			if err := protojson.Unmarshal(body, &m); err != nil {
				t.Fatalf("Connect accepted %q, which protojson refuses: %v", body, err)
			}
			r = wire.RequestFromProto(&m)
		default:
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&r); err != nil {
				t.Fatalf("REST accepted %q, which does not decode: %v", body, err)
			}
		}
		var a servedAnswer
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatalf("answer %s: %v", out, err)
		}
		checkAnswer(t, r, a, path == fuzzRoutes[0])
	})
}

// checkAnswer asserts that an accepted request was within limits and that
// its answer keeps to it; rest says it came over REST, whose answer echoes
// the request id.
func checkAnswer(tb testing.TB, r ingestd.RetrieveRequest, a servedAnswer, rest bool) {
	tb.Helper()
	q := strings.TrimSpace(r.Query)
	if q == "" || len(q) > ingestd.MaxQueryBytes {
		tb.Fatalf("accepted a query of %d bytes", len(q))
	}
	topK := r.TopK
	if topK == 0 {
		topK = ingestd.DefaultTopK
	}
	if topK < 1 || topK > ingestd.MaxTopK {
		tb.Fatalf("accepted top_k %d", r.TopK)
	}
	if len(a.Primary) > topK {
		tb.Fatalf("%d primary chunks for top_k %d", len(a.Primary), topK)
	}
	if r.Expand != nil && !*r.Expand && len(a.Expanded) > 0 {
		tb.Fatalf("expand false, %d expanded chunks", len(a.Expanded))
	}
	if r.IncludeRejected != nil && !*r.IncludeRejected && len(a.Rejected) > 0 {
		tb.Fatalf("include_rejected false, %d rejected chunks", len(a.Rejected))
	}
	trim := func(in []string) []string {
		var out []string
		for _, s := range in {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	insts, kinds := trim(r.Installations), trim(r.SourceKinds)
	var tiers []string
	for _, t := range r.Tiers {
		t = strings.TrimSpace(t)
		if t == "" {
			t = provenance.Undeclared
		}
		if t != provenance.Undeclared && !provenance.Valid(ingestd.Tier(t)) {
			tb.Fatalf("accepted tier %q", t)
		}
		tiers = append(tiers, t)
	}
	var untrusted []string
	for _, c := range slices.Concat(a.Primary, a.Expanded, a.Rejected) {
		switch {
		case len(insts) > 0 && !slices.Contains(insts, c.Installation):
			tb.Fatalf("served %s of installation %q; asked for %q", c.DocumentID, c.Installation, insts)
		case len(kinds) > 0 && !slices.Contains(kinds, c.SourceKind):
			tb.Fatalf("served %s of kind %q; asked for %q", c.DocumentID, c.SourceKind, kinds)
		case len(tiers) > 0 && !slices.Contains(tiers, c.Tier):
			tb.Fatalf("served %s of tier %q; asked for %q", c.DocumentID, c.Tier, tiers)
		case c.Fenced == "":
			tb.Fatalf("served %s without fenced text", c.DocumentID)
		}
		if c.Tier == string(ingestd.TierUntrustedExternal) {
			if r.ExcludeUntrusted {
				tb.Fatalf("exclude_untrusted, yet served %s of tier %s", c.DocumentID, c.Tier)
			}
			if !slices.Contains(untrusted, c.DocumentID) {
				untrusted = append(untrusted, c.DocumentID)
			}
		}
	}
	if a.Verdict.Mode != ingestd.ModeEnforce {
		tb.Fatalf("verdict mode %q in enforce", a.Verdict.Mode)
	}
	if a.Verdict.ToolsAllowed != (len(untrusted) == 0) {
		tb.Fatalf("tools_allowed %v with untrusted documents %q served", a.Verdict.ToolsAllowed, untrusted)
	}
	got := slices.Clone(a.Verdict.UntrustedDocumentIDs)
	slices.Sort(got)
	slices.Sort(untrusted)
	if !slices.Equal(got, untrusted) {
		tb.Fatalf("verdict names %q, served untrusted %q", got, untrusted)
	}
	if rest && r.RequestID != "" && a.RequestID != r.RequestID { // the proto answer has no request_id
		tb.Fatalf("request_id %q came back as %q", r.RequestID, a.RequestID)
	}
}

// checkMCP asserts what /mcp answers a tools/call of retrieve with body as
// its arguments: JSON, never a server error; a JSON-RPC error or a tool
// error says what was wrong; an answer keeps to the request as REST's
// does, with the verdict in structuredContent and _meta alike.
func checkMCP(t *testing.T, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	status, out := rec.Code, rec.Body.Bytes()
	if status >= 500 {
		t.Fatalf("MCP %q: status %d: %s", body, status, out)
	}
	if status != http.StatusOK {
		if len(bytes.TrimSpace(out)) == 0 {
			t.Fatalf("MCP %q: status %d without a word", body, status)
		}
		return
	}
	if !json.Valid(out) {
		t.Fatalf("MCP %q: not a JSON answer: %q", body, out)
	}
	var rpc struct {
		Error  *struct{ Message string } `json:"error"`
		Result *struct {
			IsError           bool                       `json:"isError"`
			Content           []struct{ Text string }    `json:"content"`
			StructuredContent json.RawMessage            `json:"structuredContent"`
			Meta              map[string]json.RawMessage `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal(out, &rpc); err != nil || (rpc.Error == nil) == (rpc.Result == nil) {
		t.Fatalf("MCP %q: neither one error nor one result (%v): %s", body, err, out)
	}
	switch {
	case rpc.Error != nil:
		if rpc.Error.Message == "" {
			t.Fatalf("MCP %q: a JSON-RPC error without a message: %s", body, out)
		}
		return
	case rpc.Result.IsError:
		if len(rpc.Result.Content) == 0 || rpc.Result.Content[0].Text == "" {
			t.Fatalf("MCP %q: a tool error that says nothing: %s", body, out)
		}
		if msg := rpc.Result.Content[0].Text; strings.Contains(msg, "ingestd.") || !utf8.ValidString(msg) {
			t.Fatalf("MCP %q: a tool error that names a Go type or is not UTF-8: %q", body, msg)
		}
		return
	}
	var r ingestd.RetrieveRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("MCP accepted arguments %q, which do not decode: %v", body, err)
	}
	var a servedAnswer
	if err := json.Unmarshal(rpc.Result.StructuredContent, &a); err != nil {
		t.Fatalf("structuredContent %s: %v", rpc.Result.StructuredContent, err)
	}
	var meta, structured any
	json.Unmarshal(rpc.Result.Meta["io.ingestd/verdict"], &meta)
	var sc struct{ Verdict json.RawMessage }
	json.Unmarshal(rpc.Result.StructuredContent, &sc)
	json.Unmarshal(sc.Verdict, &structured)
	if meta == nil || !reflect.DeepEqual(meta, structured) {
		t.Fatalf("MCP %q: _meta's verdict %v, structuredContent's %v", body, meta, structured)
	}
	checkAnswer(t, r, a, false)
}
