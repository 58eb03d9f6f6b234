package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkGatewayProcess is a read through the gateway as a desktop host
// meets it: a host (the Go SDK's client) starts `ingestd mcp` over stdio,
// which starts the official reference memory server from npm over stdio
// and offers its read_graph (declared a trusted read); against the same
// host starting the memory server itself, speaking the same protocol
// (p50-ratio; p50-ratio-2026-07-28 is a host that speaks the newer one
// to the gateway). Whole processes, pipes and
// all, the calls alternated so that a noisy machine slows each alike:
// the ratio of their p50s is what the gateway costs a host
// (docs/BENCHMARKS.md). A third path, a relay that copies lines and
// reads none, is the floor of any process in the middle. Needs
// INGESTD_TEST_MCP_MEMORY.
//
// INGESTD_BENCH_GATEWAY_BUILDS, a comma-separated list of other ingestd
// binaries, puts each in the same rotation (host 2025-11-25), reported
// as p50-ratio-build<N>: two builds compared in one run, which a noisy
// machine slows alike. On Linux the voluntary context switches per call
// of each middle process are reported too (ctxsw-per-call-*).
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
	connect := func(cmd *exec.Cmd, protocol string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(b.Context(), &mcp.CommandTransport{Command: cmd},
			&mcp.ClientSessionOptions{ProtocolVersion: protocol})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	relay := exec.Command(self, mem)
	relay.Env = append(os.Environ(), relayEnv+"=1")
	// The memory server speaks the dated protocols, so a host speaks
	// 2025-11-25 to it and to the relay whatever it asks. Through the
	// gateway the host's protocol is its own choice: 2025-11-25, as the
	// TypeScript SDK and the desktop hosts speak it, and the like for
	// like of the direct call; and 2026-07-28 (the Go SDK's default),
	// whose requests carry the protocol in every _meta.
	type path struct {
		tool     string
		cmd      *exec.Cmd
		cs       *mcp.ClientSession
		took     []time.Duration
		switches int
	}
	start := func(tool string, cmd *exec.Cmd, protocol string) *path {
		return &path{tool: tool, cmd: cmd, cs: connect(cmd, protocol)}
	}
	paths := []*path{
		start("read_graph", exec.Command(mem), ""),
		start("memory__read_graph", exec.Command(bin, "mcp", "--config", cfg), "2025-11-25"),
		start("memory__read_graph", exec.Command(bin, "mcp", "--config", cfg), "2026-07-28"),
		start("read_graph", relay, ""),
	}
	var builds []string
	if v := os.Getenv("INGESTD_BENCH_GATEWAY_BUILDS"); v != "" {
		builds = strings.Split(v, ",")
	}
	for _, other := range builds {
		paths = append(paths, start("memory__read_graph", exec.Command(other, "mcp", "--config", cfg), "2025-11-25"))
	}
	// Alternated: one call each in turn, so each finds its processes
	// idle since their last call, as a host that thinks between calls
	// does. Back to back: blocks of calls to one path in turn, each
	// call's processes still running from the one before.
	for _, mode := range []struct {
		name  string
		block int
	}{{"alternated", 1}, {"back-to-back", 200}} {
		b.Run(mode.name, func(b *testing.B) {
			for _, p := range paths {
				p.took = p.took[:0]
				p.switches = voluntarySwitches(p.cmd.Process.Pid)
			}
			for b.Loop() {
				for i := range paths {
					for range mode.block {
						timeCall(b, &paths[i].took, paths[i].cs, paths[i].tool)
					}
				}
			}
			direct, gateway, perRequest, relayed := p50(paths[0].took), p50(paths[1].took), p50(paths[2].took), p50(paths[3].took)
			b.ReportMetric(direct, "direct-p50-ns")
			b.ReportMetric(gateway, "gateway-p50-ns")
			b.ReportMetric(gateway/direct, "p50-ratio")
			b.ReportMetric(perRequest/direct, "p50-ratio-2026-07-28")
			b.ReportMetric(relayed/direct, "relay-p50-ratio")
			for i := range builds {
				b.ReportMetric(p50(paths[4+i].took)/direct, fmt.Sprintf("p50-ratio-build%d", i+1))
			}
			names := map[int]string{0: "direct", 1: "gateway", 3: "relay"}
			for i := range builds {
				names[4+i] = fmt.Sprintf("build%d", i+1)
			}
			for i, name := range names {
				if n := voluntarySwitches(paths[i].cmd.Process.Pid); n >= 0 && paths[i].switches >= 0 {
					b.ReportMetric(float64(n-paths[i].switches)/float64(len(paths[i].took)), "ctxsw-per-call-"+name)
				}
			}
		})
	}
}

// voluntarySwitches is how many times the threads of process pid have
// given up the CPU (Linux's /proc), -1 where that cannot be read.
func voluntarySwitches(pid int) int {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		return -1
	}
	n := 0
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // a thread that ended
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
				c, _ := strconv.Atoi(strings.TrimSpace(v))
				n += c
			}
		}
	}
	return n
}

func timeCall(b *testing.B, took *[]time.Duration, cs *mcp.ClientSession, tool string) {
	start := time.Now()
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
	*took = append(*took, time.Since(start))
	if err != nil || r.IsError {
		b.Fatalf("%s: %v %+v", tool, err, r)
	}
}

func p50(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2].Nanoseconds())
}

// relayEnv makes this test binary a relay (TestMain): it starts the
// command its arguments name and copies lines between its own stdio and
// the command's, reading nothing. BenchmarkGatewayProcess measures it as
// the floor of any process between a host and a server.
const relayEnv = "INGESTD_BENCH_RELAY"

func TestMain(m *testing.M) {
	if os.Getenv(relayEnv) != "" {
		os.Exit(runRelay(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func runRelay(argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil || cmd.Start() != nil {
		return 1
	}
	go func() {
		copyLines(in, os.Stdin)
		in.Close()
	}()
	copyLines(os.Stdout, out)
	_ = cmd.Wait()
	return 0
}

// copyLines writes each line of r to w as one write, as it arrives.
func copyLines(w io.Writer, r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if _, werr := w.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
