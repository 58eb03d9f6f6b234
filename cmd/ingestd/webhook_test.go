package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
