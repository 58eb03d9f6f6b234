package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/client"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/mcpserver"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

const (
	scopedToken = "handbook-only-token-4242-9d1e6b3f0a7c"
	opsToken    = "handbook-ops-token-777-c58a2f0e91d4b"
)

// Escalation is a handbook page that links to a customer's mail: a
// neighbour in another installation, reached only by expansion.
var Escalation = retrievaltest.Doc{Installation: "handbook", ExternalID: "escalation.md", Title: "Escalation ladder", Tier: ingestd.TierTrustedInternal,
	Chunks: []string{"Escalation ladder for angry customers: page the duty manager first."},
	Links:  []retrievaltest.Link{{To: retrievaltest.Refund.ExternalID, ToInstallation: "support", Relation: "xref"}}}

// answer is what a surface served: the documents of each block, the
// verdict, or the error code it refused with.
type answer struct {
	primary, expanded, rejected []string // document ids
	installations               []string // of every served chunk
	verdict                     *ingestd.Verdict
	grounding                   string
	view                        *ingestd.Verdict // the trusted view's, when asked
	code                        string
}

// surface is one way a client reaches retrieval.
type surface struct {
	name       string
	retrieve   func(t *testing.T, token string, r ingestd.RetrieveRequest) answer
	provenance func(t *testing.T, token string, insts []string) (ingestd.ProvenanceReport, string)
}

func servedOf(resp *ingestd.RetrieveResponse) answer {
	var a answer
	ids := func(cs []ingestd.ServedChunk) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.DocumentID)
			a.installations = append(a.installations, c.Installation)
		}
		return out
	}
	a.primary, a.expanded, a.rejected = ids(resp.Primary), ids(resp.Expanded), ids(resp.Rejected)
	a.verdict, a.grounding = resp.Verdict, resp.Grounding
	if v := resp.TrustedView; v != nil {
		ids(v.Primary)
		ids(v.Expanded)
		ids(v.Rejected)
		a.view = v.Verdict
	}
	return a
}

func surfaces(e *env) []surface {
	rest := surface{
		name: "REST",
		retrieve: func(t *testing.T, token string, r ingestd.RetrieveRequest) answer {
			status, body, _ := e.do(t, "POST", "/v1/retrieve", token, r)
			if status != http.StatusOK {
				return answer{code: restCode(t, body)}
			}
			var resp ingestd.RetrieveResponse
			if err := json.Unmarshal(body, &resp); err != nil {
				t.Fatal(err)
			}
			return servedOf(&resp)
		},
		provenance: func(t *testing.T, token string, insts []string) (ingestd.ProvenanceReport, string) {
			q := url.Values{"installation": insts}
			status, body, _ := e.do(t, "GET", "/v1/provenance?"+q.Encode(), token, nil)
			var rep ingestd.ProvenanceReport
			if status != http.StatusOK {
				return rep, restCode(t, body)
			}
			if err := json.Unmarshal(body, &rep); err != nil {
				t.Fatal(err)
			}
			return rep, ""
		},
	}
	grpc := func(name string, useGRPC bool) surface {
		c := func(token string) *client.Client {
			return client.New(e.URL, &client.Options{HTTPClient: e.H2C, GRPC: useGRPC, Token: token})
		}
		return surface{
			name: name,
			retrieve: func(t *testing.T, token string, r ingestd.RetrieveRequest) answer {
				resp, err := c(token).Retrieve(t.Context(), r)
				if err != nil {
					return answer{code: ingestd.ErrorCode(err)}
				}
				return servedOf(resp)
			},
			provenance: func(t *testing.T, token string, insts []string) (ingestd.ProvenanceReport, string) {
				rep, err := c(token).Provenance(t.Context(), ingestd.ProvenanceRequest{Installations: insts})
				if err != nil {
					return rep, ingestd.ErrorCode(err)
				}
				return rep, ""
			},
		}
	}
	mcpSurface := surface{
		name: "MCP",
		retrieve: func(t *testing.T, token string, r ingestd.RetrieveRequest) answer {
			s, code := mcpSession(t, e, token)
			if s == nil {
				return answer{code: code}
			}
			res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "retrieve", Arguments: r})
			if err != nil {
				t.Fatalf("retrieve over MCP: %v", err)
			}
			if res.IsError {
				return answer{code: toolCode(t, res)}
			}
			var resp ingestd.RetrieveResponse
			remarshal(t, res.StructuredContent, &resp)
			a := servedOf(&resp)
			// The host's gate must read the same verdict.
			v, err := client.VerdictFromMCP(res)
			if err != nil {
				t.Fatalf("VerdictFromMCP: %v", err)
			}
			if !slices.Equal(v.UntrustedDocumentIDs, a.verdict.UntrustedDocumentIDs) || v.ToolsAllowed != a.verdict.ToolsAllowed {
				t.Fatalf("gate read %+v, structuredContent says %+v", v, a.verdict)
			}
			return a
		},
		provenance: func(t *testing.T, token string, insts []string) (ingestd.ProvenanceReport, string) {
			var rep ingestd.ProvenanceReport
			s, code := mcpSession(t, e, token)
			if s == nil {
				return rep, code
			}
			res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "provenance", Arguments: ingestd.ProvenanceRequest{Installations: insts}})
			if err != nil {
				t.Fatalf("provenance over MCP: %v", err)
			}
			if res.IsError {
				return rep, toolCode(t, res)
			}
			remarshal(t, res.StructuredContent, &rep)
			return rep, ""
		},
	}
	mcpResource := surface{
		name: "MCP resource",
		provenance: func(t *testing.T, token string, insts []string) (ingestd.ProvenanceReport, string) {
			var rep ingestd.ProvenanceReport
			if len(insts) > 0 {
				t.Skip("the provenance resource takes no installations")
			}
			s, code := mcpSession(t, e, token)
			if s == nil {
				return rep, code
			}
			res, err := s.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: mcpserver.ProvenanceURI})
			if err != nil {
				return rep, rpcCode(err)
			}
			if err := json.Unmarshal([]byte(res.Contents[0].Text), &rep); err != nil {
				t.Fatal(err)
			}
			return rep, ""
		},
	}
	return []surface{rest, grpc("Connect", false), grpc("gRPC", true), mcpSurface, mcpResource}
}

