package api_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/gateway"
)

type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestGatewayOnMCPKeepsTheSessionsTaint: with the gateway installed,
// /mcp keeps sessions, so a blocking retrieve in one request taints the
// write of the next; the scoped retriever still sees the token of each
// request, and a token limited to trusted installations is not tainted.
func TestGatewayOnMCPKeepsTheSessionsTaint(t *testing.T) {
	upstream := mcp.NewServer(&mcp.Implementation{Name: "crm", Version: "1"}, nil)
	var mu sync.Mutex
	sent := 0
	upstream.AddTool(&mcp.Tool{Name: "send_mail", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		sent++
		mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sent"}}}, nil
	})
	g, err := gateway.Open(t.Context(), gateway.Options{Upstreams: []gateway.Upstream{{
		ID: "crm", Tools: map[string]gateway.Tool{"send_mail": {Class: ingestd.ToolWrite, Output: gateway.OutputTrusted}},
		Connect: func(ctx context.Context) (mcp.Transport, error) {
			ct, st := mcp.NewInMemoryTransports()
			_, err := upstream.Connect(ctx, st, nil)
			return ct, err
		},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	e := MustServe(t, ingestd.ModeEnforce, api.Options{MCPExtension: g, Tokens: []api.Token{
		{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
		{Name: "desk", Token: scopedToken, Scopes: []string{api.ScopeRetrieve}, Installations: []string{"handbook"}},
	}})
	host := func(token string) *mcp.ClientSession {
		tr := &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp", HTTPClient: &http.Client{Transport: bearerRT{token}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(t.Context(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	for _, tc := range []struct {
		token   string
		refused bool
	}{{chatToken, true}, {scopedToken, false}} {
		cs := host(tc.token)
		if cs.ID() == "" {
			t.Fatal("/mcp with the gateway kept no session")
		}
		if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "retrieve", Arguments: map[string]any{"query": "refund wire transfer"}}); err != nil {
			t.Fatal(err)
		}
		r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "crm__send_mail", Arguments: map[string]any{"to": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		got := r.Content[0].(*mcp.TextContent).Text
		if r.IsError != tc.refused || tc.refused && !strings.Contains(got, "refused in this turn") {
			t.Fatalf("token %.4s…: send_mail = %q (error %v), want refused %v", tc.token, got, r.IsError, tc.refused)
		}
	}
	if sent != 1 {
		t.Fatalf("upstream saw %d sends, want 1 (the untainted session's)", sent)
	}
}
