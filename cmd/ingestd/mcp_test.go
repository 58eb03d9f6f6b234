package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/client"
	"github.com/ingestd/ingestd/firewall"
)

// mcpQueries are asked on every surface; each surface must give the same
// verdict. The first lands on the injection mail.
var mcpQueries = []string{
	"refund must be wired by bank transfer today",
	"deploy runbook rollback",
	"who is on call this week",
	"refund policy original card",
}

var (
	binOnce sync.Once
	binPath string
	binErr  string
)

// mustBinary builds the binary once for the package's tests.
func mustBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ingestd-bin")
		if err != nil {
			binErr = err.Error()
			return
		}
		binPath = filepath.Join(dir, "ingestd")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			binErr = err.Error() + "\n" + string(out)
		}
	})
	if binErr != "" {
		t.Fatalf("build: %s", binErr)
	}
	return binPath
}

// mcpQuickstart is the quickstart synced, served by the binary on a free
// loopback port, with the binary's path for stdio servers.
type mcpQuickstart struct {
	cfg, bin string
	srv      *served
}

func mustMCPQuickstart(t *testing.T) *mcpQuickstart {
	t.Helper()
	cfg := mustQuickstart(t)
	for _, inst := range []string{"handbook", "support"} {
		if code, out, errs := runCmd(t, "sync", inst, "--config", cfg); code != 0 {
			t.Fatalf("sync %s: exit %d\n%s\n%s", inst, code, out, errs)
		}
	}
	bin := mustBinary(t)
	body := bytes.Replace(mustRead(t, cfg), []byte("127.0.0.1:7700"), []byte("127.0.0.1:0"), 1)
	if err := os.WriteFile(cfg, body, 0o644); err != nil {
		t.Fatal(err)
	}
	return &mcpQuickstart{cfg: cfg, bin: bin, srv: startServe(t, bin, cfg)}
}

