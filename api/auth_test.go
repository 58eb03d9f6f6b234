package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
)

const metricsToken = "prometheus-scrape-token-6e2f9b04d1c7a358"

// TestMetricsNeedTheMetricsScope: with tokens configured, /metrics (it
// names every installation and its sync health) answers a token with the
// metrics scope only, and only one that sees every installation; the
// metrics token opens nothing else. TestMetrics covers the token-less
// loopback server, where /metrics stays open.
func TestMetricsNeedTheMetricsScope(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Tokens: []api.Token{
		{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
		{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin, api.ScopeRetrieve}},
		{Name: "prometheus", Token: metricsToken, Scopes: []string{api.ScopeMetrics}},
		{Name: "desk", Token: scopedToken, Scopes: []string{api.ScopeMetrics}, Installations: []string{"handbook"}},
	}})
	for _, tt := range []struct {
		name, method, path, token, body string
		want                            int
	}{
		{"no token", "GET", "/metrics", "", "", http.StatusUnauthorized},
		{"wrong token", "GET", "/metrics", "x" + metricsToken, "", http.StatusUnauthorized},
		{"retrieve token", "GET", "/metrics", chatToken, "", http.StatusForbidden},
		{"admin token", "GET", "/metrics", adminToken, "", http.StatusForbidden},
		{"metrics token limited to installations", "GET", "/metrics", scopedToken, "", http.StatusForbidden},
		{"metrics token", "GET", "/metrics", metricsToken, "", http.StatusOK},
		{"metrics token on retrieve", "POST", "/v1/retrieve", metricsToken, retrieveBody, http.StatusForbidden},
		{"metrics token on provenance", "GET", "/v1/provenance", metricsToken, "", http.StatusForbidden},
		{"metrics token on sync", "POST", "/v1/installations/handbook/sync", metricsToken, "", http.StatusForbidden},
		{"metrics token on connect", "POST", "/ingestd.v1.RetrievalService/Provenance", metricsToken, "{}", http.StatusForbidden},
		{"probes stay open", "GET", "/healthz", "", "", http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var body any
			if tt.body != "" {
				body = tt.body
			}
			status, got, _ := e.do(t, tt.method, tt.path, tt.token, body)
			if status != tt.want {
				t.Fatalf("status %d, want %d: %s", status, tt.want, got)
			}
			if tt.path == "/metrics" && status != http.StatusOK && strings.Contains(string(got), "ingestd_") {
				t.Errorf("a refused scrape carries metrics: %s", got)
			}
		})
	}
}

// TestNewRefusesWeakOrSharedTokens: the authenticator, where a token
// becomes a principal, takes no token that cannot be a secret and no two
// of one value (the first listed would win): cmd refuses both at start
// with the token's line, so New panics as on any wiring error.
func TestNewRefusesWeakOrSharedTokens(t *testing.T) {
	for _, tt := range []struct {
		name   string
		tokens []api.Token
	}{
		{"one character", []api.Token{{Name: "a", Token: "x", Scopes: []string{api.ScopeRetrieve}}}},
		{"31 bytes", []api.Token{{Name: "a", Token: chatToken[:31], Scopes: []string{api.ScopeRetrieve}}}},
		{"few characters", []api.Token{{Name: "a", Token: strings.Repeat("ab", 20), Scopes: []string{api.ScopeRetrieve}}}},
		{"space around", []api.Token{{Name: "a", Token: chatToken + "\n", Scopes: []string{api.ScopeRetrieve}}}},
		{"one value twice", []api.Token{
			{Name: "desk", Token: chatToken, Scopes: []string{api.ScopeRetrieve}, Installations: []string{"handbook"}},
			{Name: "ops", Token: chatToken, Scopes: []string{api.ScopeAdmin}},
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("New accepted the tokens")
				}
				for _, tok := range tt.tokens {
					if len(tok.Token) > 1 && strings.Contains(r.(string), strings.TrimSpace(tok.Token)) {
						t.Errorf("the panic shows a token: %v", r)
					}
				}
			}()
			api.New(api.Options{Retriever: stubRetriever{}, Tokens: tt.tokens})
		})
	}
	if err := api.CheckToken(chatToken); err != nil {
		t.Errorf("CheckToken(a 38-byte token): %v", err)
	}
}

// stubRetriever is a Retriever for tests that never reach it.
type stubRetriever struct{}

func (stubRetriever) Retrieve(context.Context, ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error) {
	return nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "stub")
}

func (stubRetriever) Provenance(context.Context, ingestd.ProvenanceRequest) (ingestd.ProvenanceReport, error) {
	return ingestd.ProvenanceReport{}, ingestd.Errorf(ingestd.EUNAVAILABLE, "stub")
}
