package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/webhook"
)

// TestWebhookToRetrieval sends a real, signed GitHub delivery to a running
// serve and finds the issue in retrieval with a blocking verdict: intake →
// JetStream → worker → store → retrieval, in the shipped binary.
func TestWebhookToRetrieval(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	payload, err := os.ReadFile(filepath.Join("testdata", "github-webhooks", "issues.opened.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ingestd.yaml")
	if err := os.WriteFile(cfg, []byte(`listen: 127.0.0.1:0
installations:
  - id: gh-hooks
    kind: webhook
    tier: untrusted-external
    webhook: {flavor: github, secret_env: TEST_GH_WEBHOOK_SECRET}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	const secret = "It's a Secret to Everybody"
	t.Setenv("TEST_GH_WEBHOOK_SECRET", secret)
	bin := filepath.Join(dir, "ingestd")
	buildBinary(t, bin)
	srv := startServe(t, bin, cfg)

	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(payload)
	send := func(sig string) int {
		req, _ := http.NewRequest("POST", srv.base+"/v1/webhooks/gh-hooks", strings.NewReader(string(payload)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
		req.Header.Set("X-Hub-Signature-256", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send("sha256=" + strings.Repeat("0", 64)); got != http.StatusUnauthorized {
		t.Fatalf("bad signature: status %d, want 401", got)
	}
	if got := send("sha256=" + hex.EncodeToString(mac.Sum(nil))); got != http.StatusAccepted {
		t.Fatalf("signed delivery: status %d, want 202", got)
	}
	waitFor(t, func() bool {
		v := srv.getJSON(t, "/v1/provenance")
		return v != nil && v["total"] == float64(1) && v["externally_authored"] == float64(1)
	})
	resp := srv.postJSON(t, "/v1/retrieve", `{"query": "Spelling error in the README file"}`)
	verdict, _ := resp["verdict"].(map[string]any)
	if verdict == nil || verdict["tools_allowed"] != false {
		t.Fatalf("verdict = %v, want tools blocked", resp["verdict"])
	}
}

// TestWebhookReplayAcrossProcessesAndRestart signs one real delivery and
// sends it to a serve; the same body under a new X-GitHub-Delivery goes to
// a second serve (--role api, on the first one's NATS), then to the first
// after a restart. Both are duplicates: the replay memory is the
// JetStream bucket every process shares, on disk.
func TestWebhookReplayAcrossProcessesAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	dir := t.TempDir()
	natsAddr := freeAddr(t)
	write := func(name, nats string) string {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(`listen: 127.0.0.1:0
data_dir: `+filepath.Join(dir, "data")+`
nats: `+nats+`
installations:
  - id: gh-hooks
    kind: webhook
    tier: untrusted-external
    webhook: {flavor: github, secret_env: TEST_GH_WEBHOOK_SECRET}
`), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A NATS listener needs credentials and a job key (see nats_test.go).
	cfgA := write("a", "{listen: "+natsAddr+", token_env: TEST_NATS_TOKEN, job_key_env: TEST_JOB_KEY}")
	cfgB := write("b", "{url: nats://"+natsAddr+", token_env: TEST_NATS_TOKEN, job_key_env: TEST_JOB_KEY}")
	const secret = "It's a Secret to Everybody"
	t.Setenv("TEST_GH_WEBHOOK_SECRET", secret)
	t.Setenv("TEST_NATS_TOKEN", "a token for the webhook replay test's NATS")
	t.Setenv("TEST_JOB_KEY", "0123456789abcdef0123456789abcdef-replay-test")
	bin := filepath.Join(dir, "ingestd")
	buildBinary(t, bin)

	body := mustRead(t, filepath.Join("testdata", "github-webhooks", "issues.opened.json"))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	send := func(srv *served, delivery string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.base+"/v1/webhooks/gh-hooks", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", delivery)
		req.Header.Set("X-Hub-Signature-256", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	a := startServe(t, bin, cfgA)
	if got := send(a, "delivery-1"); got != http.StatusAccepted {
		t.Fatalf("first delivery: %d, want 202\n%s", got, a.log())
	}
	b := startServe(t, bin, cfgB, "--role", "api")
	if got := send(b, "delivery-2"); got != http.StatusOK {
		t.Errorf("replay to a second process: %d, want 200 (duplicate)", got)
	}
	b.stop(t)
	a.stop(t)
	a = startServe(t, bin, cfgA)
	if got := send(a, "delivery-3"); got != http.StatusOK {
		t.Errorf("replay after a restart: %d, want 200 (duplicate)", got)
	}
}

// TestWebhookIntakeMemoryFlat sends 32 concurrent 24 MiB bodies to a
// running serve, first without a signature header, then with a
// well-formed but wrong one, and reads the process's peak resident size
// (VmHWM) before and after each wave: unauthenticated bodies are never
// held whole, so the peak grows by far less than one wave's 768 MiB.
func TestWebhookIntakeMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/PID/status")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ingestd.yaml")
	if err := os.WriteFile(cfg, []byte(`listen: 127.0.0.1:0
data_dir: `+filepath.Join(dir, "data")+`
installations:
  - id: gh-hooks
    kind: webhook
    tier: untrusted-external
    webhook: {flavor: github, secret_env: TEST_GH_WEBHOOK_SECRET}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_GH_WEBHOOK_SECRET", "It's a Secret to Everybody")
	bin := filepath.Join(dir, "ingestd")
	buildBinary(t, bin)
	srv := startServe(t, bin, cfg)
	waitFor(t, func() bool { v := srv.getJSON(t, "/readyz"); return v != nil })

	const clients, size = 32, 24 << 20
	wave := func(headers map[string]string) map[string]int {
		client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: clients, DisableKeepAlives: true}}
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", srv.base+"/v1/webhooks/gh-hooks", io.LimitReader(zeros{}, size))
				req.ContentLength = size
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-GitHub-Event", "issues")
				for k, v := range headers {
					req.Header.Set(k, v)
				}
				// A server that answers without reading the body closes
				// the connection under the client's writes: it sees the
				// 401 or a reset, whichever comes first.
				outcome := "cut off"
				if resp, err := client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					outcome = strconv.Itoa(resp.StatusCode)
				}
				mu.Lock()
				got[outcome]++
				mu.Unlock()
			})
		}
		wg.Wait()
		return got
	}
	const limit = 100 << 20
	base := vmHWM(t, srv.cmd.Process.Pid)
	unsigned := wave(nil)
	afterUnsigned := vmHWM(t, srv.cmd.Process.Pid)
	bogus := wave(map[string]string{"X-Hub-Signature-256": "sha256=" + strings.Repeat("0", 64)})
	afterBogus := vmHWM(t, srv.cmd.Process.Pid)
	t.Logf("VmHWM: %d MiB at rest; %d MiB after %d×%d MiB without a signature %v; %d MiB after the same with a bogus signature %v",
		base>>20, afterUnsigned>>20, clients, size>>20, unsigned, afterBogus>>20, bogus)
	if unsigned["401"]+unsigned["cut off"] != clients {
		t.Errorf("without a signature: %v, want 401s (or connections cut) only", unsigned)
	}
	if bogus["401"]+bogus["503"]+bogus["cut off"] != clients {
		t.Errorf("bogus signature: %v, want 401s and 503s (or connections cut) only", bogus)
	}
	// The server's own account: every request refused, for its reason.
	count := func(s string) int { return strings.Count(srv.log(), s) }
	waitFor(t, func() bool {
		return count(`reason="missing signature"`) == clients &&
			count(`reason="signature does not match"`)+count("unverified intake full") == clients
	})
	if g := afterUnsigned - base; g > limit {
		t.Errorf("peak grew %d MiB under unsigned bodies, want < %d MiB", g>>20, limit>>20)
	}
	if g := afterBogus - base; g > limit {
		t.Errorf("peak grew %d MiB under bogus-signed bodies, want < %d MiB", g>>20, limit>>20)
	}
}

