package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tsHost is what the TypeScript SDK's client, as a host, saw in a plan's
// steps: each tool result (or error) and every question it was asked.
type tsHost struct {
	Steps []struct {
		Name   string
		Result struct {
			IsError bool
			Content []struct{ Type, Text string }
			Meta    map[string]any `json:"_meta"`
		}
		Error any
	}
	Questions []string
	Error     any
}

func (h *tsHost) text(i int) string {
	var b strings.Builder
	for _, c := range h.Steps[i].Result.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// mustTSHost skips without node, the TypeScript SDK or the reference
// server (each a variable CI sets, so CI fails instead), and returns
// node, the mcpts directory and the mcp-server-everything binary.
func mustTSHost(t *testing.T) (node, dir, everything string) {
	t.Helper()
	node = os.Getenv("INGESTD_TEST_NODE")
	dir, _ = filepath.Abs(filepath.Join("..", "..", "e2e", "mcpts"))
	if node == "" {
		t.Skip("INGESTD_TEST_NODE (a node binary) is not set; `npm ci` in e2e/mcpts and set it to run the TypeScript SDK's client")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Skip("INGESTD_TEST_NODE is set but e2e/mcpts has no node_modules: run `npm ci` there")
	}
	everything = os.Getenv("INGESTD_TEST_MCP_EVERYTHING")
	if everything == "" {
		t.Skip("INGESTD_TEST_MCP_EVERYTHING (the mcp-server-everything binary from npm) is not set; `npm ci` in e2e/mcpservers and point it at node_modules/.bin/mcp-server-everything")
	}
	return node, dir, everything
}

func runTSHost(t *testing.T, node, dir string, plan map[string]any) *tsHost {
	t.Helper()
	b, _ := json.Marshal(plan)
	cmd := exec.CommandContext(t.Context(), node, "client.mjs", string(b))
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, stderr.String())
	}
	var h tsHost
	if err := json.Unmarshal(out, &h); err != nil || h.Error != nil {
		t.Fatalf("client said %s (%v)\n%s", out, err, stderr.String())
	}
	return &h
}

