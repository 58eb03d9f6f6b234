package webhook_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/connectors/webhook"
)

// goWords are what a message that leaked Go's own words would hold: a
// type name, a struct field path, encoding/json's prefix.
var goWords = regexp.MustCompile(`Go struct|Go value|json: |unmarshal|\bint\b|\bstring\b into|map\[|\[\]`)

// TestRefusalsShareTheAPIShape: every refusal of the intake is the API's
// {"error": {"code", "message"}}, and no message names a Go type.
func TestRefusalsShareTheAPIShape(t *testing.T) {
	hs := MustHarness(t, map[string]webhook.Endpoint{
		"gh":  MustEndpoint(t, "gh", webhook.Config{}, ghSecret),
		"std": MustEndpoint(t, "std", webhook.Config{Flavor: "standard"}, whsec(stdKeyNew)),
	}, 0)
	// An issues event whose issue number is a string: it verifies, then
	// cannot be read as GitHub's shape.
	badIssue := []byte(`{"action":"opened","issue":{"number":"seven","title":"t"},"repository":{"full_name":"o/r"}}`)
	tests := []struct {
		name     string
		send     func() *httptest.ResponseRecorder
		wantCode int
		want     string // in the message
	}{
		{"a GET", func() *httptest.ResponseRecorder {
			w := httptest.NewRecorder()
			hs.h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/v1/webhooks/gh", nil))
			return w
		}, http.StatusMethodNotAllowed, "POST"},
		{"an installation without webhooks", func() *httptest.ResponseRecorder {
			return hs.postGitHub("/v1/webhooks/handbook", "issues", "d1", signGitHub(ghSecret, badIssue), badIssue)
		}, http.StatusNotFound, `"handbook" takes no webhooks`},
		{"not JSON", func() *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodPost, "/v1/webhooks/gh", strings.NewReader("a=b"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			w := httptest.NewRecorder()
			hs.h.ServeHTTP(w, r)
			return w
		}, http.StatusUnsupportedMediaType, "application/json"},
		{"unsigned", func() *httptest.ResponseRecorder {
			return hs.postGitHub("/v1/webhooks/gh", "issues", "d2", "", badIssue)
		}, http.StatusUnauthorized, "signature"},
		{"a field of the wrong type", func() *httptest.ResponseRecorder {
			return hs.postGitHub("/v1/webhooks/gh", "issues", "d3", signGitHub(ghSecret, badIssue), badIssue)
		}, http.StatusUnprocessableEntity, `"issue.number" must be a whole number, not a string`},
		{"standard: not JSON", func() *httptest.ResponseRecorder {
			body := []byte(`{"id": 1,`)
			return hs.postStandard("m1", t0, signStandard(stdKeyNew, "m1", "1709294400", body), body)
		}, http.StatusUnprocessableEntity, "ends early"},
		{"the queue is down", func() *httptest.ResponseRecorder {
			body := MustPayload(t, "issues.opened.json")
			hs.fail = errors.New("jetstream down")
			defer func() { hs.fail = nil }()
			return hs.postGitHub("/v1/webhooks/gh", "issues", "d4", signGitHub(ghSecret, body), body)
		}, http.StatusServiceUnavailable, "retry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.send()
			if w.Code != tt.wantCode {
				t.Fatalf("%d %s, want %d", w.Code, w.Body, tt.wantCode)
			}
			var body struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			dec := json.NewDecoder(w.Body)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil || body.Error.Code == "" || body.Error.Message == "" {
				t.Fatalf("body %q (%v): want {\"error\": {\"code\", \"message\"}}", w.Body, err)
			}
			if !strings.Contains(body.Error.Message, tt.want) {
				t.Errorf("message %q, want it to say %q", body.Error.Message, tt.want)
			}
			if m := goWords.FindString(body.Error.Message); m != "" {
				t.Errorf("message %q names Go's %q", body.Error.Message, m)
			}
		})
	}
}
