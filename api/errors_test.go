package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
)

// TestWebhookRouteWithoutWebhooks: on a server where no installation
// takes webhooks, a delivery is told so in the API's error shape, not
// that the route does not exist.
func TestWebhookRouteWithoutWebhooks(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	status, body, _ := e.do(t, "POST", "/v1/webhooks/handbook", "", `{}`)
	if status != http.StatusNotFound || restCode(t, body) != ingestd.ENOTFOUND {
		t.Fatalf("%d %s, want 404 not_found", status, body)
	}
	if msg := errorMessage(t, body); !strings.Contains(msg, `"handbook" takes no webhooks`) || strings.Contains(msg, "no route") {
		t.Errorf("message %q, want it to say the installation takes no webhooks", msg)
	}
}
