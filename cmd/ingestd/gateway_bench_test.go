package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGatewayProcess is a read through the gateway as a desktop host
// meets it: a host (the Go SDK's client) starts `ingestd mcp` over stdio,
// which starts the official reference memory server from npm over stdio
// and offers its read_graph (declared a trusted read); against the same
// host starting the memory server itself. Whole processes, pipes and
// all: the ratio of the two ns/op is what the gateway costs a host
// (docs/BENCHMARKS.md). Needs INGESTD_TEST_MCP_MEMORY.
func BenchmarkGatewayProcess(b *testing.B) {
	mem := os.Getenv("INGESTD_TEST_MCP_MEMORY")
	if mem == "" {
		b.Skip("INGESTD_TEST_MCP_MEMORY is not set: `npm ci` in e2e/mcpservers and point it at node_modules/.bin/mcp-server-memory")
	}
	dir := b.TempDir()
	if err := copyQuickstart(dir, filepath.Join("..", "..", "examples", "quickstart")); err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(dir, "ingestd.yaml")
	body, err := os.ReadFile(cfg)
	if err != nil {
		b.Fatal(err)
	}
	body = append(body, []byte(`
gateway:
  upstreams:
    - id: memory
      command: [`+quote(mem)+`]
      env: [MEMORY_FILE_PATH]
      tools:
        read_graph: {class: read, output: trusted}
`)...)
	if err := os.WriteFile(cfg, body, 0o644); err != nil {
		b.Fatal(err)
	}
	b.Setenv("MEMORY_FILE_PATH", filepath.Join(dir, "memory.jsonl"))
	bin := mustBinary(b)
	for _, c := range []struct {
		name, tool string
		cmd        func() *exec.Cmd
	}{
		{"direct", "read_graph", func() *exec.Cmd { return exec.Command(mem) }},
		{"gateway", "memory__read_graph", func() *exec.Cmd { return exec.Command(bin, "mcp", "--config", cfg) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(b.Context(), &mcp.CommandTransport{Command: c.cmd()}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{}})
				if err != nil || r.IsError {
					b.Fatalf("%s: %v %+v", c.tool, err, r)
				}
			}
		})
	}
}
