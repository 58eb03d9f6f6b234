package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/terminal"
)

// runCheckEnv runs `ingestd check --config cfg` with exactly the
// environment vars.
func runCheckEnv(t *testing.T, cfg string, vars map[string]string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: terminal.New(&out), stderr: terminal.New(&errb),
		getenv:    func(k string) string { return vars[k] },
		lookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	code := e.run(context.Background(), []string{"check", "--config", cfg})
	e.stdout.Flush()
	e.stderr.Flush()
	return code, out.String(), errb.String()
}

// exampleSecrets holds a value for every variable the example
// configurations name, each long enough and distinct.
func exampleSecrets() map[string]string {
	vars := map[string]string{}
	for i, k := range []string{"SUPPORT_IMAP_PASSWORD", "GITHUB_TOKEN", "GH_WEBHOOK_SECRET", "INGESTD_TOKEN_CHAT", "INGESTD_TOKEN_ADMIN",
		"INGESTD_TOKEN_METRICS", "INGESTD_POSTGRES_URL", "INGESTD_NATS_PASSWORD", "INGESTD_JOB_KEY", "INGESTD_ERASURE_KEY"} {
		vars[k] = strings.Repeat(string(rune('a'+i)), 8) + "0123456789abcdef0123456789abcdef"
	}
	return vars
}

// TestExamplesCheck: every example configuration, one per connector kind
// and the production one, passes the validation serve runs, with its
// variables set; and with each variable it names unset, check refuses it
// with the file and the line that names the variable.
func TestExamplesCheck(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "..", "examples", "connectors", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	paths = append(paths, filepath.Join("..", "..", "examples", "production", "ingestd.yaml"),
		filepath.Join("..", "..", "examples", "quickstart", "ingestd.yaml"))
	kinds := map[string]bool{}
	for _, p := range paths {
		t.Run(filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p), func(t *testing.T) {
			vars := exampleSecrets()
			code, out, errs := runCheckEnv(t, p, vars)
			if code != 0 || !strings.Contains(out, ": ok: ") {
				t.Fatalf("check: exit %d\nstdout %s\nstderr %s", code, out, errs)
			}
			raw, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`(?m)^\s+kind: (\w+)`).FindAllStringSubmatch(string(raw), -1) {
				kinds[m[1]] = true
			}
			for k := range vars {
				if !strings.Contains(string(raw), ": "+k) {
					continue
				}
				without := exampleSecrets()
				delete(without, k)
				code, _, errs := runCheckEnv(t, p, without)
				if code != 2 || !strings.Contains(errs, k) || !strings.Contains(errs, p+":") {
					t.Errorf("check without %s: exit %d, stderr %q; want 2 naming the variable at file:line", k, code, errs)
				}
			}
		})
	}
	for _, k := range registry().Names() {
		if !kinds[k] {
			t.Errorf("no example configuration has an installation of kind %q", k)
		}
	}
}

// TestCheckRefuses: each configuration error exits 2 with the file and
// its line once, in words a person reads (no Go slices or type names).
func TestCheckRefuses(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	dir := t.TempDir()
	aFile := filepath.Join(dir, "a-file")
	if err := os.WriteFile(aFile, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	const inst = "installations:\n  - {id: h, kind: files, tier: trusted-internal, files: {root: .}}\n"
	for _, tc := range []struct {
		name, body string
		line       int
		want       string
	}{
		{"empty file", "", 0, "the file is empty"},
		{"negative max_tokens", "chunking:\n  max_tokens: -5\n" + inst, 2, "chunking: max_tokens -5 is out of range"},
		{"port out of range", "listen: 127.0.0.1:99999\n" + inst, 1, "is not a number from 0 to 65535"},
		{"data_dir under a file", "data_dir: " + aFile + "/data\n" + inst, 1, "is a file, not a folder"},
		{"negative nats concurrency", "nats:\n  concurrency: -1\n" + inst, 2, "nats: concurrency -1 is out of range"},
		{"unknown kind", "installations:\n  - {id: h, kind: maildir, tier: trusted-internal}\n", 2, "known: files, github, imap, url, webhook"},
		{"unknown key in a kind's block", "installations:\n  - id: h\n    kind: imap\n    tier: untrusted-external\n    imap:\n      addr: x:993\n      usernme: x\n", 7, `unknown key "usernme"`},
		{"unset token variable", "auth:\n  tokens:\n    - {name: chat, token_env: NOT_SET_ANYWHERE, scopes: [retrieve]}\n" + inst, 3, "NOT_SET_ANYWHERE is not set"},
		{"unset imap password", "installations:\n  - id: h\n    kind: imap\n    tier: untrusted-external\n    imap: {addr: \"x:993\", username: u, password_env: NOT_SET_ANYWHERE}\n", 2, "NOT_SET_ANYWHERE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "ingestd.yaml")
			if err := os.WriteFile(cfg, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errs := runCheckEnv(t, cfg, map[string]string{})
			loc := cfg + ":"
			if tc.line > 0 {
				loc = cfg + ":" + strconv.Itoa(tc.line) + ":"
			}
			if code != 2 || !strings.Contains(errs, loc) || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 2, %q and %q", code, errs, loc, tc.want)
			}
			if n := strings.Count(errs, cfg); n != 1 {
				t.Errorf("the file is named %d times in %q", n, errs)
			}
			if regexp.MustCompile(`\[[a-z]+ [a-z]|\*?[a-z]+\.[A-Z][A-Za-z]+|!!`).MatchString(errs) {
				t.Errorf("a Go value or type in %q", errs)
			}
		})
	}
	// A port something holds is not the configuration's fault at check
	// time (it may be this deployment's serve): check says so and passes.
	cfg := filepath.Join(t.TempDir(), "ingestd.yaml")
	if err := os.WriteFile(cfg, []byte("listen: "+busy.Addr().String()+"\n"+inst), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCheckEnv(t, cfg, map[string]string{}); code != 0 || !strings.Contains(out, "listens on "+busy.Addr().String()+" already") {
		t.Errorf("port in use: exit %d, stdout %q, stderr %q; want 0 and a note", code, out, errs)
	}
}
