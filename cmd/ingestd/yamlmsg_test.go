package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestConfigTypeErrorsInPlainWords: a value of the wrong kind is refused
// naming its key and the form the key takes, never the YAML decoder's
// Go types ("cannot construct !!timestamp into time.Duration").
func TestConfigTypeErrorsInPlainWords(t *testing.T) {
	const quiet = "data_dir: ./data\n"
	goish := regexp.MustCompile(`cannot construct|!!|time\.Duration|\bint\b|\[\]string|main\.|config\.`)
	for _, tt := range []struct {
		name, body, line, want string
	}{
		{"a mapping in a list of strings", quiet + "listen_hosts:\n  - a.example\n  - {b: c}\n",
			"ingestd.yaml:4:", "listen_hosts[1] must be a string, not a mapping"},
		{"text for a whole number", quiet + "chunking:\n  max_tokens: lots\n",
			"ingestd.yaml:3:", `chunking.max_tokens must be a whole number, not "lots"`},
		{"a date for a duration", quiet + "installations:\n  - id: hooks\n    kind: webhook\n    tier: untrusted-external\n    webhook:\n      secret_env: HOOK_SECRET\n      tolerance: 2024-01-01\n",
			"ingestd.yaml:8:", `webhook: tolerance must be a duration (like 30s, 10m, 1h), not the date "2024-01-01"`},
		{"a list for a string", quiet + "firewall:\n  mode: [enforce]\n",
			"ingestd.yaml:3:", "firewall.mode must be a string, not a list"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := writeConfig(t, tt.body)
			code, _, errs := runCmd(t, "check", "--config", cfg)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, errs)
			}
			msg := errs[strings.Index(errs, "ingestd.yaml:"):]
			if !strings.HasPrefix(msg, tt.line) || !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q\nwant %s ... %s", errs, tt.line, tt.want)
			}
			if m := goish.FindString(msg); m != "" {
				t.Errorf("stderr %q names the decoder's %q", errs, m)
			}
		})
	}
}