// TestScopeMatrix runs the same cross-scope cases against every route
// and every MCP tool and resource: a token limited to the handbook
// neither retrieves, expands into, sees rejected, counts nor reads
// anything of another installation; naming one is refused; a token
// without the retrieve scope and a request without a token get nothing.
func TestScopeMatrix(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Tokens: []api.Token{
		{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
		{Name: "desk", Token: scopedToken, Scopes: []string{api.ScopeRetrieve}, Installations: []string{"handbook"}},
		{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin}},
	}})
	retrievaltest.MustPut(t, e.Store, embedder.NewLexical(retrievaltest.Dims), Escalation)
	handbookDocs := 0
	for _, d := range append(retrievaltest.Acceptance(), Escalation) {
		if d.Installation == "handbook" {
			handbookDocs++
		}
	}

	retrieves := []struct {
		name  string
		token string
		req   ingestd.RetrieveRequest
		check func(t *testing.T, a answer)
	}{
		{"unscoped sees the mail", chatToken, ingestd.RetrieveRequest{Query: "refund by wire transfer"}, func(t *testing.T, a answer) {
			if !slices.Contains(a.primary, retrievaltest.Refund.ID()) || a.verdict.ToolsAllowed {
				t.Errorf("primary %v, verdict %+v: want the refund mail and a blocking verdict", a.primary, a.verdict)
			}
		}},
		{"unscoped asks grounding auto and the trusted view", chatToken, ingestd.RetrieveRequest{Query: "refund by wire transfer", Grounding: ingestd.GroundingAuto, TrustedView: true}, func(t *testing.T, a answer) {
			if a.grounding == "" || a.view == nil || !a.view.ToolsAllowed {
				t.Errorf("grounding %q, view verdict %+v: want a grounding and a view that allows tools", a.grounding, a.view)
			}
		}},
		{"scoped is narrowed", scopedToken, ingestd.RetrieveRequest{Query: "refund by wire transfer"}, func(t *testing.T, a answer) {
			if len(a.primary) == 0 || !a.verdict.ToolsAllowed {
				t.Errorf("primary %v, verdict %+v: want handbook hits and tools allowed", a.primary, a.verdict)
			}
		}},
		// top_k 1: the page alone in primary, so the mail can come only by
		// expansion (with eight, the small corpus ranks it in primary too).
		{"unscoped expands into the mail", chatToken, ingestd.RetrieveRequest{Query: "escalation ladder duty manager", TopK: 1}, func(t *testing.T, a answer) {
			if !slices.Contains(a.expanded, retrievaltest.Refund.ID()) {
				t.Errorf("primary %v expanded %v: want the linked mail %s", a.primary, a.expanded, retrievaltest.Refund.ID())
			}
		}},
		{"scoped does not expand into the mail", scopedToken, ingestd.RetrieveRequest{Query: "escalation ladder duty manager"}, func(t *testing.T, a answer) {
			if !slices.Contains(a.primary, Escalation.ID()) || slices.Contains(a.expanded, retrievaltest.Refund.ID()) {
				t.Errorf("primary %v expanded %v: want the page and not the mail", a.primary, a.expanded)
			}
		}},
		{"unscoped sees the rejected proposal", chatToken, ingestd.RetrieveRequest{Query: "database migration plan orders"}, func(t *testing.T, a answer) {
			if !slices.Contains(a.rejected, retrievaltest.MongoProposal.ID()) {
				t.Errorf("rejected %v: want %s", a.rejected, retrievaltest.MongoProposal.ID())
			}
		}},
		{"scoped does not see the rejected proposal", scopedToken, ingestd.RetrieveRequest{Query: "database migration plan orders"}, func(t *testing.T, a answer) {
			if !slices.Contains(a.primary, retrievaltest.Migration.ID()) || slices.Contains(a.rejected, retrievaltest.MongoProposal.ID()) {
				t.Errorf("primary %v rejected %v: want the plan and not the proposal", a.primary, a.rejected)
			}
		}},
		{"scoped naming its installation", scopedToken, ingestd.RetrieveRequest{Query: "refund", Installations: []string{"handbook"}}, func(t *testing.T, a answer) {
			if a.code != "" || len(a.primary) == 0 {
				t.Errorf("code %q primary %v: want handbook hits", a.code, a.primary)
			}
		}},
		{"scoped naming another installation", scopedToken, ingestd.RetrieveRequest{Query: "refund", Installations: []string{"handbook", "support"}}, func(t *testing.T, a answer) {
			if a.code != ingestd.EFORBIDDEN {
				t.Errorf("code %q, want %q (refused, not narrowed)", a.code, ingestd.EFORBIDDEN)
			}
		}},
		{"token without the retrieve scope", adminToken, ingestd.RetrieveRequest{Query: "refund"}, func(t *testing.T, a answer) {
			if a.code != ingestd.EFORBIDDEN {
				t.Errorf("code %q, want %q", a.code, ingestd.EFORBIDDEN)
			}
		}},
		{"no token", "", ingestd.RetrieveRequest{Query: "refund"}, func(t *testing.T, a answer) {
			if a.code != ingestd.EUNAUTHORIZED {
				t.Errorf("code %q, want %q", a.code, ingestd.EUNAUTHORIZED)
			}
		}},
	}
	reports := []struct {
		name  string
		token string
		insts []string
		check func(t *testing.T, rep ingestd.ProvenanceReport, code string)
	}{
		{"unscoped counts everything", chatToken, nil, func(t *testing.T, rep ingestd.ProvenanceReport, code string) {
			if code != "" || rep.Total <= handbookDocs || rep.ExternallyAuthored == 0 {
				t.Errorf("code %q total %d external %d: want the whole corpus", code, rep.Total, rep.ExternallyAuthored)
			}
		}},
		{"scoped counts its installation", scopedToken, nil, func(t *testing.T, rep ingestd.ProvenanceReport, code string) {
			var ids []string
			for _, in := range rep.Installations {
				ids = append(ids, in.ID)
			}
			if code != "" || rep.Total != handbookDocs || rep.ExternallyAuthored != 0 || !slices.Equal(ids, []string{"handbook"}) {
				t.Errorf("code %q total %d external %d installations %v: want %d handbook documents only", code, rep.Total, rep.ExternallyAuthored, ids, handbookDocs)
			}
		}},
		{"scoped naming another installation", scopedToken, []string{"support"}, func(t *testing.T, rep ingestd.ProvenanceReport, code string) {
			if code != ingestd.EFORBIDDEN {
				t.Errorf("code %q, want %q", code, ingestd.EFORBIDDEN)
			}
		}},
		{"unscoped naming one installation", chatToken, []string{"support"}, func(t *testing.T, rep ingestd.ProvenanceReport, code string) {
			if code != "" || len(rep.Installations) != 1 || rep.Installations[0].ID != "support" || rep.ExternallyAuthored != rep.Total {
				t.Errorf("code %q report %+v: want support only", code, rep)
			}
		}},
		{"token without the retrieve scope", adminToken, nil, func(t *testing.T, rep ingestd.ProvenanceReport, code string) {
			if code != ingestd.EFORBIDDEN {
				t.Errorf("code %q, want %q", code, ingestd.EFORBIDDEN)
			}
		}},
		{"no token", "", nil, func(t *testing.T, rep ingestd.ProvenanceReport, code string) {
			if code != ingestd.EUNAUTHORIZED {
				t.Errorf("code %q, want %q", code, ingestd.EUNAUTHORIZED)
			}
		}},
	}
	for _, s := range surfaces(e) {
		t.Run(s.name, func(t *testing.T) {
			if s.retrieve != nil {
				for _, tc := range retrieves {
					t.Run("retrieve/"+tc.name, func(t *testing.T) {
						a := s.retrieve(t, tc.token, tc.req)
						if a.code == "" && tc.token == scopedToken {
							for _, in := range a.installations {
								if in != "handbook" {
									t.Errorf("served a chunk of %q to a handbook-only token", in)
								}
							}
						}
						tc.check(t, a)
					})
				}
			}
			for _, tc := range reports {
				t.Run("provenance/"+tc.name, func(t *testing.T) {
					rep, code := s.provenance(t, tc.token, tc.insts)
					tc.check(t, rep, code)
				})
			}
		})
	}
}

