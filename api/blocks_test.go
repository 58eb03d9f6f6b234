package api_test

import (
	"encoding/json"
	"net/http"
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
