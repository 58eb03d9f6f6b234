package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/terminal"
)

// runCheckArgs is `ingestd check` with extra arguments and vars as the
// whole environment.
func runCheckArgs(t *testing.T, vars map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: terminal.New(&out), stderr: terminal.New(&errb),
		getenv:    func(k string) string { return vars[k] },
		lookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	code := e.run(context.Background(), append([]string{"check"}, args...))
	e.stdout.Flush()
	e.stderr.Flush()
	return code, out.String(), errb.String()
}

// TestCheckGatewayOpensNothing: plain check names a declared upstream's
// invalid fields and an unset token variable at their lines, and starts
// no upstream: the command that would leave a mark never runs.
func TestCheckGatewayOpensNothing(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	cfg := writeConfig(t, gatewayBase+"gateway:\n  upstreams:\n    - id: crm\n      command: [sh, -c, 'touch \"$0\"', "+quote(marker)+"]\n      tools:\n        lookup: {class: read, output: trusted}\n")
	if code, out, errs := runCheckArgs(t, nil, "--config", cfg); code != 0 || !strings.Contains(out, ": ok: ") {
		t.Fatalf("check: exit %d\n%s\n%s", code, out, errs)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("plain check started an upstream: %v", err)
	}
	for _, tc := range []struct {
		name, body, want string
	}{
		{"class", "gateway:\n  upstreams:\n    - id: crm\n      command: [crm-mcp]\n      tools:\n        lookup: {class: readonly, output: trusted}\n",
			`:12: gateway: upstream "crm": tool "lookup": class "readonly" is not one of read, read_open, write`},
		{"token", "gateway:\n  upstreams:\n    - id: crm\n      url: https://crm.example/mcp\n      token_env: CRM_TOKEN_NOT_SET\n      tools:\n        lookup: {class: read, output: trusted}\n",
			`:9: gateway: upstream "crm": environment variable CRM_TOKEN_NOT_SET is not set`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCheckArgs(t, nil, "--config", writeConfig(t, gatewayBase+tc.body))
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q, want 2 and %q", code, errs, tc.want)
			}
		})
	}
}

// TestCheckUpstreams: `check --upstreams` starts each upstream (the
// official reference servers from npm) and names, at the line of the
// upstream's block, every tool it offers that nobody declared, every
// declared tool it does not offer (at that tool's line), and an
// upstream that does not start; exit 2. An upstream that offers exactly
// what is declared passes.
func TestCheckUpstreams(t *testing.T) {
	everything, memory := os.Getenv("INGESTD_TEST_MCP_EVERYTHING"), os.Getenv("INGESTD_TEST_MCP_MEMORY")
	if everything == "" || memory == "" {
		t.Skip("INGESTD_TEST_MCP_EVERYTHING and INGESTD_TEST_MCP_MEMORY (mcp-server-everything, mcp-server-memory from npm) are not set; `npm ci` in e2e/mcpservers and point them at node_modules/.bin")
	}
	var vars map[string]string // the upstreams get the process environment, as serve gives them
	memoryTools := "        create_entities: {class: write, output: trusted}\n        create_relations: {class: write, output: trusted}\n" +
		"        add_observations: {class: write, output: trusted}\n        delete_entities: {class: write, output: trusted}\n" +
		"        delete_observations: {class: write, output: trusted}\n        delete_relations: {class: write, output: trusted}\n" +
		"        read_graph: {class: read, output: untrusted}\n        search_nodes: {class: read, output: untrusted}\n" +
		"        open_nodes: {class: read, output: untrusted}\n"
	graph := filepath.Join(t.TempDir(), "memory.jsonl")
	t.Setenv("MEMORY_FILE_PATH", graph)
	exact := "gateway:\n  upstreams:\n    - id: memory\n      command: [" + quote(memory) + "]\n      env: [MEMORY_FILE_PATH]\n      tools:\n" + memoryTools
	code, out, errs := runCheckArgs(t, vars, "--upstreams", "--config", writeConfig(t, gatewayBase+exact))
	if code != 0 || !strings.Contains(out, ": ok: ") || !strings.Contains(out, "upstream memory") {
		t.Fatalf("an upstream offering exactly its declaration: exit %d\n%s\n%s", code, out, errs)
	}

	// Lines: gatewayBase is 6, "gateway:" 7, "upstreams:" 8, the first
	// upstream's "- id:" 9.
	body := "gateway:\n  upstreams:\n" +
		"    - id: everything\n      command: [" + quote(everything) + ", stdio]\n      tools:\n" +
		"        echo: {class: read, output: untrusted}\n        not-there: {class: write, output: trusted}\n" +
		"    - id: broken\n      command: [" + quote(filepath.Join(t.TempDir(), "no-such-server")) + "]\n      tools:\n        a: {class: read, output: trusted}\n"
	cfg := writeConfig(t, gatewayBase+body)
	code, _, errs = runCheckArgs(t, vars, "--upstreams", "--config", cfg)
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, errs)
	}
	for _, want := range []string{
		cfg + `:9: gateway: upstream "everything" offers tools nobody declared, never offered to a host: `,
		"get-sum", "toggle-simulated-logging",
		cfg + `:13: gateway: upstream "everything": tool "not-there" is declared but the upstream does not offer it`,
		cfg + `:14: gateway: upstream "broken" did not start: `,
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, `"echo"`) {
		t.Errorf("a declared, offered tool was named: %s", errs)
	}
	if n := strings.Count(errs, cfg+":"); n != 3 {
		t.Errorf("%d problems named, want 3:\n%s", n, errs)
	}
}