// TestScopeMatrixDocuments reads documents as MCP resources: a limited
// token reads its installation's and gets "not found" for another's,
// exactly as for an id that does not exist; _meta says the tier in force.
func TestScopeMatrixDocuments(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Tokens: []api.Token{
		{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
		{Name: "desk", Token: scopedToken, Scopes: []string{api.ScopeRetrieve}, Installations: []string{"handbook"}},
		{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin}},
	}})
	cases := []struct {
		token, id   string
		wantErr     string // "" reads it
		wantTier    string
		wantUntrust bool
	}{
		{chatToken, retrievaltest.Refund.ID(), "", string(ingestd.TierUntrustedExternal), true},
		{chatToken, retrievaltest.Runbook.ID(), "", string(ingestd.TierTrustedInternal), false},
		{scopedToken, retrievaltest.Runbook.ID(), "", string(ingestd.TierTrustedInternal), false},
		{scopedToken, retrievaltest.Refund.ID(), "not found", "", false},
		{scopedToken, "d000000000000000000000000", "not found", "", false},
		{chatToken, retrievaltest.DeletedComment.ID(), "not found", "", false},
		{adminToken, retrievaltest.Runbook.ID(), ingestd.EFORBIDDEN, "", false},
		{"", retrievaltest.Runbook.ID(), ingestd.EUNAUTHORIZED, "", false},
	}
	for _, tc := range cases {
		s, code := mcpSession(t, e, tc.token)
		if s == nil {
			if code != tc.wantErr {
				t.Errorf("token %q: no session (%s), want %q", tc.token, code, tc.wantErr)
			}
			continue
		}
		res, err := s.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: mcpserver.DocumentURIPrefix + tc.id})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), tc.wantErr) {
				t.Errorf("token %q reads %s: %v, want an error with %q", tc.token, tc.id, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("token %q reads %s: %v", tc.token, tc.id, err)
			continue
		}
		if len(res.Contents) == 0 {
			t.Errorf("%s: no contents", tc.id)
		}
		for _, c := range res.Contents {
			if got := c.Meta[mcpserver.TierMetaKey]; got != tc.wantTier {
				t.Errorf("%s: tier %v, want %s", tc.id, got, tc.wantTier)
			}
			if got := c.Meta[mcpserver.UntrustedMetaKey]; got != tc.wantUntrust {
				t.Errorf("%s: untrusted %v, want %v", tc.id, got, tc.wantUntrust)
			}
			if err := firewall.Check(c.Text); err != nil {
				t.Errorf("%s: a chunk of the resource is not fenced: %v", tc.id, err)
			}
		}
	}
}