// upstreamCalls counts the tools/call requests for tool that reached the
// upstream: the tap (tee in front of the server's stdin) wrote every
// line the gateway sent it.
func upstreamCalls(t *testing.T, tap, tool string) int {
	t.Helper()
	b, err := os.ReadFile(tap)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"method":"tools/call"`) && strings.Contains(line, `"name":"`+tool+`"`) {
			n++
		}
	}
	return n
}

// TestGatewayTypeScriptHost is issue 30's end-to-end case with nothing of
// ingestd's on the host side: the official TypeScript SDK's client is
// the host, over Streamable HTTP (serve's /mcp) and stdio (ingestd mcp),
// and the upstream is the official reference server-everything, started
// by the gateway over stdio behind a tap that records what reaches it.
// An injected mail in the turn's retrieval blocks; a declared read still
// runs; the declared write is refused and never reaches the upstream
// when the host cannot ask, and when its user declines; confirmed, it
// runs once; the same call again is not covered by that yes: asked
// again, declined, refused. Like a desktop host, it marks no turns, so
// the session is the turn. docs/gateway.md's worked example shows the
// texts the host received here; the test fails when they differ.
func TestGatewayTypeScriptHost(t *testing.T) {
	node, dir, everything := mustTSHost(t)
	cfg := mustQuickstart(t)
	for _, inst := range []string{"handbook", "support"} {
		if code, out, errs := runCmd(t, "sync", inst, "--config", cfg); code != 0 {
			t.Fatalf("sync %s: exit %d\n%s\n%s", inst, code, out, errs)
		}
	}
	tap := filepath.Join(t.TempDir(), "upstream-stdin.jsonl")
	body := bytes.Replace(mustRead(t, cfg), []byte("127.0.0.1:7700"), []byte("127.0.0.1:0"), 1)
	body = append(body, []byte(`
gateway:
  upstreams:
    - id: everything
      command: [sh, -c, 'tee -a "$0" | exec "$1" stdio', `+quote(tap)+`, `+quote(everything)+`]
      tools:
        get-sum:               {class: read,  output: trusted}
        echo:                  {class: read,  output: untrusted}
        gzip-file-as-resource: {class: write, output: trusted}
`)...)
	if err := os.WriteFile(cfg, body, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := mustBinary(t)
	srv := startServe(t, bin, cfg)

	const write = "everything__gzip-file-as-resource"
	writeArgs := map[string]any{"name": "customers.gz", "outputType": "resource",
		"data": "data:text/plain;base64," + base64.StdEncoding.EncodeToString([]byte("customer list"))}
	steps := []map[string]any{
		{"name": "retrieve", "arguments": map[string]any{"query": mcpQueries[0]}},
		{"name": "everything__get-sum", "arguments": map[string]any{"a": 2, "b": 3}},
		{"name": write, "arguments": writeArgs},
	}
	transports := map[string]map[string]any{
		"http":  {"transport": "http", "url": srv.base + "/mcp"},
		"stdio": {"transport": "stdio", "command": bin, "args": []string{"mcp", "--config", cfg}},
	}
	for _, name := range []string{"http", "stdio"} {
		plan := func(extra map[string]any) map[string]any {
			p := map[string]any{}
			for k, v := range transports[name] {
				p[k] = v
			}
			for k, v := range extra {
				p[k] = v
			}
			return p
		}
		t.Run(name+"/cannot-ask", func(t *testing.T) {
			before := upstreamCalls(t, tap, "gzip-file-as-resource")
			h := runTSHost(t, node, dir, plan(map[string]any{"steps": steps}))
			if len(h.Steps) != 3 || h.Steps[0].Error != nil || h.Steps[1].Error != nil || h.Steps[2].Error != nil {
				t.Fatalf("steps %+v", h.Steps)
			}
			verdict := h.text(0)
			if i := strings.Index(verdict, "). "); i >= 0 {
				verdict = verdict[:i+2]
			}
			shownInDocs(t, verdict)
			if got := h.Steps[0].Result.Meta["io.ingestd/turn_scope"]; got != "session" {
				t.Errorf("retrieve _meta %v: a host that marks no turn is judged by its session", h.Steps[0].Result.Meta)
			}
			if h.Steps[1].Result.IsError || !strings.Contains(h.text(1), "5") {
				t.Errorf("the declared read in a tainted turn: %q", h.text(1))
			}
			refusal := h.text(2)
			if !h.Steps[2].Result.IsError || !strings.Contains(refusal, "is refused in this turn") || !strings.Contains(refusal, "cannot ask") {
				t.Errorf("the write in a tainted turn, host cannot ask: %q", refusal)
			}
			if n := upstreamCalls(t, tap, "gzip-file-as-resource") - before; n != 0 {
				t.Fatalf("the refused write reached the upstream %d times", n)
			}
			if len(h.Questions) != 0 {
				t.Errorf("a host without elicitation was asked %q", h.Questions)
			}
			shownInDocs(t, refusal)
		})
		t.Run(name+"/asks", func(t *testing.T) {
			before := upstreamCalls(t, tap, "gzip-file-as-resource")
			again := steps[2]
			h := runTSHost(t, node, dir, plan(map[string]any{"steps": append(steps[:3:3], again, again), "answers": []bool{false, true, false}}))
			if len(h.Steps) != 5 || len(h.Questions) != 3 {
				t.Fatalf("steps %+v, questions %q: want 5 and 3", h.Steps, h.Questions)
			}
			if !h.Steps[2].Result.IsError || !strings.Contains(h.text(2), "declined") {
				t.Errorf("declined: %q", h.text(2))
			}
			if n := upstreamCalls(t, tap, "gzip-file-as-resource") - before; n != 1 {
				t.Fatalf("the write reached the upstream %d times, want once (the confirmed call)", n)
			}
			if h.Steps[3].Result.IsError || !strings.Contains(string(mustJSON(t, h.Steps[3].Result.Content)), "resource") {
				t.Errorf("confirmed: %q %+v", h.text(3), h.Steps[3].Result)
			}
			if !h.Steps[4].Result.IsError {
				t.Errorf("the same call after its yes ran without a new one: %q", h.text(4))
			}
			q := h.Questions[0]
			for _, want := range []string{"Run exactly this call, once?", "upstream: everything", "tool: gzip-file-as-resource (class write)",
				`arguments: {"data":"data:text/plain;base64,Y3VzdG9tZXIgbGlzdA==","name":"customers.gz","outputType":"resource"}`, "call: sha256:", "untrusted documents"} {
				if !strings.Contains(q, want) {
					t.Errorf("question lacks %q:\n%s", want, q)
				}
			}
			if h.Questions[1] != q || h.Questions[2] != q {
				t.Errorf("one exact call, yet the questions differ:\n%s\n%s", q, h.Questions[2])
			}
			shownInDocs(t, q)
			shownInDocs(t, h.text(2))
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// shownInDocs fails unless docs/gateway.md's worked example shows text,
// which a host received, exactly.
func shownInDocs(t *testing.T, text string) {
	t.Helper()
	if doc := string(mustRead(t, filepath.Join("..", "..", "docs", "gateway.md"))); !strings.Contains(doc, text) {
		t.Errorf("docs/gateway.md's worked example does not show what the host received:\n%s", text)
	}
}
