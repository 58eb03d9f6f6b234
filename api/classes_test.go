package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/client"
)

// TestGradedVerdictOnEverySurface: the verdict's tool classes, and the
// report's policy line, as REST, Connect JSON, gRPC and MCP carry them,
// in enforce and shadow mode, for a turn with and one without untrusted
// grounding; and the host's gate over each keeps exactly the tools of
// those classes (a closed read after untrusted text, nothing more).
func TestGradedVerdictOnEverySurface(t *testing.T) {
	tools := []string{"calendar_read", "fetch_url", "send_email", "undeclared"}
	decl := client.Classes{"calendar_read": ingestd.ToolRead, "fetch_url": ingestd.ToolReadOpen, "send_email": ingestd.ToolWrite}
	queries := map[string]ingestd.RetrieveRequest{
		"clean":     {Query: "vacation days accrue", TopK: 1},
		"untrusted": {Query: "process my refund by wire transfer", TopK: 2},
	}
	for _, mode := range []string{ingestd.ModeEnforce, ingestd.ModeShadow} {
		e := MustServe(t, mode, api.Options{})
		grpc := client.New(e.URL, &client.Options{HTTPClient: e.H2C, GRPC: true})
		sess, _ := mcpSession(t, e, "")
		for name, q := range queries {
			t.Run(mode+"/"+name, func(t *testing.T) {
				wantClasses, wantTools := ingestd.AllToolClasses(), tools
				wantReason := ingestd.ReasonNoUntrusted
				if name == "untrusted" {
					wantReason = ingestd.ReasonUntrusted
					if mode == ingestd.ModeEnforce {
						wantClasses, wantTools = ingestd.ToolClasses{ingestd.ToolRead}, []string{"calendar_read"}
					}
				}
				check := func(surface string, v *ingestd.Verdict, gated []string) {
					t.Helper()
					if v == nil {
						t.Fatalf("%s: no verdict", surface)
					}
					if v.Reason != wantReason || !slices.Equal(v.AllowedToolClasses, wantClasses) {
						t.Errorf("%s: reason %s, classes %v; want %s, %v", surface, v.Reason, v.AllowedToolClasses, wantReason, wantClasses)
					}
					if !slices.Equal(gated, wantTools) {
						t.Errorf("%s: gate kept %v, want %v", surface, gated, wantTools)
					}
				}
				for _, path := range []string{"/v1/retrieve", "/ingestd.v1.RetrievalService/Retrieve"} {
					status, body, _ := e.do(t, "POST", path, "", q)
					if status != http.StatusOK {
						t.Fatalf("%s: %d %s", path, status, body)
					}
					v, err := client.VerdictFromJSON(body)
					if err != nil {
						t.Fatalf("%s: %v", path, err)
					}
					check(path, v, client.AllowedToolsByClassJSON(body, tools, decl.Of))
				}
				resp, err := grpc.Retrieve(t.Context(), q)
				if err != nil {
					t.Fatal(err)
				}
				check("gRPC", resp.Verdict, client.AllowedToolsByClass(resp.Verdict, tools, decl.Of))

				res, err := sess.CallTool(t.Context(), &mcp.CallToolParams{Name: "retrieve", Arguments: q})
				if err != nil {
					t.Fatal(err)
				}
				raw, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				v, err := client.VerdictFromMCP(raw)
				if err != nil {
					t.Fatalf("MCP: %v", err)
				}
				check("MCP", v, client.AllowedToolsByClassMCP(raw, tools, decl.Of))
			})
		}
		t.Run(mode+"/report", func(t *testing.T) {
			want := ingestd.AllToolClasses()
			if mode == ingestd.ModeEnforce {
				want = ingestd.ToolClasses{ingestd.ToolRead}
			}
			status, body, _ := e.do(t, "GET", "/v1/provenance", "", nil)
			if status != http.StatusOK {
				t.Fatalf("REST: %d %s", status, body)
			}
			var rep ingestd.ProvenanceReport
			if err := json.Unmarshal(body, &rep); err != nil {
				t.Fatal(err)
			}
			if got := rep.Policy.UntrustedTurnToolClasses; !slices.Equal(got, want) {
				t.Errorf("REST policy classes %v, want %v", got, want)
			}
			g, err := grpc.Provenance(t.Context(), ingestd.ProvenanceRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Policy.UntrustedTurnToolClasses; !slices.Equal(got, want) {
				t.Errorf("gRPC policy classes %v, want %v", got, want)
			}
		})
	}
}
