package daemon

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ingestd/ingestd"
)

// TestQueueGateAnswersUntilOpen: before the queue is open the gate says
// what the process waits for, and the webhook route answers 503 with
// Retry-After so a sender retries; once the intake is set it serves.
func TestQueueGateAnswersUntilOpen(t *testing.T) {
	var g queueGate
	if _, err := g.get(); ingestd.ErrorCode(err) != ingestd.EUNAVAILABLE || ingestd.ErrorMessage(err) != "waiting for the job stream" {
		t.Errorf("get before open: %v, want EUNAVAILABLE waiting for the job stream", err)
	}
	hooks := g.webhooks()
	rec := httptest.NewRecorder()
	hooks.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/webhooks/hooks", nil))
	if got, want := rec.Code, http.StatusServiceUnavailable; got != want {
		t.Errorf("webhook before open: %d, want %d", got, want)
	}
	if rec.Header().Get("Retry-After") == "" {
		t.Error("webhook before open: no Retry-After")
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Code != ingestd.EUNAVAILABLE || body.Error.Message == "" {
		t.Errorf("webhook before open: body %q (%v), want the API's {\"error\": {\"code\", \"message\"}}", rec.Body, err)
	}
	g.setWebhooks(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	rec = httptest.NewRecorder()
	hooks.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/webhooks/hooks", nil))
	if got, want := rec.Code, http.StatusAccepted; got != want {
		t.Errorf("webhook once the intake is set: %d, want %d", got, want)
	}
	g.set(&Queue{})
	if jq, err := g.get(); err != nil || jq == nil {
		t.Errorf("get once open: %v, %v", jq, err)
	}
}
