package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Secret values the daemon gets from its environment. Each is distinctive
// enough that finding it anywhere in a log or a response is a leak.
var secretValues = map[string]string{
	"E2E_TOKEN_CHAT":     "tok-chat-7f3a9c1e55d0b2a4e8613f09d5c7b2",
	"E2E_TOKEN_ADMIN":    "tok-admin-c81d2e6f90ab4437a05e9d12f3b86c",
	"E2E_TOKEN_METRICS":  "tok-metrics-5b0e8c3a71f94d26e0a7c9b4",
	"E2E_WEBHOOK_SECRET": "whk-secret-3e9b7a12d4c6f801",
	"E2E_IMAP_PASSWORD":  "imap-pass-91c4e7d2a0b35f68",
}

// daemon is an `ingestd serve` process with everything it wrote.
type daemon struct {
	cmd  *exec.Cmd
	base string
	mu   sync.Mutex
	out  strings.Builder
}

var listenRE = regexp.MustCompile(`msg=serve.listening addr=(\S+)`)

// MustBuildIngestd builds the ingestd binary into a temp dir.
func MustBuildIngestd(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "ingestd")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/ingestd/ingestd/cmd/ingestd").CombinedOutput(); err != nil {
		tb.Fatalf("build ingestd: %v\n%s", err, out)
	}
	return bin
}

// mustStartDaemon runs `ingestd serve --config cfg` with env added to the
// environment and waits until it listens; it is stopped with SIGTERM when
// the test ends (or by stop).
func mustStartDaemon(tb testing.TB, bin, cfg string, env []string) *daemon {
	tb.Helper()
	d := &daemon{cmd: exec.Command(bin, "serve", "--config", cfg)}
	d.cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	d.cmd.Stdout, d.cmd.Stderr = pw, pw
	if err := d.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			d.mu.Lock()
			d.out.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	tb.Cleanup(func() { d.stop(tb); pw.Close() })
	select {
	case a := <-addr:
		d.base = "http://" + a
	case <-time.After(60 * time.Second):
		tb.Fatalf("serve did not listen within 60s\n%s", d.log())
	}
	return d
}

func (d *daemon) stop(tb testing.TB) {
	if d.cmd.ProcessState != nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			tb.Errorf("serve exited with %v", err)
		}
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-done
		tb.Errorf("serve did not stop within 30s of SIGTERM")
	}
}

func (d *daemon) log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.out.String()
}

