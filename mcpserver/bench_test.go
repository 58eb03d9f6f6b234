package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// canned answers every call with one answer computed up front, so a
// benchmark times the transport and not the store.
type canned struct{ resp *ingestd.RetrieveResponse }

func (c canned) Retrieve(context.Context, ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error) {
	return c.resp, nil
}

func (c canned) Provenance(context.Context, ingestd.ProvenanceRequest) (ingestd.ProvenanceReport, error) {
	return ingestd.ProvenanceReport{}, ingestd.Errorf(ingestd.EINVALID, "not served")
}

// BenchmarkServeRetrieveMCPvsREST isolates the server's own cost of
// answering retrieve over MCP from the retrieval: one answer of the
// acceptance corpus (hits in all three blocks) is served, interleaved,
// as the REST route reads the request and writes the answer (a strict
// json.Decoder, json.Marshal of the answer) and through
// Handler as a tools/call on Streamable HTTP (a stateless session, the
// SDK decoding the request and encoding the result), into a recorder, no
// network. mcp/rest is MCP's cost as a multiple of the REST route's own
// work; the retrieval both share, the network and the client are left
// out. bytes-mcp/rest is the size of the MCP response over the REST body.
//
//	go test ./mcpserver -run XXX -bench ServeRetrieveMCPvsREST
func BenchmarkServeRetrieveMCPvsREST(b *testing.B) {
	s, e := retrievaltest.MustAcceptance(b)
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, FirewallMode: ingestd.ModeEnforce, Installations: retrievaltest.Installations()})
	if err != nil {
		b.Fatal(err)
	}
	resp, err := svc.Retrieve(b.Context(), ingestd.RetrieveRequest{Query: "database migration plan orders"})
	if err != nil {
		b.Fatal(err)
	}
	if len(resp.Primary) == 0 || len(resp.Expanded) == 0 || len(resp.Rejected) == 0 {
		b.Fatalf("the answer should fill all three blocks: %d, %d, %d", len(resp.Primary), len(resp.Expanded), len(resp.Rejected))
	}
	h := handler(Options{Retriever: canned{resp}}, nil, true)
	sdk := handler(Options{Retriever: canned{resp}}, nil, false)
	query := `{"query":"database migration plan orders"}`
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"retrieve","arguments":` + query + `}}`
	var rest, overMCP, overSDK time.Duration
	var restBytes, mcpBytes int
	for b.Loop() {
		start := time.Now()
		var in ingestd.RetrieveRequest
		dec := json.NewDecoder(strings.NewReader(query))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			b.Fatal(err)
		}
		w := httptest.NewRecorder()
		body, err := json.Marshal(resp)
		if err != nil {
			b.Fatal(err)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(append(body, '\n'))
		mid := time.Now()
		m := serveCall(b, h, call)
		end := time.Now()
		serveCall(b, sdk, call)
		rest += mid.Sub(start)
		overMCP += end.Sub(mid)
		overSDK += time.Since(end)
		restBytes, mcpBytes = w.Body.Len(), m.Body.Len()
	}
	b.ReportMetric(float64(rest.Nanoseconds())/float64(b.N)/1e3, "rest-µs/op")
	b.ReportMetric(float64(overMCP.Nanoseconds())/float64(b.N)/1e3, "mcp-µs/op")
	b.ReportMetric(float64(overMCP)/float64(rest), "mcp/rest")
	b.ReportMetric(float64(overSDK)/float64(rest), "sdk/rest")
	b.ReportMetric(float64(mcpBytes)/float64(restBytes), "bytes-mcp/rest")
}

func serveCall(b *testing.B, h http.Handler, call string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("POST", "/mcp", strings.NewReader(call))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	m := httptest.NewRecorder()
	h.ServeHTTP(m, req)
	if m.Code != http.StatusOK || !bytes.Contains(m.Body.Bytes(), []byte(`"structuredContent"`)) {
		b.Fatalf("MCP: %d %.200s", m.Code, m.Body.Bytes())
	}
	return m
}