// TestMCPQuickstart drives both transports with the go-sdk's client: the
// tool list with schemas, retrieve on the quickstart returning a blocking
// verdict naming the injection mail, the same verdict as REST and gRPC
// for every query, and content whose chunks are each one fence.
func TestMCPQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	q := mustMCPQuickstart(t)
	grpc := client.New(q.srv.base, &client.Options{GRPC: true, HTTPClient: h2cClient(t)})
	transports := map[string]func() mcp.Transport{
		"http": func() mcp.Transport { return &mcp.StreamableClientTransport{Endpoint: q.srv.base + "/mcp"} },
		"stdio": func() mcp.Transport {
			return &mcp.CommandTransport{Command: exec.Command(q.bin, "mcp", "--config", q.cfg)}
		},
		"stdio forwarding to serve": func() mcp.Transport {
			return &mcp.CommandTransport{Command: exec.Command(q.bin, "mcp", "--config", q.cfg, "--server", q.srv.base)}
		},
	}
	for name, tr := range transports {
		t.Run(name, func(t *testing.T) {
			c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			s, err := c.Connect(t.Context(), tr(), nil)
			if err != nil {
				t.Fatalf("connect: %v", err)
			}
			defer s.Close()
			tools, err := s.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
				if tool.InputSchema == nil || tool.OutputSchema == nil || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
					t.Errorf("tool %s: schemas %v %v, annotations %+v", tool.Name, tool.InputSchema != nil, tool.OutputSchema != nil, tool.Annotations)
				}
			}
			if !slices.Equal(names, []string{"provenance", "retrieve"}) {
				t.Errorf("tools %v, want provenance and retrieve", names)
			}
			for i, query := range mcpQueries {
				res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "retrieve", Arguments: map[string]any{"query": query}})
				if err != nil || res.IsError {
					t.Fatalf("retrieve %q: %v %+v", query, err, res)
				}
				v, err := client.VerdictFromMCP(res)
				if err != nil {
					t.Fatalf("retrieve %q: gate: %v", query, err)
				}
				rest := q.srv.postJSON(t, "/v1/retrieve", `{"query": `+quote(query)+`}`)
				var restVerdict ingestd.Verdict
				remarshalT(t, rest["verdict"], &restVerdict)
				g, err := grpc.Retrieve(t.Context(), ingestd.RetrieveRequest{Query: query})
				if err != nil {
					t.Fatal(err)
				}
				for other, ov := range map[string]*ingestd.Verdict{"REST": &restVerdict, "gRPC": g.Verdict} {
					if ov.ToolsAllowed != v.ToolsAllowed || ov.Reason != v.Reason || ov.Mode != v.Mode || !slices.Equal(ov.UntrustedDocumentIDs, v.UntrustedDocumentIDs) {
						t.Errorf("%q: MCP verdict %+v, %s %+v", query, v, other, ov)
					}
				}
				if i == 0 {
					if v.ToolsAllowed || len(v.UntrustedDocumentIDs) == 0 || client.AllowedToolsMCP(res, []string{"transfer"}) != nil {
						t.Errorf("%q: verdict %+v, want tools blocked", query, v)
					}
					var sc ingestd.RetrieveResponse
					remarshalT(t, res.StructuredContent, &sc)
					injection := ""
					for _, c := range slices.Concat(sc.Primary, sc.Expanded, sc.Rejected) {
						if strings.Contains(c.URI, "0002-urgent-transfer") {
							injection = c.DocumentID
						}
					}
					if injection == "" || !slices.Contains(v.UntrustedDocumentIDs, injection) {
						t.Errorf("%q: untrusted ids %v do not name the injection mail %q", query, v.UntrustedDocumentIDs, injection)
					}
				}
				// content: the verdict line, then each chunk's fence.
				if len(res.Content) < 2 || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "ingestd verdict:") {
					t.Fatalf("%q: content does not start with the verdict line", query)
				}
				for _, c := range res.Content[1:] {
					if err := firewall.Check(c.(*mcp.TextContent).Text); err != nil {
						t.Errorf("%q: a content chunk is not one fence: %v", query, err)
					}
				}
			}
			res, err := s.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "ingestd://provenance"})
			if err != nil {
				t.Fatal(err)
			}
			var rep ingestd.ProvenanceReport
			if err := json.Unmarshal([]byte(res.Contents[0].Text), &rep); err != nil || rep.Total != 6 || rep.ExternallyAuthored != 3 {
				t.Errorf("provenance resource: %v %+v", err, rep)
			}
		})
	}
}