// zeros reads as an endless run of '0'.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

// vmHWM is the peak resident set size of a process, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestWebhookConfigReplayWindow reads webhook.replay_window from YAML, and
// the flavour's own keys beside the kind's: each flavour takes its keys
// and refuses the other's, naming the line.
func TestWebhookConfigReplayWindow(t *testing.T) {
	tests := []struct {
		block   string
		want    time.Duration
		wantErr string
	}{
		{"{secret_env: S}", webhook.DefaultReplayWindow, ""},
		{"{secret_env: S, replay_window: 48h, tolerance: 2m}", 48 * time.Hour, ""},
		{"{secret_env: S, replay_window: -1h}", 0, "replay_window"},
		{"{secret_env: S, replay_window: soon}", 0, "ingestd.yaml:2"},
		{"{flavor: github, secret_env: S, docs_paths: [docs/**], sync_installation: repo}", webhook.DefaultReplayWindow, ""},
		{"{flavor: github, secret_env: S, docs_paths: [\"[\"]}", 0, "docs_paths[0]"},
		{"{flavor: standard, secret_env: S, fields: {id: /data/id}, format: markdown}", webhook.DefaultReplayWindow, ""},
		{"{flavor: standard, secret_env: S, docs_paths: [docs/**]}", 0, `unknown key "docs_paths"`},
		{"{secret_env: S, fields: {id: /data/id}}", 0, `unknown key "fields"`},
		{"{flavor: gitlab, secret_env: S}", 0, `webhook.flavor "gitlab"`},
		{"{flavor: [github], secret_env: S}", 0, "webhook.flavor"},
	}
	for _, tt := range tests {
		t.Run(tt.block, func(t *testing.T) {
			reg := registry()
			raw := "installations:\n  - {id: hooks, kind: webhook, tier: untrusted-external, webhook: " + tt.block + "}\n"
			cfg, err := config.Parse("ingestd.yaml", []byte(raw), reg)
			var c connectors.Connector
			if err == nil {
				ic := cfg.Installations[0]
				c, err = reg.Build(ic.Installation(), connectors.Settings{
					Decode:    func(v any) error { return cfg.DecodeBlock(ic, v) },
					LookupEnv: func(string) (string, bool) { return "whsec_c2VjcmV0", true },
				})
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Intake == nil {
				t.Fatal("a webhook installation has no Intake")
			}
			if got := c.Intake.ReplayWindow; got != tt.want {
				t.Errorf("replay window = %s, want %s", got, tt.want)
			}
		})
	}
}
