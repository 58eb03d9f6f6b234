package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/jobs/jobstest"
)

// TestServeWaitsForJobStream starts serve while its NATS cluster has no
// JetStream leader (one node of three up, as during an election): the
// process stays up and says why at every attempt, /healthz is 200,
// /readyz is 503 "waiting for the job stream", retrieval answers, and a
// webhook gets 503 so its sender retries. Once the other nodes come up
// the queue opens, /readyz turns 200 and the webhook is stored. Before,
// serve exited with "stream INGESTD_JOBS: context deadline exceeded".
func TestServeWaitsForJobStream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	cluster := jobstest.MustCluster(t, 0)
	const secret = "It's a Secret to Everybody"
	t.Setenv("TEST_NATS_PASSWORD", jobstest.Password)
	t.Setenv("TEST_JOB_KEY", "job-key-for-the-test-0123456789abcdef")
	t.Setenv("TEST_GH_WEBHOOK_SECRET", secret)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "ingestd.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
nats:
  url: %q
  user: %s
  password_env: TEST_NATS_PASSWORD
  job_key_env: TEST_JOB_KEY
  replicas: 3
  startup_timeout: 5m
installations:
  - id: gh-hooks
    kind: webhook
    tier: untrusted-external
    webhook: {flavor: github, secret_env: TEST_GH_WEBHOOK_SECRET}
`, cluster.URL(), jobstest.User)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "ingestd")
	buildBinary(t, bin)
	srv := launchServe(t, startedRE, bin, cfg)

	get := func(path string) (int, string) {
		resp, err := http.Get(srv.base + path)
		if err != nil {
			t.Fatalf("GET %s: %v\n%s", path, err, srv.log())
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	payload := mustRead(t, filepath.Join("testdata", "github-webhooks", "issues.opened.json"))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(payload)
	deliver := func() int {
		req, _ := http.NewRequest("POST", srv.base+"/v1/webhooks/gh-hooks", strings.NewReader(string(payload)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	waitFor(t, func() bool { return strings.Count(srv.log(), "msg=jobs.waiting") >= 2 })
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "waiting for the job stream") {
		t.Errorf("/readyz while waiting = %d %s, want 503 waiting for the job stream", code, body)
	}
	if code, body := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while waiting = %d %s, want 200", code, body)
	}
	if got := deliver(); got != http.StatusServiceUnavailable {
		t.Errorf("webhook while waiting: status %d, want 503", got)
	}
	if v := srv.postJSON(t, "/v1/retrieve", `{"query": "anything"}`); v["verdict"] == nil {
		t.Errorf("retrieve while waiting = %v, want an answer with a verdict", v)
	}
	if !strings.Contains(srv.log(), "reason=") {
		t.Errorf("jobs.waiting lines do not say why:\n%s", srv.log())
	}

	cluster.Start(t, 1)
	cluster.Start(t, 2)
	waitFor(t, func() bool { code, _ := get("/readyz"); return code == http.StatusOK })
	if !listenRE.MatchString(srv.log()) {
		t.Errorf("no serve.listening once the queue opened:\n%s", srv.log())
	}
	if got := deliver(); got != http.StatusAccepted {
		t.Fatalf("webhook once ready: status %d, want 202\n%s", got, srv.log())
	}
	waitFor(t, func() bool {
		v := srv.getJSON(t, "/v1/provenance")
		return v != nil && v["total"] == float64(1)
	})
}
