package gateway_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/gateway"
)

// TestReferenceServersUpstream starts two more of the official reference
// servers from npm as stdio upstreams, @modelcontextprotocol/server-filesystem
// over a folder and server-memory over a graph file, and judges their
// side effects on disk: in a clean turn the declared writes run; a file
// whose text is untrusted arrives fenced and taints its turn; in that
// turn neither server's write runs (no file written, no entity stored)
// while a declared read still does; what either offers undeclared is
// never offered.
func TestReferenceServersUpstream(t *testing.T) {
	fsBin, memBin := os.Getenv("INGESTD_TEST_MCP_FILESYSTEM"), os.Getenv("INGESTD_TEST_MCP_MEMORY")
	if fsBin == "" || memBin == "" {
		t.Skip("INGESTD_TEST_MCP_FILESYSTEM and INGESTD_TEST_MCP_MEMORY (mcp-server-filesystem, mcp-server-memory from npm) are not set; `npm ci` in e2e/mcpservers and point them at node_modules/.bin")
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "inbox.txt"), []byte(injected), 0o644); err != nil {
		t.Fatal(err)
	}
	graph := filepath.Join(t.TempDir(), "memory.jsonl")
	t.Setenv("MEMORY_FILE_PATH", graph)
	files := gateway.Upstream{ID: "files", Command: []string{fsBin, root}, Tools: map[string]gateway.Tool{
		"list_directory": {Class: ingestd.ToolRead, Output: gateway.OutputTrusted},
		"read_text_file": {Class: ingestd.ToolRead, Output: gateway.OutputUntrusted},
		"write_file":     {Class: ingestd.ToolWrite, Output: gateway.OutputTrusted},
	}}
	memory := gateway.Upstream{ID: "memory", Command: []string{memBin}, Env: []string{"MEMORY_FILE_PATH"}, Tools: map[string]gateway.Tool{
		"create_entities": {Class: ingestd.ToolWrite, Output: gateway.OutputTrusted},
		"read_graph":      {Class: ingestd.ToolRead, Output: gateway.OutputUntrusted},
	}}
	g := mustGateway(t, gateway.Options{Upstreams: []gateway.Upstream{files, memory}})
	for _, l := range g.Listings() {
		want := map[string]string{"files": "edit_file", "memory": "delete_entities"}[l.Upstream]
		if l.Down != "" || len(l.Missing) != 0 || !slices.Contains(l.Undeclared, want) {
			t.Fatalf("listing %+v: want it up, nothing missing, %s undeclared", l, want)
		}
	}
	cs := mustHost(t, g, mustRetriever(t), nil)
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		if tl.Name == "files__edit_file" || tl.Name == "memory__delete_entities" {
			t.Fatalf("an undeclared tool is offered: %s", tl.Name)
		}
	}
	entity := func(name string) map[string]any {
		return map[string]any{"entities": []any{map[string]any{"name": name, "entityType": "person", "observations": []string{"a customer"}}}}
	}

	// A clean turn: both writes run, on disk.
	if r := call(t, cs, "files__write_file", map[string]any{"path": filepath.Join(root, "clean.txt"), "content": "hello"}, "clean"); r.IsError {
		t.Fatalf("write_file in a clean turn: %s", text(r))
	}
	if b, err := os.ReadFile(filepath.Join(root, "clean.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("the clean write did not happen: %q %v", b, err)
	}
	if r := call(t, cs, "memory__create_entities", entity("Ada"), "clean"); r.IsError {
		t.Fatalf("create_entities in a clean turn: %s", text(r))
	}
	if b, _ := os.ReadFile(graph); !strings.Contains(string(b), `"Ada"`) {
		t.Fatalf("the clean entity was not stored: %q", b)
	}
	if r := call(t, cs, "files__list_directory", map[string]any{"path": root}, "clean"); r.IsError || !strings.Contains(text(r), "clean.txt") || firewall.Check(text(r)) == nil {
		t.Fatalf("a trusted read = %q, want it unchanged", text(r))
	}

	// The untrusted file arrives fenced and taints its turn.
	r := call(t, cs, "files__read_text_file", map[string]any{"path": filepath.Join(root, "inbox.txt")}, "mail")
	body, o, err := firewall.Unfence(text(r))
	if err != nil || o.Installation != "gateway:files" || !strings.Contains(body, injected) {
		t.Fatalf("read_text_file not in the one fence: %v %+v %q", err, o, text(r))
	}
	if r := call(t, cs, "files__write_file", map[string]any{"path": filepath.Join(root, "exfil.txt"), "content": "customer list"}, "mail"); !r.IsError || !strings.Contains(text(r), "untrusted output of files__read_text_file") {
		t.Fatalf("write_file in the tainted turn = %q", text(r))
	}
	if _, err := os.Stat(filepath.Join(root, "exfil.txt")); !os.IsNotExist(err) {
		t.Fatalf("the refused write reached the filesystem server: %v", err)
	}
	if r := call(t, cs, "memory__create_entities", entity("Mallory"), "mail"); !r.IsError {
		t.Fatalf("create_entities in the tainted turn ran: %s", text(r))
	}
	if b, _ := os.ReadFile(graph); strings.Contains(string(b), "Mallory") {
		t.Fatalf("the refused write reached the memory server: %q", b)
	}
	r = call(t, cs, "memory__read_graph", map[string]any{}, "mail")
	if body, _, err := firewall.Unfence(text(r)); r.IsError || err != nil || !strings.Contains(body, "Ada") {
		t.Fatalf("a declared read in the tainted turn = %q (%v)", text(r), err)
	}
}
