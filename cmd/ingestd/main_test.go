package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

// runCmd runs the CLI in-process and returns its exit code and output.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// mustQuickstart copies the quickstart into a temp dir and returns its
// config path, so tests never write into the tree.
func mustQuickstart(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	if err := copyQuickstart(dst, filepath.Join("..", "..", "examples", "quickstart")); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dst, "ingestd.yaml")
}

// quickstartCorpus is what a test copies of the quickstart: its
// configuration and its two folders, never the data/ that
// `serve --config examples/quickstart/ingestd.yaml` leaves in the tree.
var quickstartCorpus = []string{"ingestd.yaml", "handbook", "support-inbox"}

// copyQuickstart copies quickstartCorpus from src into dst.
func copyQuickstart(dst, src string) error {
	for _, name := range quickstartCorpus {
		fi, err := os.Stat(filepath.Join(src, name))
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			b, err := os.ReadFile(filepath.Join(src, name))
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
				return err
			}
			continue
		}
		if err := os.CopyFS(filepath.Join(dst, name), os.DirFS(filepath.Join(src, name))); err != nil {
			return err
		}
	}
	return nil
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "ingestd.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestQuickstartSyncThenProvenance(t *testing.T) {
	cfg := mustQuickstart(t)
	for _, inst := range []string{"handbook", "support"} {
		if code, out, errs := runCmd(t, "sync", inst, "--config", cfg); code != 0 {
			t.Fatalf("sync %s: exit %d\n%s\n%s", inst, code, out, errs)
		}
	}
	// A second pass over unchanged files writes and embeds nothing.
	code, out, errs := runCmd(t, "sync", "support", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("resync: exit %d: %s", code, errs)
	}
	var sum struct {
		Added, Changed, Unchanged, Deleted, Failed int
		Embedded                                   int64
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("sync --json: %v\n%s", err, out)
	}
	if sum.Unchanged != 3 || sum.Added+sum.Changed+sum.Deleted+sum.Failed != 0 || sum.Embedded != 0 {
		t.Fatalf("resync summary = %+v, want 3 unchanged, nothing written or embedded", sum)
	}

	code, out, errs = runCmd(t, "provenance", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("provenance: exit %d: %s", code, errs)
	}
	var r ingestd.ProvenanceReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("provenance --json: %v\n%s", err, out)
	}
	if r.Total != 6 || r.Declared != 6 || r.Undeclared != 0 || r.ExternallyAuthored != 3 || r.ExternallyAuthoredPct != 50 || r.Policy.FirewallMode != "enforce" {
		t.Fatalf("report = %+v", r)
	}

	// Removing a file tombstones its document at the next pass.
	if err := os.Remove(filepath.Join(filepath.Dir(cfg), "handbook", "ops", "deploys.md")); err != nil {
		t.Fatal(err)
	}
	if code, out, errs = runCmd(t, "sync", "handbook", "--config", cfg); code != 0 || !strings.Contains(out, "1 deleted") {
		t.Fatalf("sync after remove: exit %d, %q, %s", code, out, errs)
	}
	_, out, _ = runCmd(t, "provenance", "--config", cfg, "--json")
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Total != 5 {
		t.Fatalf("after tombstone total = %d (%v), want 5", r.Total, err)
	}
}