// TestSecretsNeverLogged runs the daemon with known secrets for two
// bearer tokens, a webhook secret and an IMAP password, provokes the
// failures most likely to print one (wrong, missing and under-scoped
// tokens, bad webhook signatures, an IMAP login the server refuses, at
// debug level), and searches every log line and response body for each
// secret, raw and base64-encoded.
func TestSecretsNeverLogged(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	// The IMAP server knows another password: every login fails.
	imapSrv := MustIMAPServer(t, "the-right-password")
	dir := t.TempDir()
	mustWriteFile(t, filepath.Join(dir, "handbook", "refunds.md"), []byte("# Refunds\n\nRefunds go back to the card.\n"))
	cfg := filepath.Join(dir, "ingestd.yaml")
	mustWriteFile(t, cfg, []byte(fmt.Sprintf(`data_dir: ./data
listen: 127.0.0.1:0
log: {format: text, level: debug}
auth:
  tokens:
    - {name: chat, token_env: E2E_TOKEN_CHAT, scopes: [retrieve]}
    - {name: ops, token_env: E2E_TOKEN_ADMIN, scopes: [retrieve, admin]}
    - {name: prometheus, token_env: E2E_TOKEN_METRICS, scopes: [metrics]}
installations:
  - id: handbook
    kind: files
    tier: trusted-internal
    files: {root: ./handbook}
  - id: support
    kind: imap
    tier: untrusted-external
    interval: 1s
    imap: {addr: "%s", username: %s, password_env: E2E_IMAP_PASSWORD, tls: none, insecure: true, timeout: 5s}
  - id: hooks
    kind: webhook
    tier: untrusted-external
    webhook: {flavor: github, secret_env: E2E_WEBHOOK_SECRET}
`, imapSrv.Addr, imapUser)))
	var env []string
	for k, v := range secretValues {
		env = append(env, k+"="+v)
	}
	d := mustStartDaemon(t, MustBuildIngestd(t), cfg, env)

	var responses bytes.Buffer
	do := func(method, path, token string, hdr map[string]string, body string, want int) {
		t.Helper()
		req, err := http.NewRequest(method, d.base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&responses, "%s %s -> %d %v\n%s\n", method, path, resp.StatusCode, resp.Header, b)
		if resp.StatusCode != want {
			t.Errorf("%s %s: %d %s; want %d", method, path, resp.StatusCode, b, want)
		}
	}
	chat, admin := secretValues["E2E_TOKEN_CHAT"], secretValues["E2E_TOKEN_ADMIN"]
	q := `{"query": "refund card"}`
	do("POST", "/v1/retrieve", "", nil, q, http.StatusUnauthorized)
	do("POST", "/v1/retrieve", "wrong-token", nil, q, http.StatusUnauthorized)
	do("POST", "/v1/retrieve", chat[:len(chat)-1], nil, q, http.StatusUnauthorized) // all but the last byte
	do("POST", "/v1/retrieve", chat+"x", nil, q, http.StatusUnauthorized)
	do("POST", "/v1/retrieve", chat, nil, q, http.StatusOK)
	do("POST", "/v1/retrieve", chat, nil, `{"query": `, http.StatusBadRequest)
	do("POST", "/v1/installations/support/sync", chat, nil, "", http.StatusForbidden) // lacks admin
	do("POST", "/v1/installations/support/sync", admin, nil, "", http.StatusAccepted)
	do("GET", "/v1/provenance", "nope", nil, "", http.StatusUnauthorized)

	hook := `{"zen": "Keep it logically awesome.", "hook_id": 1}`
	wrongSig := signGitHub("not-the-secret", []byte(hook))
	for _, h := range []map[string]string{
		{"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d1"},
		{"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d2", "X-Hub-Signature-256": wrongSig},
		{"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d3", "X-Hub-Signature-256": "sha256=zz"},
	} {
		do("POST", "/v1/webhooks/hooks", "", h, hook, http.StatusUnauthorized)
	}
	do("POST", "/v1/webhooks/hooks", "", map[string]string{"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d4",
		"X-Hub-Signature-256": signGitHub(secretValues["E2E_WEBHOOK_SECRET"], []byte(hook))}, hook, http.StatusOK)
	do("GET", "/metrics", "", nil, "", http.StatusUnauthorized)
	do("GET", "/metrics", chat, nil, "", http.StatusForbidden)
	do("GET", "/metrics", secretValues["E2E_TOKEN_METRICS"], nil, "", http.StatusOK)
	do("GET", "/readyz", "", nil, "", http.StatusOK)

	// Wait for the IMAP installation's refused login to be logged.
	deadline := time.Now().Add(60 * time.Second)
	for !imapFailureLogged(d.log()) {
		if time.Now().After(deadline) {
			t.Fatalf("no failed IMAP sync logged within 60s\n%s", d.log())
		}
		time.Sleep(200 * time.Millisecond)
	}
	d.stop(t)

	logs := d.log()
	for name, v := range secretValues {
		for form, s := range map[string]string{
			"raw":    v,
			"base64": base64.StdEncoding.EncodeToString([]byte(v)),
			// SASL PLAIN carries "\x00user\x00password" in base64.
			"sasl": base64.StdEncoding.EncodeToString([]byte("\x00" + imapUser + "\x00" + v)),
		} {
			if strings.Contains(logs, s) {
				t.Errorf("%s (%s form) appears in the daemon's output", name, form)
			}
			if strings.Contains(responses.String(), s) {
				t.Errorf("%s (%s form) appears in an HTTP response", name, form)
			}
		}
	}
	t.Logf("searched %d bytes of logs (%d lines) and %d bytes of responses for %d secrets", len(logs), strings.Count(logs, "\n"),
		responses.Len(), len(secretValues))
	if t.Failed() {
		t.Logf("logs:\n%s\nresponses:\n%s", logs, responses.String())
	}
}

func imapFailureLogged(logs string) bool {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "support") && (strings.Contains(l, "level=ERROR") || strings.Contains(l, "level=WARN")) &&
			(strings.Contains(strings.ToLower(l), "login") || strings.Contains(strings.ToLower(l), "auth")) {
			return true
		}
	}
	return false
}
