package main

import (
	"os"
	"strings"
	"testing"
)

const gatewayBase = "data_dir: ./data\ninstallations:\n  - id: docs\n    kind: files\n    tier: trusted-internal\n    files: {root: ./docs}\n"

func TestGatewayConfigErrorsNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"class", "gateway:\n  upstreams:\n    - id: crm\n      command: [crm-mcp]\n      tools:\n        lookup: {class: readonly, output: trusted}\n",
			`:12: gateway: upstream "crm": tool "lookup": class "readonly" is not one of read, read_open, write`},
		{"output", "gateway:\n  upstreams:\n    - id: crm\n      command: [crm-mcp]\n      tools:\n        lookup: {class: read}\n",
			`:12: gateway: upstream "crm": tool "lookup": output "" is not one of trusted, untrusted`},
		{"unknown key", "gateway:\n  upstreams:\n    - id: crm\n      command: [crm-mcp]\n      tools:\n        lookup: {class: read, output: trusted, trust: yes}\n",
			`unknown key "trust"`},
		{"no tools", "gateway:\n  upstreams:\n    - id: crm\n      command: [crm-mcp]\n",
			`:9: gateway: upstream "crm": declares no tools`},
		{"both", "gateway:\n  upstreams:\n    - id: crm\n      command: [crm-mcp]\n      url: https://crm.example/mcp\n      tools: {a: {class: read, output: trusted}}\n",
			`:9: gateway: upstream "crm": has both command and url`},
		{"id", "gateway:\n  upstreams:\n    - id: Crm_1\n      command: [crm-mcp]\n      tools: {a: {class: read, output: trusted}}\n",
			`:9: gateway: upstream id "Crm_1"`},
		{"twice", "gateway:\n  upstreams:\n    - id: crm\n      command: [a]\n      tools: {a: {class: read, output: trusted}}\n    - id: crm\n      command: [b]\n      tools: {a: {class: read, output: trusted}}\n",
			`:12: gateway: upstream "crm": declared twice (first at line 9)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, gatewayBase+tc.body)
			code, _, errs := runCmd(t, "gateway", "tools", "--config", cfg)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q, want 2 and %q", code, errs, tc.want)
			}
		})
	}
}

// TestGatewayToolsListsOfferedAgainstDeclared runs `ingestd gateway
// tools` against the MCP reference server.
func TestGatewayToolsListsOfferedAgainstDeclared(t *testing.T) {
	bin := os.Getenv("INGESTD_TEST_MCP_EVERYTHING")
	if bin == "" {
		t.Skip("INGESTD_TEST_MCP_EVERYTHING (the mcp-server-everything binary from npm) is not set; `npm ci` in e2e/mcpservers and point it at node_modules/.bin/mcp-server-everything")
	}
	cfg := writeConfig(t, gatewayBase+"gateway:\n  upstreams:\n    - id: everything\n      command: ["+bin+", stdio]\n      tools:\n"+
		"        echo: {class: read, output: untrusted}\n        get-sum: {class: read, output: trusted}\n        not-there: {class: write, output: trusted}\n")
	code, out, errs := runCmd(t, "gateway", "tools", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"upstream everything", "everything__echo", "read, untrusted", "UNDECLARED: never offered",
		"declared but not offered by the upstream: not-there", "(a suggestion, never believed)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "undeclared tools") {
		t.Errorf("start-up did not name the undeclared tools: %s", errs)
	}
}
