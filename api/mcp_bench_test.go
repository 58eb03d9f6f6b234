package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
)

// benchQueries land in every block of the acceptance corpus: the primary
// hits, expansion into an issue's comments, a rejected proposal.
var benchQueries = []string{
	"refund by wire transfer",
	"flaky scheduler test timezone",
	"database migration plan orders",
	"deploy runbook rollback",
}

// BenchmarkRetrieveMCPvsREST times the same retrievals over REST (POST
// /v1/retrieve) and over MCP (the retrieve tool on /mcp, Streamable HTTP),
// interleaved in one loop against one server, and reports MCP's time as a
// multiple of REST's (mcp/rest). Each side decodes the whole answer, as
// a client does: the REST body into an ingestd.RetrieveResponse, the MCP
// result by the go-sdk's client.
//
//	go test ./api -run XXX -bench RetrieveMCPvsREST -benchtime 2000x
func BenchmarkRetrieveMCPvsREST(b *testing.B) {
	e := MustServe(b, ingestd.ModeEnforce, api.Options{Tokens: []api.Token{{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}}}})
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	b.Cleanup(tr.CloseIdleConnections)
	s, err := c.Connect(b.Context(), &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerOver{chatToken, tr}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var rest, overMCP, overRaw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := benchQueries[i%len(benchQueries)]
		start := time.Now()
		status, body, _ := e.do(b, "POST", "/v1/retrieve", chatToken, map[string]string{"query": q})
		var resp ingestd.RetrieveResponse
		if err := json.Unmarshal(body, &resp); status != http.StatusOK || err != nil {
			b.Fatalf("REST: %d %v", status, err)
		}
		mid := time.Now()
		res, err := s.CallTool(b.Context(), &mcp.CallToolParams{Name: "retrieve", Arguments: map[string]string{"query": q}})
		if err != nil || res.IsError {
			b.Fatalf("MCP: %v %+v", err, res)
		}
		end := time.Now()
		rawCall(b, e, q)
		rest += mid.Sub(start)
		overMCP += end.Sub(mid)
		overRaw += time.Since(end)
	}
	b.ReportMetric(float64(rest.Microseconds())/float64(b.N), "rest-µs/op")
	b.ReportMetric(float64(overMCP.Microseconds())/float64(b.N), "mcp-µs/op")
	b.ReportMetric(float64(overMCP)/float64(rest), "mcp/rest")
	b.ReportMetric(float64(overRaw)/float64(rest), "mcp-raw/rest")
}

// rawCall is one tools/call POSTed as JSON-RPC without an SDK, its
// result decoded with encoding/json as the REST side decodes its body:
// the server's share of the cost, without the go-sdk client's decoding.
func rawCall(b *testing.B, e *env, q string) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "retrieve", "arguments": map[string]string{"query": q}}})
	req, err := http.NewRequestWithContext(b.Context(), "POST", e.URL+"/mcp", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	req.Header.Set("Authorization", "Bearer "+chatToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent ingestd.RetrieveResponse   `json:"structuredContent"`
			Meta              map[string]ingestd.Verdict `json:"_meta"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.Result.StructuredContent.Verdict == nil {
		b.Fatalf("raw MCP call: %d %v", resp.StatusCode, err)
	}
}

// bearerOver sends a token over a transport.
type bearerOver struct {
	token string
	next  http.RoundTripper
}

func (b bearerOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
