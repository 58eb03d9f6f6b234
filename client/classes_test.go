package client_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/client"
)

// Graded verdicts as the server writes them.
const (
	gradedAllow   = `{"tools_allowed":true,"mode":"enforce","reason":"no_untrusted_grounding","untrusted_document_ids":[],"would_block":false,"allowed_tool_classes":["read","read_open","write"]}`
	gradedRead    = `{"tools_allowed":false,"mode":"enforce","reason":"untrusted_grounding","untrusted_document_ids":["d1"],"would_block":true,"allowed_tool_classes":["read"]}`
	gradedNone    = `{"tools_allowed":false,"mode":"enforce","reason":"unknown_provenance","untrusted_document_ids":["d1"],"would_block":true,"allowed_tool_classes":[]}`
	gradedShadow  = `{"tools_allowed":true,"mode":"shadow","reason":"untrusted_grounding","untrusted_document_ids":["d1"],"would_block":true,"allowed_tool_classes":["read","read_open","write"]}`
	gradedShadowU = `{"tools_allowed":true,"mode":"shadow","reason":"unknown_provenance","untrusted_document_ids":["d1"],"would_block":true,"allowed_tool_classes":["read","read_open","write"]}`
)

// hostTools is a host's tool list, declared as a host would.
var (
	hostTools = []string{"calendar_read", "fetch_url", "send_email", "new_tool"}
	declared  = client.Classes{"calendar_read": ingestd.ToolRead, "fetch_url": ingestd.ToolReadOpen, "send_email": ingestd.ToolWrite}
)

