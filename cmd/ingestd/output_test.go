package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestOneShotCommandsPrintTheirResultNotLogLines: a one-shot command
// shows its result on stdout, its progress on stderr, and no log line
// below WARN; a one-item pass speaks in the singular and its progress
// ends at 1/1.
func TestOneShotCommandsPrintTheirResultNotLogLines(t *testing.T) {
	cfg := writeConfig(t, "installations:\n  - {id: docs, kind: files, tier: trusted-internal, files: {root: ./docs}}\n")
	if err := os.WriteFile(filepath.Join(filepath.Dir(cfg), "docs", "a.md"), []byte("# One\n\nOne short page.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCmd(t, "sync", "docs", "--config", cfg)
	if code != 0 {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, errs)
	}
	if strings.Contains(errs, "level=") || strings.Contains(errs, "msg=") {
		t.Errorf("sync wrote log lines to stderr:\n%s", errs)
	}
	for _, want := range []string{"docs: 1 item seen = 1 added + ", "; 1 chunk embedded\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if want := "docs: about 1 item to check"; !strings.Contains(errs, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errs)
	}
	if lines := strings.Split(strings.TrimSpace(errs), "\n"); lines[len(lines)-1] != "docs: 1/1" {
		t.Errorf("progress ends with %q, want docs: 1/1:\n%s", lines[len(lines)-1], errs)
	}

	if code, out, _ := runCmd(t, "provenance", "--config", cfg); code != 0 || !strings.HasPrefix(out, "1 document; 0 written outside") {
		t.Errorf("provenance: exit %d\n%s", code, out)
	}

	// The query reaches no untrusted text; the verdict goes to stdout and
	// the audit log line, an INFO event, does not.
	code, out, errs = runCmd(t, "search", "short page", "--config", cfg)
	if code != 0 || errs != "" || !strings.Contains(out, "verdict: ") {
		t.Errorf("search: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestErrorsNameTheCommandOnce: no message repeats the command the
// "ingestd COMMAND:" prefix names, and none shows an error code meant for
// programs.
func TestErrorsNameTheCommandOnce(t *testing.T) {
	cfg := writeConfig(t, "installations:\n  - {id: gone, kind: files, tier: trusted-internal, files: {root: ./missing}}\n")
	doubled := regexp.MustCompile(`^ingestd (\w+)(?: \w+)?: (\w+ )?(\w+)[: ]`)
	for _, args := range [][]string{
		{"sync", "gone"},
		{"sync", "nope"},
		{"ingest", "x.md", "--installation", "nope"},
		{"dlq", "replay", "42"},
		{"migrate", "--rebuild-vector-index"},
		{"bench", "firewall", "--corpus", "/nonexistent"},
		{"bench", "retrieve", "--duration", "0s"},
		{"search"},
		{"serve", "--role", "boss"},
		{"version", "extra", "--bogus"},
	} {
		code, _, errs := runCmd(t, append(args, "--config", cfg)...)
		if code == 0 {
			t.Errorf("%v: exit 0", args)
			continue
		}
		first := strings.SplitN(errs, "\n", 2)[0]
		if m := doubled.FindStringSubmatch(first); m != nil && (m[3] == m[1] || strings.TrimSpace(m[2]) == m[1]) {
			t.Errorf("%v: %q names the command twice", args, first)
		}
		for _, code := range []string{"not_found: ", "invalid: ", "conflict: ", "unavailable: ", "internal: "} {
			if strings.Contains(first, code) {
				t.Errorf("%v: %q shows the code %q", args, first, code)
			}
		}
	}
}
