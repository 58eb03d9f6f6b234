package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
)

// TestBlocksRoute: after a turn the acceptance injection mail blocks, GET
// /v1/blocks counts it and names the mail to an admin token; a token
// limited to the handbook sees the counts but not the mail; a retrieve
// token is refused.
func TestBlocksRoute(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Tokens: []api.Token{
		{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
		{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin, api.ScopeRetrieve}},
		{Name: "handbook-ops", Token: opsToken, Scopes: []string{api.ScopeAdmin}, Installations: []string{"handbook"}},
	}})
	status, body, _ := e.do(t, "POST", "/v1/retrieve", chatToken, map[string]any{"query": "refund IBAN transfer"})
	if status != http.StatusOK {
		t.Fatalf("retrieve: %d %s", status, body)
	}
	var resp ingestd.RetrieveResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Verdict.ToolsAllowed || len(resp.Verdict.UntrustedDocumentIDs) == 0 {
		t.Fatalf("the acceptance query was not blocked: %+v", resp.Verdict)
	}

	report := func(token string) ingestd.BlockReport {
		t.Helper()
		status, body, _ := e.do(t, "GET", "/v1/blocks", token, nil)
		if status != http.StatusOK {
			t.Fatalf("GET /v1/blocks: %d %s", status, body)
		}
		var rep ingestd.BlockReport
		if err := json.Unmarshal(body, &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	all := report(adminToken)
	if all.Turns != 1 || all.Blocked != 1 || len(all.Buckets) != 1 || len(all.Documents) != len(resp.Verdict.UntrustedDocumentIDs) {
		t.Errorf("admin report %+v, want the one blocked turn and its %d documents", all, len(resp.Verdict.UntrustedDocumentIDs))
	}
	for _, d := range all.Documents {
		if d.Installation == "handbook" || d.Blocks != 1 {
			t.Errorf("document %+v", d)
		}
	}
	if limited := report(opsToken); limited.Blocked != 1 || len(limited.Documents) != 0 {
		t.Errorf("handbook-limited report %+v: want the counts and none of the mail's installation's documents", limited)
	}
	if status, body, _ := e.do(t, "GET", "/v1/blocks", chatToken, nil); status != http.StatusForbidden {
		t.Errorf("retrieve token: %d %s, want 403", status, body)
	}
}

// decisionLog is a gateway log that holds what it is given.
type decisionLog []ingestd.GatewayDecision

func (l decisionLog) GatewayDecisions(_ context.Context, limit int) ([]ingestd.GatewayDecision, error) {
	if limit > 0 && limit < len(l) {
		return l[:limit], nil
	}
	return l, nil
}

// TestGatewayDecisionsRoute: an admin token reads the gateway's held
// calls, as many as it asks; a token limited to some installations, a
// retrieve token and a bad limit are refused.
func TestGatewayDecisionsRoute(t *testing.T) {
	log := decisionLog{
		{Upstream: "crm", Tool: "send_mail", Class: ingestd.ToolWrite, Outcome: ingestd.GatewayRefused, CallHash: "sha256:2", Scope: "turn"},
		{Upstream: "crm", Tool: "send_mail", Class: ingestd.ToolWrite, Outcome: ingestd.GatewayConfirmed, CallHash: "sha256:1", Scope: "turn"},
	}
	e := MustServe(t, ingestd.ModeEnforce, api.Options{GatewayDecisions: log, Tokens: []api.Token{
		{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
		{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin}},
		{Name: "handbook-ops", Token: opsToken, Scopes: []string{api.ScopeAdmin}, Installations: []string{"handbook"}},
	}})
	status, body, _ := e.do(t, "GET", "/v1/gateway/decisions?limit=1", adminToken, nil)
	var got struct{ Decisions []ingestd.GatewayDecision }
	if err := json.Unmarshal(body, &got); status != http.StatusOK || err != nil {
		t.Fatalf("admin: %d %s", status, body)
	}
	if len(got.Decisions) != 1 || got.Decisions[0] != log[0] {
		t.Errorf("limit 1: %+v, want the newest", got.Decisions)
	}
	for _, c := range []struct {
		token, query string
		want         int
	}{
		{opsToken, "", http.StatusForbidden},
		{chatToken, "", http.StatusForbidden},
		{adminToken, "?limit=0", http.StatusBadRequest},
		{adminToken, "?limit=501", http.StatusBadRequest},
		{adminToken, "", http.StatusOK},
	} {
		if status, body, _ := e.do(t, "GET", "/v1/gateway/decisions"+c.query, c.token, nil); status != c.want {
			t.Errorf("%s%s: %d %s, want %d", c.token[:8], c.query, status, body, c.want)
		}
	}
}

// TestLimitsAreRefusedAlike: every route's ?limit= is refused with the
// same message, naming what it counts and its range.
func TestLimitsAreRefusedAlike(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{GatewayDecisions: decisionLog{}})
	for _, c := range []struct{ path, want string }{
		{"/v1/installations/handbook/documents?limit=201", `limit \"201\" is not a whole number of documents from 1 to 200`},
		{"/v1/installations/handbook/documents?limit=ten", `limit \"ten\" is not a whole number of documents from 1 to 200`},
		{"/v1/gateway/decisions?limit=501", `limit \"501\" is not a whole number of decisions from 1 to 500`},
	} {
		status, body, _ := e.do(t, "GET", c.path, "", nil)
		if status != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %d %s, want 400 and %s", c.path, status, body, c.want)
		}
	}
}