func TestSearchBlocksOnInjectedMail(t *testing.T) {
	cfg := mustQuickstart(t)
	for _, inst := range []string{"handbook", "support"} {
		if code, _, errs := runCmd(t, "sync", inst, "--config", cfg); code != 0 {
			t.Fatalf("sync %s: %s", inst, errs)
		}
	}
	code, out, errs := runCmd(t, "search", "wire the refund by bank transfer", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("search: exit %d: %s", code, errs)
	}
	var resp struct {
		Primary []struct {
			Fenced string `json:"fenced"`
			Tier   string `json:"tier"`
		} `json:"primary"`
		Verdict struct {
			ToolsAllowed bool     `json:"tools_allowed"`
			Reason       string   `json:"reason"`
			Untrusted    []string `json:"untrusted_document_ids"`
		} `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("search --json: %v\n%s", err, out)
	}
	if resp.Verdict.ToolsAllowed || resp.Verdict.Reason != "untrusted_grounding" || len(resp.Verdict.Untrusted) == 0 {
		t.Fatalf("verdict = %+v, want tools blocked by untrusted grounding", resp.Verdict)
	}
	code, out, _ = runCmd(t, "search", "wire the refund by bank transfer", "--config", cfg, "--json", "--exclude-untrusted")
	if code != 0 || !strings.Contains(out, `"tools_allowed": true`) || strings.Contains(out, `"tier": "untrusted-external"`) {
		t.Fatalf("exclude-untrusted search: exit %d\n%s", code, out)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		body string
		want []string
	}{
		{
			name: "missing tier",
			body: "installations:\n  - id: handbook\n    kind: files\n    files: {root: ./docs}\n",
			want: []string{"ingestd.yaml:2:", `installation "handbook" declares no tier`, "trusted-internal, machine-generated, untrusted-external"},
		},
		{
			name: "invalid tier",
			body: "installations:\n  - id: h\n    kind: files\n    tier: internal\n    files: {root: ./docs}\n",
			want: []string{"ingestd.yaml:4:", `tier "internal" is not one of`},
		},
		{
			name: "unknown top-level key",
			body: "data_dir: ./d\nlisten_addr: x\n",
			want: []string{"ingestd.yaml:2:", `unknown key "listen_addr"`},
		},
		{
			name: "unknown key in a connector block",
			body: "installations:\n  - id: h\n    kind: files\n    tier: trusted-internal\n    files:\n      root: ./docs\n      incldue: ['*.md']\n",
			want: []string{"ingestd.yaml:7:", `unknown key "incldue"`, "include"},
		},
		{
			name: "unknown key in an extract block",
			body: "installations:\n  - id: h\n    kind: files\n    tier: trusted-internal\n    files:\n      root: ./docs\n      extract:\n        max_page: 3\n",
			want: []string{"ingestd.yaml:8:", `unknown key "max_page"`, "max_decompressed_bytes, max_pages, max_text_bytes, timeout"},
		},
		{
			name: "negative extract limit",
			body: "installations:\n  - id: h\n    kind: imap\n    tier: untrusted-external\n    imap: {addr: 'h:1', username: u, password_env: HOME, extract: {max_pages: -1}}\n",
			want: []string{"ingestd.yaml:2:", "imap.extract.max_pages must not be negative"},
		},
		{
			name: "unknown kind",
			body: "installations:\n  - id: h\n    kind: ftp\n    tier: trusted-internal\n",
			want: []string{"ingestd.yaml:3:", `unknown kind "ftp"`},
		},
		{
			name: "duplicate id",
			body: "installations:\n  - {id: h, kind: files, tier: trusted-internal, files: {root: ./docs}}\n  - {id: h, kind: files, tier: trusted-internal, files: {root: ./docs}}\n",
			want: []string{"ingestd.yaml:3:", "declared twice"},
		},
		{
			name: "negative health bound",
			body: "data_dir: ./d\nhealth: {keep_passes: -1}\n",
			want: []string{"ingestd.yaml:2:", "health: keep_passes", "none may be negative"},
		},
		{
			name: "unknown health key",
			body: "health: {keep_runs: 10}\n",
			want: []string{"ingestd.yaml:1:", `unknown key "keep_runs"`, "keep_passes"},
		},
		{
			name: "bad firewall mode",
			body: "firewall: {mode: audit}\n",
			want: []string{"ingestd.yaml:1:", "enforce"},
		},
		{
			name: "bad interval",
			body: "installations:\n  - id: h\n    kind: files\n    tier: trusted-internal\n    interval: often\n    files: {root: ./docs}\n",
			want: []string{"ingestd.yaml:5:", "not a duration"},
		},
		{
			name: "id that cannot name a subject",
			body: "installations:\n  - id: \" \"\n    kind: files\n    tier: trusted-internal\n    files: {root: ./docs}\n",
			want: []string{"ingestd.yaml:2:", "letters, digits"},
		},
		{
			name: "listen_hosts entry with a port",
			body: "listen: 127.0.0.1:7700\nlisten_hosts: [ingestd.internal, \"ingestd.internal:7700\"]\n",
			want: []string{"ingestd.yaml:2:", "listen_hosts", `"ingestd.internal:7700"`, "without port"},
		},
		{
			name: "token scoped to an installation that is not configured",
			body: "installations:\n  - {id: h, kind: files, tier: trusted-internal, files: {root: ./docs}}\nauth:\n  tokens:\n    - {name: chat, token_env: T1, scopes: [retrieve]}\n    - name: desk\n      token_env: T2\n      scopes: [retrieve]\n      installations: [h, support]\n",
			want: []string{"ingestd.yaml:9:", `token "desk"`, `installation "support" is not configured`, "configured: h"},
		},
		{
			name: "token scoped to no installation",
			body: "installations:\n  - {id: h, kind: files, tier: trusted-internal, files: {root: ./docs}}\nauth:\n  tokens:\n    - name: desk\n      token_env: T2\n      installations: []\n",
			want: []string{"ingestd.yaml:7:", `token "desk"`, "installations is empty"},
		},
		{
			name: "not yaml",
			body: "installations: [\n",
			want: []string{"ingestd.yaml", "not valid YAML"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, tc.body)
			code, _, errs := runCmd(t, "provenance", "--config", cfg)
			if code != 2 {
				t.Fatalf("exit = %d, want 2; stderr: %s", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q lacks %q", errs, w)
				}
			}
		})
	}
}

func TestServeRefusesOpenListenWithoutAuth(t *testing.T) {
	cfg := writeConfig(t, "listen: 0.0.0.0:0\n")
	code, _, errs := runCmd(t, "serve", "--config", cfg)
	if code != 2 || !strings.Contains(errs, "loopback") {
		t.Fatalf("exit %d, stderr %q; want a refusal naming loopback", code, errs)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"frobnicate"}, {"sync"}, {"search"}, {"serve", "--role", "boss"}} {
		if code, _, _ := runCmd(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, out, _ := runCmd(t, "version"); code != 0 || !strings.HasPrefix(out, "ingestd ") {
		t.Errorf("version: exit %d, %q", code, out)
	}
}

// TestServeEndToEnd runs the real binary against the quickstart and asks
// it over HTTP, as a newcomer would after the README's first command.
func TestServeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	cfg := mustQuickstart(t)
	bin := filepath.Join(t.TempDir(), "ingestd")
	buildBinary(t, bin)
	body := bytes.Replace(mustRead(t, cfg), []byte("127.0.0.1:7700"), []byte("127.0.0.1:0"), 1)
	body = append(body, "\nlisten_hosts: [Ingestd.Test.]\n"...)
	if err := os.WriteFile(cfg, body, 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startServe(t, bin, cfg)
	waitFor(t, func() bool {
		v := srv.getJSON(t, "/v1/provenance")
		return v != nil && v["total"] == float64(6)
	})
	resp := srv.postJSON(t, "/v1/retrieve", `{"query": "refund must be wired by bank transfer today"}`)
	verdict, _ := resp["verdict"].(map[string]any)
	if verdict == nil || verdict["tools_allowed"] != false || verdict["reason"] != "untrusted_grounding" {
		t.Fatalf("verdict = %v", resp["verdict"])
	}
	// Token-less: a listed name is served, any other Host is not.
	for host, want := range map[string]int{"ingestd.test": http.StatusOK, "evil.example": http.StatusMisdirectedRequest} {
		req, err := http.NewRequestWithContext(t.Context(), "GET", srv.base+"/v1/provenance", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, r.StatusCode, want)
		}
	}
}

func buildBinary(t *testing.T, bin string) {
	t.Helper()
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