// mcpSession connects the go-sdk's client to /mcp with token; it returns
// nil and the error code when the server refuses the connection.
func mcpSession(t *testing.T, e *env, token string) (*mcp.ClientSession, string) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: e.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer(token)}}, nil)
	if err != nil {
		switch {
		case strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "Unauthorized"):
			return nil, ingestd.EUNAUTHORIZED
		case strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), "Forbidden"):
			return nil, ingestd.EFORBIDDEN
		}
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ""
}

// bearer is a transport that sends a token.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b != "" {
		r.Header.Set("Authorization", "Bearer "+string(b))
	}
	return http.DefaultTransport.RoundTrip(r)
}

func restCode(t *testing.T, body []byte) string {
	t.Helper()
	var eb struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal(body, &eb); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	return eb.Error.Code
}

// toolCode reads the code of a tool error ("forbidden: ...").
func toolCode(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	text := res.Content[0].(*mcp.TextContent).Text
	code, _, ok := strings.Cut(text, ": ")
	if !ok {
		t.Fatalf("tool error %q has no code", text)
	}
	return code
}

func rpcCode(err error) string {
	var re *jsonrpc.Error
	if errors.As(err, &re) {
		code, _, _ := strings.Cut(re.Message, ": ")
		return code
	}
	return err.Error()
}

