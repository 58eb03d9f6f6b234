package api_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/client"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

const backendTok = "chat-backend-signs-people-5772-156649"

var assertionKey = []byte("a-shared-assertion-key-0123456789abcdef")

// TestAssertedPrincipal: a token with an assertion key reads as the
// person the request's signed assertion names, on REST, Connect and gRPC
// and the document route; without one, with an expired one or one of
// another key it is refused (401), and a body naming someone else is
// refused (403).
func TestAssertedPrincipal(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Tokens: []api.Token{
		{Name: "backend", Token: backendTok, Scopes: []string{api.ScopeRetrieve}, AssertionKey: assertionKey,
			Groups: ingestd.Groups{"group:eng": {"user:alice@example.com"}}},
	}})
	retrievaltest.MustPut(t, e.Store, embedder.NewLexical(retrievaltest.Dims), Escalation)
	bob := ingestd.ReadersOf("user:bob@example.com")
	mustSetReaders(t, e, map[string]ingestd.Readers{
		Escalation.ID():              ingestd.Public(),
		retrievaltest.Refund.ID():    bob,
		retrievaltest.Migration.ID(): ingestd.ReadersOf("group:eng"),
	})
	aliceMay := []string{Escalation.ID(), retrievaltest.Migration.ID()}
	sign := func(key []byte, who string, exp time.Time) string {
		a, err := ingestd.SignAssertion(key, who, exp)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	alice := sign(assertionKey, "alice@example.com", time.Now().Add(time.Minute))
	do := func(method, path, assertion string, body any) (int, []byte) {
		var r io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			r = bytes.NewReader(b)
		}
		req, _ := http.NewRequestWithContext(t.Context(), method, e.URL+path, r)
		req.Header.Set("Authorization", "Bearer "+backendTok)
		req.Header.Set("Content-Type", "application/json")
		if assertion != "" {
			req.Header.Set(ingestd.AssertionHeader, assertion)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	q := map[string]any{"query": "refund by wire transfer database migration escalation"}
	served := func(t *testing.T, resp *ingestd.RetrieveResponse) {
		t.Helper()
		if len(resp.Primary) == 0 {
			t.Error("served nothing")
		}
		for _, c := range slices.Concat(resp.Primary, resp.Expanded, resp.Rejected) {
			if !slices.Contains(aliceMay, c.DocumentID) {
				t.Errorf("served %s, which alice may not read", c.DocumentID)
			}
		}
	}
	t.Run("REST as the asserted person", func(t *testing.T) {
		st, body := do("POST", "/v1/retrieve", alice, q)
		var resp ingestd.RetrieveResponse
		if err := json.Unmarshal(body, &resp); st != http.StatusOK || err != nil {
			t.Fatalf("%d %s", st, body)
		}
		served(t, &resp)
	})
	refusals := []struct {
		name, assertion string
		body            map[string]any
		status          int
		says            string
	}{
		{"no assertion", "", q, 401, ingestd.AssertionHeader + " header is required"},
		{"expired", sign(assertionKey, "alice@example.com", time.Now().Add(-time.Hour)), q, 401, "expired"},
		{"another key", sign([]byte("not-the-shared-assertion-key-0123456789"), "alice@example.com", time.Now().Add(time.Minute)), q, 401, "not signed"},
		{"the body names bob", alice, map[string]any{"query": "refund", "principal": "user:bob@example.com"}, 403, "bob"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			st, body := do("POST", "/v1/retrieve", tt.assertion, tt.body)
			if st != tt.status || !strings.Contains(string(body), tt.says) {
				t.Errorf("%d %s, want %d saying %q", st, body, tt.status, tt.says)
			}
		})
	}
	t.Run("the document route", func(t *testing.T) {
		if st, body := do("GET", "/v1/documents/"+retrievaltest.Refund.ID(), alice, nil); st != http.StatusNotFound {
			t.Errorf("bob's mail as alice: %d %s, want 404", st, body)
		}
		if st, body := do("GET", "/v1/documents/"+retrievaltest.Migration.ID(), alice, nil); st != http.StatusOK {
			t.Errorf("eng's plan as alice: %d %s, want 200", st, body)
		}
	})
	for _, grpc := range []bool{false, true} {
		c := client.New(e.URL, &client.Options{HTTPClient: e.H2C, GRPC: grpc, Token: backendTok, AssertionKey: assertionKey})
		t.Run("client, grpc "+map[bool]string{false: "off", true: "on"}[grpc], func(t *testing.T) {
			resp, err := c.Retrieve(t.Context(), ingestd.RetrieveRequest{Query: q["query"].(string), Principal: "user:alice@example.com"})
			if err != nil {
				t.Fatal(err)
			}
			served(t, resp)
			if _, err := c.Retrieve(t.Context(), ingestd.RetrieveRequest{Query: "refund"}); ingestd.ErrorCode(err) != ingestd.EINVALID {
				t.Errorf("a call naming nobody: %v, want invalid before it is sent", err)
			}
			rep, err := c.Provenance(t.Context(), ingestd.ProvenanceRequest{Principal: "user:alice@example.com"})
			if err != nil || rep.Total != len(aliceMay) {
				t.Errorf("alice's report: total %d (%v), want %d", rep.Total, err, len(aliceMay))
			}
		})
	}
	wrong := client.New(e.URL, &client.Options{HTTPClient: e.H2C, Token: backendTok, AssertionKey: []byte("not-the-shared-assertion-key-0123456789")})
	if _, err := wrong.Retrieve(t.Context(), ingestd.RetrieveRequest{Query: "refund", Principal: "alice@example.com"}); ingestd.ErrorCode(err) != ingestd.EUNAUTHORIZED {
		t.Errorf("a client with another key: %v, want unauthorized", err)
	}
}
