package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/github"
	"github.com/ingestd/ingestd/connectors/webhook"
)

// FuzzVerifySignature checks that neither verifier panics and that a
// signature passes only when it is the true HMAC of the body.
func FuzzVerifySignature(f *testing.F) {
	var vectors struct {
		Vectors []struct {
			Secret    string `json:"secret"`
			Payload   string `json:"payload"`
			Signature string `json:"x_hub_signature_256"`
		} `json:"vectors"`
	}
	if err := json.Unmarshal(MustPayload(f, "signature_vectors.json"), &vectors); err != nil {
		f.Fatal(err)
	}
	for _, v := range vectors.Vectors { // the published vectors
		f.Add([]byte(v.Secret), []byte(v.Payload), v.Signature, "msg_1", "1709294400")
	}
	f.Add([]byte("It's a Secret to Everybody"), []byte("Hello, World!"), "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17", "msg_1", "1709294400")
	f.Add([]byte("k"), []byte("{}"), "v1,AAAA v1,", "", "-1")
	f.Add([]byte(""), []byte(""), "sha256=", "id", "99999999999999999999")
	f.Fuzz(func(t *testing.T, secret, body []byte, sig, id, ts string) {
		m := hmac.New(sha256.New, secret)
		m.Write(body)
		truth := m.Sum(nil)
		if webhook.VerifyGitHub([][]byte{secret}, body, sig) == nil {
			got, err := hex.DecodeString(strings.TrimPrefix(sig, "sha256="))
			if err != nil || !hmac.Equal(got, truth) {
				t.Fatalf("bad github signature %q passed", sig)
			}
		}
		now := time.Unix(1709294400, 0)
		if webhook.VerifyStandard([][]byte{secret}, id, ts, body, sig, now, 5*time.Minute) == nil {
			sm := hmac.New(sha256.New, secret)
			sm.Write([]byte(id + "." + ts + "."))
			sm.Write(body)
			want := "v1," + base64.StdEncoding.EncodeToString(sm.Sum(nil))
			if !strings.Contains(" "+sig+" ", " "+want+" ") && !containsDecoded(sig, sm.Sum(nil)) {
				t.Fatalf("bad standard signature %q passed", sig)
			}
			if n, err := strconv.ParseInt(ts, 10, 64); err != nil || now.Sub(time.Unix(n, 0)).Abs() > 5*time.Minute {
				t.Fatalf("stale timestamp %q passed", ts)
			}
		}
	})
}

func containsDecoded(header string, want []byte) bool {
	for _, f := range strings.Fields(header) {
		if b, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(f, "v1,")); err == nil && strings.HasPrefix(f, "v1,") && hmac.Equal(b, want) {
			return true
		}
	}
	return false
}

// FuzzDecodePayload feeds arbitrary verified bodies to both flavours'
// mappers (the github one supplied by connectors/github): they may refuse,
// never panic, and an accepted job always names its document.
func FuzzDecodePayload(f *testing.F) {
	payloads, err := filepath.Glob(filepath.Join(hooksDir, "*.*.json"))
	if err != nil || len(payloads) == 0 {
		f.Fatalf("no payloads in %s: %v", hooksDir, err)
	}
	for _, p := range payloads { // every recorded delivery, under its event
		event, _, _ := strings.Cut(filepath.Base(p), ".")
		f.Add(event, MustPayload(f, filepath.Base(p)))
	}
	f.Add("pull_request", []byte(`{"pull_request":null,"repository":{"full_name":"a/b"}}`))
	f.Add("standard", []byte(`{"id":1,"title":"t","deleted":"yes"}`))
	ghm, err := github.WebhookFlavor.Mapper("x", nil)
	if err != nil {
		f.Fatal(err)
	}
	std, err := webhook.NewStandardMapper("x", webhook.StandardConfig{})
	if err != nil {
		f.Fatal(err)
	}
	events := []string{"issues", "issue_comment", "pull_request", "pull_request_review_comment", "push", "ping", "installation"}
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		for _, ev := range append(events, event) {
			jobs, err := ghm.Map(connectors.Delivery{Header: http.Header{"X-Github-Event": {ev}}, Body: body})
			if err != nil {
				continue
			}
			for _, j := range jobs {
				if j.Item != nil && j.Item.ExternalID == "" || j.Kind == "delete" && j.ExternalID == "" {
					t.Fatalf("%s: job without an id: %+v", ev, j)
				}
			}
		}
		if jobs, err := std.Map(connectors.Delivery{Body: body, SentAt: time.Unix(1709294400, 0)}); err == nil {
			for _, job := range jobs {
				if job.Item != nil && job.Item.ExternalID == "" || job.Kind == "delete" && job.ExternalID == "" {
					t.Fatalf("standard: job without an id: %+v", job)
				}
			}
		}
	})
}