func remarshal(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}

// TestScopedAdmin: an admin token limited to the handbook syncs and
// rejects there, and nowhere else; another installation's document reads
// as not found, as one that does not exist.
func TestScopedAdmin(t *testing.T) {
	var synced []string
	e := MustServe(t, ingestd.ModeEnforce, api.Options{
		Tokens: []api.Token{{Name: "desk-ops", Token: opsToken, Scopes: []string{api.ScopeAdmin}, Installations: []string{"handbook"}}},
		Sync: func(_ context.Context, id string) error {
			synced = append(synced, id)
			return nil
		},
	})
	for _, tt := range []struct {
		name, method, path string
		want               int
	}{
		{"sync its installation", "POST", "/v1/installations/handbook/sync", 202},
		{"sync another", "POST", "/v1/installations/support/sync", 403},
		{"reject another's document", "POST", "/v1/documents/" + retrievaltest.Refund.ID() + "/reject", 404},
		{"delete another's document", "DELETE", "/v1/documents/" + retrievaltest.Refund.ID(), 404},
		{"reject its own", "POST", "/v1/documents/" + retrievaltest.Vacation.ID() + "/reject", 200},
	} {
		if status, body, _ := e.do(t, tt.method, tt.path, opsToken, nil); status != tt.want {
			t.Errorf("%s: %d, want %d: %s", tt.name, status, tt.want, body)
		}
	}
	if !slices.Equal(synced, []string{"handbook"}) {
		t.Errorf("synced %v, want handbook only", synced)
	}
	if got := mustStatus(t, e, retrievaltest.Refund.ID()); got != ingestd.StatusActive {
		t.Errorf("the support mail is %s after a refused reject and delete", got)
	}
}

// erasureLog is an api.Erasures that records what reached it.
type erasureLog struct{ calls []string }

func (l *erasureLog) Erase(_ context.Context, req ingestd.ErasureRequest) (ingestd.ErasureReport, error) {
	l.calls = append(l.calls, "erase "+req.Author+req.Installation)
	return ingestd.ErasureReport{}, nil
}

func (l *erasureLog) Tombstones(context.Context) ([]ingestd.Tombstone, error) {
	l.calls = append(l.calls, "tombstones")
	return nil, nil
}

func (l *erasureLog) Lift(_ context.Context, req ingestd.LiftRequest) (int, error) {
	l.calls = append(l.calls, "lift "+req.Author)
	return 0, nil
}

// TestScopedErasures: an erasure by author spans installations and a
// lift can bring back what another installation's operator erased, so
// an admin token limited to some installations is refused every erasure
// route, even one that names its own installation; an unlimited one is
// served.
func TestScopedErasures(t *testing.T) {
	log := &erasureLog{}
	e := MustServe(t, ingestd.ModeEnforce, api.Options{
		Tokens: []api.Token{
			{Name: "desk-ops", Token: opsToken, Scopes: []string{api.ScopeAdmin}, Installations: []string{"handbook"}},
			{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin}},
		},
		Erasures: log,
	})
	for _, tt := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/erasures", map[string]any{"author": "mallory@example.com"}},
		{"POST", "/v1/erasures", map[string]any{"installation": "handbook"}},
		{"GET", "/v1/erasures", nil},
		{"POST", "/v1/erasures/lift", map[string]any{"author": "mallory@example.com"}},
	} {
		if status, body, _ := e.do(t, tt.method, tt.path, opsToken, tt.body); status != http.StatusForbidden {
			t.Errorf("%s %s %v with a limited token: %d %s, want 403", tt.method, tt.path, tt.body, status, body)
		}
		if status, body, _ := e.do(t, tt.method, tt.path, adminToken, tt.body); status != http.StatusOK {
			t.Errorf("%s %s %v with an unlimited token: %d %s, want 200", tt.method, tt.path, tt.body, status, body)
		}
	}
	if got, want := strings.Join(log.calls, ","), "erase mallory@example.com,erase handbook,tombstones,lift mallory@example.com"; got != want {
		t.Errorf("reached the erasures: %s, want %s", got, want)
	}
}
