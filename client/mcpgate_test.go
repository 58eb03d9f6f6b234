package client_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/client"
)

const (
	blocked = `{"tools_allowed":false,"mode":"enforce","reason":"untrusted_grounding","untrusted_document_ids":["d1"],"would_block":true}`
	allowed = `{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false}`
)

// mcpResult is a tools/call result as ingestd's MCP server writes it,
// with the two verdicts given.
func mcpResult(structured, meta string) string {
	return `{"content":[{"type":"text","text":"ingestd verdict: ..."}],` +
		`"structuredContent":{"primary":[],"expanded":[],"rejected":[],"verdict":` + structured + `,"excluded_untrusted_documents":0,"request_id":"r"},` +
		`"_meta":{"io.ingestd/verdict":` + meta + `}}`
}

func TestVerdictFromMCP(t *testing.T) {
	tools := []string{"transfer_money"}
	tests := []struct {
		name    string
		result  string
		want    bool // tools kept
		wantErr string
	}{
		{name: "allowed in both", result: mcpResult(allowed, allowed), want: true},
		{name: "blocked in both", result: mcpResult(blocked, blocked)},
		{name: "meta says blocked, structured allowed", result: mcpResult(allowed, blocked), wantErr: "differ"},
		{name: "meta says allowed, structured blocked", result: mcpResult(blocked, allowed), wantErr: "differ"},
		{name: "ids differ", result: mcpResult(blocked, strings.Replace(blocked, `"d1"`, `"d2"`, 1)), wantErr: "differ"},
		{name: "no meta", result: `{"content":[],"structuredContent":{"verdict":` + allowed + `}}`, wantErr: "no verdict in _meta"},
		{name: "meta without the key", result: `{"content":[],"structuredContent":{"verdict":` + allowed + `},"_meta":{"other":1}}`, wantErr: "no verdict in _meta"},
		{name: "no structured content", result: `{"content":[],"_meta":{"io.ingestd/verdict":` + allowed + `}}`, wantErr: "no structuredContent"},
		{name: "structured without verdict", result: `{"structuredContent":{"primary":[]},"_meta":{"io.ingestd/verdict":` + allowed + `}}`, wantErr: "no verdict"},
		{name: "error result", result: `{"content":[{"type":"text","text":"forbidden"}],"isError":true}`, wantErr: "isError"},
		{name: "error result with verdicts", result: strings.Replace(mcpResult(allowed, allowed), `{"content"`, `{"isError":true,"content"`, 1), wantErr: "isError"},
		{name: "meta key twice", result: strings.Replace(mcpResult(blocked, blocked), `"_meta":{`, `"_meta":{"io.ingestd/verdict":`+allowed+`,`, 1), wantErr: "twice"},
		{name: "meta key in another case", result: strings.Replace(mcpResult(allowed, allowed), `"_meta":{`, `"_meta":{"IO.ingestd/Verdict":`+blocked+`,`, 1), wantErr: "another parser"},
		{name: "structuredContent twice", result: strings.Replace(mcpResult(allowed, allowed), `{"content"`, `{"structuredContent":{"verdict":`+blocked+`},"content"`, 1), wantErr: "twice"},
		{name: "structuredContent in another case", result: strings.Replace(mcpResult(allowed, allowed), `{"content"`, `{"StructuredContent":{"verdict":`+blocked+`},"content"`, 1), wantErr: "another parser"},
		{name: "meta verdict with an unknown field", result: mcpResult(allowed, strings.Replace(allowed, `{`, `{"tools_allowed_override":true,`, 1)), wantErr: "unknown field"},
		{name: "meta verdict missing a field", result: mcpResult(allowed, `{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[]}`), wantErr: "missing"},
		{name: "trailing data", result: mcpResult(allowed, allowed) + `{}`, wantErr: "after"},
		{name: "not an object", result: `[]`, wantErr: "not a JSON object"},
		{name: "agreeing but contradicting itself", result: mcpResult(strings.Replace(blocked, `false`, `true`, 1), strings.Replace(blocked, `false`, `true`, 1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := client.VerdictFromMCP([]byte(tt.result))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("VerdictFromMCP = %+v, %v; want an error with %q", v, err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("VerdictFromMCP: %v", err)
			}
			got := client.AllowedToolsMCP(json.RawMessage(tt.result), tools)
			if tt.want != slices.Equal(got, tools) || !tt.want && len(got) != 0 {
				t.Errorf("AllowedToolsMCP = %v, want kept=%v", got, tt.want)
			}
		})
	}
}

// TestVerdictFromMCPSDKResult reads the go-sdk's decoded result, as an
// agent loop holds it.
func TestVerdictFromMCPSDKResult(t *testing.T) {
	for _, tc := range []struct {
		structured, meta string
		want             bool
	}{{allowed, allowed, true}, {blocked, blocked, false}, {allowed, blocked, false}} {
		var res mcp.CallToolResult
		if err := json.Unmarshal([]byte(mcpResult(tc.structured, tc.meta)), &res); err != nil {
			t.Fatal(err)
		}
		got := client.AllowedToolsMCP(&res, []string{"t"})
		if (len(got) == 1) != tc.want {
			t.Errorf("structured %s, meta %s: AllowedToolsMCP = %v, want kept=%v", tc.structured, tc.meta, got, tc.want)
		}
	}
	if got := client.AllowedToolsMCP(nil, []string{"t"}); got != nil {
		t.Errorf("AllowedToolsMCP(nil) = %v, want none", got)
	}
	if _, err := client.VerdictFromMCP(&mcp.CallToolResult{IsError: true}); err == nil {
		t.Error("VerdictFromMCP(isError) = nil error")
	}
	var _ = ingestd.MCPVerdictKey
}