// TestGateByClass: per class, per condition of the verdict, on every
// reader (a Go verdict, a REST body, an MCP result). A tool the host did
// not declare (new_tool) is a write.
func TestGateByClass(t *testing.T) {
	tests := []struct {
		name    string
		verdict string
		want    []string
	}{
		{"no untrusted text: every class", gradedAllow, hostTools},
		{"untrusted text: closed reads only", gradedRead, []string{"calendar_read"}},
		{"unknown provenance: none", gradedNone, nil},
		{"shadow over untrusted text: every class", gradedShadow, hostTools},
		{"shadow over unknown provenance: every class", gradedShadowU, hostTools},
		{"off: every class", offJSON, hostTools},
		{"older server, allowed: every class", allowJSON, hostTools},
		{"older server, blocked: none", blockJSON, nil},
		{"read_open over untrusted text: refused", strings.Replace(gradedRead, `["read"]`, `["read","read_open"]`, 1), nil},
		{"write over untrusted text: refused", strings.Replace(gradedRead, `["read"]`, `["read","write"]`, 1), nil},
		{"read over unknown provenance: refused", strings.Replace(gradedNone, `[]`, `["read"]`, 1), nil},
		{"every class without tools_allowed: refused", strings.Replace(gradedRead, `["read"]`, `["read","read_open","write"]`, 1), nil},
		{"tools_allowed without every class: refused", strings.Replace(gradedAllow, `["read","read_open","write"]`, `["read"]`, 1), nil},
		{"out of order: refused", strings.Replace(gradedAllow, `["read","read_open","write"]`, `["write","read","read_open"]`, 1), nil},
		{"repeated class: refused", strings.Replace(gradedRead, `["read"]`, `["read","read"]`, 1), nil},
		{"unknown class: refused", strings.Replace(gradedRead, `["read"]`, `["read","admin"]`, 1), nil},
		{"classes null: refused", strings.Replace(gradedRead, `["read"]`, `null`, 1), nil},
		{"classes a string: refused", strings.Replace(gradedRead, `["read"]`, `"read"`, 1), nil},
		{"classes twice: refused", strings.Replace(gradedRead, `"allowed_tool_classes":["read"]`, `"allowed_tool_classes":[],"allowed_tool_classes":["read"]`, 1), nil},
	}
	classOf := declared.Of
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"primary":[],"verdict":` + tt.verdict + `}`
			if got := client.AllowedToolsByClassJSON([]byte(body), hostTools, classOf); !slices.Equal(got, tt.want) {
				v, err := client.VerdictFromJSON([]byte(body))
				t.Errorf("JSON: got %v, want %v (verdict %+v, %v; Validate %v)", got, tt.want, v, err, client.Validate(v))
			}
			res := mcpResult(tt.verdict, tt.verdict)
			if got := client.AllowedToolsByClassMCP(json.RawMessage(res), hostTools, classOf); !slices.Equal(got, tt.want) {
				t.Errorf("MCP: got %v, want %v", got, tt.want)
			}
			if v, err := client.VerdictFromJSON([]byte(body)); err == nil {
				if got := client.AllowedToolsByClass(v, hostTools, classOf); !slices.Equal(got, tt.want) {
					t.Errorf("Go: got %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestAllowsFailsClosed: no verdict allows no class, not even a read,
// unless FailOpen; FailOpen never widens a verdict that can be trusted.
func TestAllowsFailsClosed(t *testing.T) {
	for _, c := range []ingestd.ToolClass{ingestd.ToolRead, ingestd.ToolReadOpen, ingestd.ToolWrite, "", "admin"} {
		if client.Allows(nil, c) {
			t.Errorf("Allows(nil, %q) = true", c)
		}
		if !client.Allows(nil, c, client.FailOpen()) {
			t.Errorf("Allows(nil, %q, FailOpen) = false", c)
		}
	}
	v, err := client.VerdictFromJSON([]byte(`{"verdict":` + gradedRead + `}`))
	if err != nil {
		t.Fatal(err)
	}
	for c, want := range map[ingestd.ToolClass]bool{ingestd.ToolRead: true, ingestd.ToolReadOpen: false, ingestd.ToolWrite: false, "": false, "admin": false} {
		if got := client.Allows(v, c, client.FailOpen()); got != want {
			t.Errorf("Allows(read-only verdict, %q, FailOpen) = %v, want %v", c, got, want)
		}
	}
}

// TestUndeclaredToolIsWrite: the declaration's default.
func TestUndeclaredToolIsWrite(t *testing.T) {
	for name, want := range map[string]ingestd.ToolClass{
		"calendar_read": ingestd.ToolRead, "fetch_url": ingestd.ToolReadOpen, "send_email": ingestd.ToolWrite,
		"new_tool": ingestd.ToolWrite, "": ingestd.ToolWrite,
	} {
		if got := declared.Of(name); got != want {
			t.Errorf("Of(%q) = %q, want %q", name, got, want)
		}
	}
	if got := (client.Classes{"x": "readonly"}).Of("x"); got != ingestd.ToolWrite {
		t.Errorf("a tool declared with an unknown class is %q, want write", got)
	}
	if got := (client.Classes(nil)).Of("x"); got != ingestd.ToolWrite {
		t.Errorf("no declaration: %q, want write", got)
	}
}

// TestMCPAnnotationsNeverRaise: another MCP server's readOnlyHint and
// openWorldHint do not make its tool a read; destructiveHint can lower
// what the host declared.
func TestMCPAnnotationsNeverRaise(t *testing.T) {
	yes, no := true, false
	closed := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no, DestructiveHint: &no}
	tests := []struct {
		name string
		tool *mcp.Tool
		decl client.Classes
		want ingestd.ToolClass
	}{
		{"undeclared, claims closed read-only", &mcp.Tool{Name: "lookup", Annotations: closed}, nil, ingestd.ToolWrite},
		{"declared write, claims closed read-only", &mcp.Tool{Name: "lookup", Annotations: closed}, client.Classes{"lookup": ingestd.ToolWrite}, ingestd.ToolWrite},
		{"declared read_open, claims closed read-only", &mcp.Tool{Name: "lookup", Annotations: closed}, client.Classes{"lookup": ingestd.ToolReadOpen}, ingestd.ToolReadOpen},
		{"declared read, no annotations", &mcp.Tool{Name: "lookup"}, client.Classes{"lookup": ingestd.ToolRead}, ingestd.ToolRead},
		{"declared read, says open world (returns outside text)", &mcp.Tool{Name: "retrieve", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &yes}}, client.Classes{"retrieve": ingestd.ToolRead}, ingestd.ToolRead},
		{"declared read, says destructive", &mcp.Tool{Name: "lookup", Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}}, client.Classes{"lookup": ingestd.ToolRead}, ingestd.ToolWrite},
		{"nil tool", nil, client.Classes{"": ingestd.ToolRead}, ingestd.ToolWrite},
	}
	for _, tt := range tests {
		if got := client.MCPToolClass(tt.decl, tt.tool); got != tt.want {
			t.Errorf("%s: MCPToolClass = %q, want %q", tt.name, got, tt.want)
		}
	}
	// Through the gate: after untrusted text, only the declared closed read is kept.
	tools := []*mcp.Tool{
		{Name: "calendar_read"},
		{Name: "lookup", Annotations: closed},
		{Name: "fetch_url", Annotations: closed},
	}
	got := client.AllowedMCPTools(json.RawMessage(mcpResult(gradedRead, gradedRead)), tools, declared)
	if len(got) != 1 || got[0].Name != "calendar_read" {
		var names []string
		for _, t := range got {
			names = append(names, t.Name)
		}
		t.Errorf("AllowedMCPTools = %v, want [calendar_read]", names)
	}
}

// TestMCPVerdictsMustAgreeOnClasses: the two copies of the verdict in an
// MCP result differ when only their classes do.
func TestMCPVerdictsMustAgreeOnClasses(t *testing.T) {
	less := strings.Replace(gradedRead, `["read"]`, `[]`, 1)
	if _, err := client.VerdictFromMCP([]byte(mcpResult(gradedRead, less))); err == nil || !strings.Contains(err.Error(), "differ") {
		t.Errorf("VerdictFromMCP = %v, want the verdicts to differ", err)
	}
	noField := `{"tools_allowed":false,"mode":"enforce","reason":"untrusted_grounding","untrusted_document_ids":["d1"],"would_block":true}`
	if _, err := client.VerdictFromMCP([]byte(mcpResult(gradedRead, noField))); err == nil {
		t.Error("VerdictFromMCP accepted one verdict with classes and one without")
	}
}

// A host declares its tools' classes; after untrusted text only its
// closed-world reads are offered, and a tool it forgot to declare is a
// write.
func ExampleAllowedToolsByClass() {
	declared := client.Classes{"lookup_order": ingestd.ToolRead, "fetch_url": ingestd.ToolReadOpen, "issue_refund": ingestd.ToolWrite}
	tools := []string{"lookup_order", "fetch_url", "issue_refund", "undeclared"}
	for _, body := range []string{`{"verdict":` + gradedAllow + `}`, `{"verdict":` + gradedRead + `}`, `{"verdict":` + gradedNone + `}`} {
		v, _ := client.VerdictFromJSON([]byte(body))
		fmt.Println(v.Reason, client.AllowedToolsByClass(v, tools, declared.Of))
	}
	// Output:
	// no_untrusted_grounding [lookup_order fetch_url issue_refund undeclared]
	// untrusted_grounding [lookup_order]
	// unknown_provenance []
}
