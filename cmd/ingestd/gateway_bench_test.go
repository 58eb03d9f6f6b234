package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGatewayProcess is a read through the gateway as a desktop host
// meets it: a host (the Go SDK's client) starts `ingestd mcp` over stdio,
// which starts the official reference memory server from npm over stdio
// and offers its read_graph (declared a trusted read); against the same
// host starting the memory server itself. Whole processes, pipes and
// all, the two calls alternated so that a noisy machine slows both: the
// ratio of their p50s is what the gateway costs a host
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
	connect := func(cmd *exec.Cmd) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	paths := []struct {
		tool string
		cs   *mcp.ClientSession
		took []time.Duration
	}{
		{tool: "read_graph", cs: connect(exec.Command(mem))},
		{tool: "memory__read_graph", cs: connect(exec.Command(bin, "mcp", "--config", cfg))},
	}
	ctx := context.Background()
	for b.Loop() {
		for i := range paths {
			p := &paths[i]
			start := time.Now()
			r, err := p.cs.CallTool(ctx, &mcp.CallToolParams{Name: p.tool, Arguments: map[string]any{}})
			p.took = append(p.took, time.Since(start))
			if err != nil || r.IsError {
				b.Fatalf("%s: %v %+v", p.tool, err, r)
			}
		}
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds())
	}
	direct, gateway := p50(paths[0].took), p50(paths[1].took)
	b.ReportMetric(direct, "direct-p50-ns")
	b.ReportMetric(gateway, "gateway-p50-ns")
	b.ReportMetric(gateway/direct, "p50-ratio")
}
