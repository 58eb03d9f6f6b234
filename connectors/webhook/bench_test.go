package webhook_test

import (
	"strconv"
	"testing"

	"github.com/ingestd/ingestd/connectors/webhook"
)

// BenchmarkServeGitHub is one signed pull_request delivery (28 KiB)
// through the handler: verify, dedupe, map, enqueue.
func BenchmarkServeGitHub(b *testing.B) {
	hs := MustHarness(b, map[string]webhook.Endpoint{"gh": MustEndpoint(b, "gh", webhook.Config{}, ghSecret)}, 0)
	body := MustPayload(b, "pull_request.opened.json")
	sig := signGitHub(ghSecret, body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if w := hs.postGitHub("/v1/webhooks/gh", "pull_request", "d"+strconv.Itoa(i), sig, body); w.Code != 202 && w.Code != 200 {
			b.Fatalf("code %d", w.Code)
		}
		hs.Jobs()
	}
}

// BenchmarkVerifyGitHub is the signature check alone on the same body.
func BenchmarkVerifyGitHub(b *testing.B) {
	body := MustPayload(b, "pull_request.opened.json")
	sig := signGitHub(ghSecret, body)
	secrets := [][]byte{[]byte(ghSecret)}
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := webhook.VerifyGitHub(secrets, body, sig); err != nil {
			b.Fatal(err)
		}
	}
}