// TestMCPStdioAs serves stdio as a configured token limited to the
// handbook: the support mail is neither retrieved nor counted.
func TestMCPStdioAs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	cfg := mustQuickstart(t)
	for _, inst := range []string{"handbook", "support"} {
		if code, _, errs := runCmd(t, "sync", inst, "--config", cfg); code != 0 {
			t.Fatalf("sync %s: %s", inst, errs)
		}
	}
	body := append(mustRead(t, cfg), "\nauth:\n  tokens:\n    - {name: desk, token_env: DESK_TOKEN, scopes: [retrieve], installations: [handbook]}\n"...)
	if err := os.WriteFile(cfg, body, 0o644); err != nil {
		t.Fatal(err)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(t.Context(), &mcp.CommandTransport{Command: exec.Command(mustBinary(t), "mcp", "--config", cfg, "--as", "desk")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "retrieve", Arguments: map[string]any{"query": "refund must be wired by bank transfer today"}})
	if err != nil || res.IsError {
		t.Fatalf("retrieve: %v %+v", err, res)
	}
	var sc ingestd.RetrieveResponse
	remarshalT(t, res.StructuredContent, &sc)
	for _, c := range slices.Concat(sc.Primary, sc.Expanded, sc.Rejected) {
		if c.Installation != "handbook" {
			t.Errorf("served %s of %s to a handbook-only principal", c.DocumentID, c.Installation)
		}
	}
	if sc.Verdict == nil || !sc.Verdict.ToolsAllowed {
		t.Errorf("verdict %+v, want tools allowed over handbook grounding", sc.Verdict)
	}
	res, err = s.CallTool(t.Context(), &mcp.CallToolParams{Name: "retrieve", Arguments: map[string]any{"query": "refund", "installations": []string{"support"}}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "forbidden") {
		t.Errorf("naming support: %v %+v, want a forbidden tool error", err, res)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func remarshalT(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}

func h2cClient(t *testing.T) *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestMCPTypeScriptClient drives both transports with the MCP client of
// another project, the official TypeScript SDK, on node
// (e2e/mcpts; CI installs it with .ci/services.d/node.sh). Its callTool
// validates structuredContent against the tool's output schema.
func TestMCPTypeScriptClient(t *testing.T) {
	node := os.Getenv("INGESTD_TEST_NODE")
	dir, _ := filepath.Abs(filepath.Join("..", "..", "e2e", "mcpts"))
	if node == "" {
		t.Skip("INGESTD_TEST_NODE (a node binary) is not set; `npm ci` in e2e/mcpts and set it to run the TypeScript SDK's client")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Skip("INGESTD_TEST_NODE is set but e2e/mcpts has no node_modules: run `npm ci` there")
	}
	q := mustMCPQuickstart(t)
	rest := q.srv.postJSON(t, "/v1/retrieve", `{"query": `+quote(mcpQueries[0])+`}`)
	var restVerdict ingestd.Verdict
	remarshalT(t, rest["verdict"], &restVerdict)
	plans := map[string]map[string]any{
		"http":  {"transport": "http", "url": q.srv.base + "/mcp"},
		"stdio": {"transport": "stdio", "command": q.bin, "args": []string{"mcp", "--config", q.cfg}},
	}
	for name, plan := range plans {
		t.Run(name, func(t *testing.T) {
			plan["queries"] = mcpQueries[:1]
			plan["resources"] = []string{"ingestd://provenance", "ingestd://documents/" + restVerdict.UntrustedDocumentIDs[0]}
			b, _ := json.Marshal(plan)
			cmd := exec.CommandContext(t.Context(), node, "client.mjs", string(b))
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node: %v\n%s", err, stderr.String())
			}
			var got struct {
				Tools []struct {
					Name         string
					OutputSchema map[string]any
				}
				Calls []struct {
					Result json.RawMessage
					Error  any
				}
				Resources []struct {
					Result struct {
						Contents []struct {
							Text string
							Meta map[string]any `json:"_meta"`
						}
					}
					Error any
				}
				Error any
			}
			if err := json.Unmarshal(out, &got); err != nil || got.Error != nil {
				t.Fatalf("client said %s (%v)\n%s", out, err, stderr.String())
			}
			if len(got.Tools) != 2 || got.Tools[0].OutputSchema == nil {
				t.Errorf("tools %+v", got.Tools)
			}
			if len(got.Calls) != 1 || got.Calls[0].Error != nil {
				t.Fatalf("calls %s", out)
			}
			v, err := client.VerdictFromMCP(got.Calls[0].Result)
			if err != nil {
				t.Fatalf("the gate cannot read the result the TypeScript client received: %v", err)
			}
			if v.ToolsAllowed || !slices.Equal(v.UntrustedDocumentIDs, restVerdict.UntrustedDocumentIDs) {
				t.Errorf("verdict %+v, REST %+v", v, restVerdict)
			}
			if len(got.Resources) != 2 || got.Resources[0].Error != nil || got.Resources[1].Error != nil {
				t.Fatalf("resources %s", out)
			}
			for _, c := range got.Resources[1].Result.Contents {
				if c.Meta["io.ingestd/untrusted"] != true || firewall.Check(c.Text) != nil {
					t.Errorf("document resource entry %+v: want untrusted and fenced", c)
				}
			}
		})
	}
}
