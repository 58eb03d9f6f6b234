package main

import (
	"strings"
	"testing"
)

// TestConfigErrorsNameTheLine: every configuration error, YAML syntax
// included, starts with file:line, and the line is the one at fault.
func TestConfigErrorsNameTheLine(t *testing.T) {
	const quiet = "data_dir: ./data\n" // line 1 of most cases
	for _, tt := range []struct {
		name string
		cmd  string // the command that meets the error
		body string
		line string // ingestd.yaml:N:
		want string
	}{
		{name: "unclosed list", cmd: "provenance",
			body: quiet + "listen_hosts: [a.example, b.example\nlisten: 127.0.0.1:7700\n",
			line: "ingestd.yaml:3:", want: "did not find expected ',' or ']'"},
		{name: "unclosed mapping", cmd: "provenance",
			body: quiet + "store: {driver: sqlite\nlisten: 127.0.0.1:7700\n",
			line: "ingestd.yaml:3:", want: "did not find expected ',' or '}'"},
		{name: "key indented one space too far", cmd: "provenance",
			body: quiet + "firewall:\n  mode: enforce\n   extra: 1\n",
			line: "ingestd.yaml:4:", want: "mapping values are not allowed"},
		{name: "list item out of line", cmd: "provenance",
			body: quiet + "auth:\n  tokens:\n    - name: ops\n      token_env: OPS\n     scopes: [admin]\n",
			line: "ingestd.yaml:6:", want: "did not find expected '-' indicator"},
		{name: "tab indentation", cmd: "provenance",
			body: quiet + "firewall:\n\tmode: enforce\n",
			line: "ingestd.yaml:3:", want: "cannot start any token"},
		{name: "unterminated quote", cmd: "provenance",
			body: quiet + "listen: \"127.0.0.1:7700\nfirewall: {mode: enforce}\n",
			line: "ingestd.yaml:4:", want: "unexpected end of stream"},
		{name: "unknown anchor", cmd: "provenance",
			body: quiet + "listen: *addr\n",
			line: "ingestd.yaml:2:", want: "unknown anchor"},
		{name: "value of the wrong type", cmd: "provenance",
			body: quiet + "firewall:\n  mode: enforce\nlisten_hosts:\n  - a.example\n  - {b: c}\n",
			line: "ingestd.yaml:6:", want: "listen_hosts[1] must be a string, not a mapping"},
		{name: "listen beyond loopback without auth", cmd: "serve",
			body: quiet + "listen: 0.0.0.0:0\n",
			line: "ingestd.yaml:2:", want: "no auth tokens are configured"},
		{name: "token variable unset", cmd: "serve",
			body: quiet + "listen: 127.0.0.1:0\nauth:\n  tokens:\n    - {name: chat, token_env: INGESTD_TEST_UNSET_A, scopes: [retrieve]}\n    - {name: ops, token_env: INGESTD_TEST_UNSET_B, scopes: [admin]}\n",
			line: "ingestd.yaml:5:", want: `auth: token "chat": environment variable INGESTD_TEST_UNSET_A is not set`},
		{name: "token scope unknown", cmd: "provenance",
			body: quiet + "auth:\n  tokens:\n    - {name: chat, token_env: A, scopes: [retrieve]}\n    - {name: ops, token_env: B, scopes: [root]}\n",
			line: "ingestd.yaml:5:", want: `scope "root" is not one of retrieve, admin, metrics`},
		{name: "store url variable unset", cmd: "provenance",
			body: quiet + "store: {driver: postgres, url_env: INGESTD_TEST_UNSET_URL}\n",
			line: "ingestd.yaml:2:", want: "url_env names INGESTD_TEST_UNSET_URL, which is not set"},
		{name: "embedder key variable unset", cmd: "provenance",
			body: quiet + "embedder:\n  kind: openai\n  base_url: http://127.0.0.1:1\n  model: m\n  api_key_env: INGESTD_TEST_UNSET_KEY\n",
			line: "ingestd.yaml:2:", want: "api_key_env names INGESTD_TEST_UNSET_KEY, which is not set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeConfig(t, tt.body)
			code, _, errs := runCmd(t, tt.cmd, "--config", cfg)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, errs)
			}
			msg := strings.TrimPrefix(errs, "ingestd "+tt.cmd+": "+cfg[:len(cfg)-len("ingestd.yaml")])
			if !strings.HasPrefix(msg, tt.line) || !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q\nwant %s ... %s", errs, tt.line, tt.want)
			}
		})
	}
}
