package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

func TestGetDocument(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Tokens: []api.Token{
		{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
		{Name: "desk", Token: scopedToken, Scopes: []string{api.ScopeRetrieve}, Installations: []string{"handbook"}},
		{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin}},
	}})
	tagged := retrievaltest.Doc{Installation: "handbook", ExternalID: "tagged.md", Title: "Tagged page", Tier: ingestd.TierTrustedInternal,
		Chunks: []string{"A page with metadata."}, Meta: map[string]string{"path": "tagged.md", "owner": "ops"}}
	retrievaltest.MustPut(t, e.Store, embedder.NewLexical(retrievaltest.Dims), tagged)

	status, body, _ := e.do(t, "GET", "/v1/documents/"+tagged.ID(), chatToken, nil)
	if status != http.StatusOK {
		t.Fatalf("GET tagged: %d %s", status, body)
	}
	var doc ingestd.ServedDocument
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if got, want := doc.Tier, string(ingestd.TierTrustedInternal); got != want {
		t.Errorf("tier %q, want %q", got, want)
	}
	if got, want := doc.Metadata["owner"], "ops"; got != want {
		t.Errorf("metadata owner %q, want %q (metadata %v)", got, want, doc.Metadata)
	}
	if doc.ExternalID != tagged.ExternalID || len(doc.Chunks) != 1 || !strings.Contains(doc.Chunks[0].Fenced, "A page with metadata.") || doc.Chunks[0].Fenced == doc.Chunks[0].Text {
		t.Errorf("document %+v: want its external id and its one fenced chunk", doc)
	}

	// The mail is untrusted; the desk token sees only the handbook, and
	// the mail reads to it exactly as an id that does not exist.
	status, body, _ = e.do(t, "GET", "/v1/documents/"+retrievaltest.Refund.ID(), chatToken, nil)
	if status != http.StatusOK || !strings.Contains(string(body), `"untrusted":true`) {
		t.Errorf("chat reads the mail: %d %s, want 200 and untrusted", status, body)
	}
	_, hidden, _ := e.do(t, "GET", "/v1/documents/"+retrievaltest.Refund.ID(), scopedToken, nil)
	_, missing, _ := e.do(t, "GET", "/v1/documents/"+"d000000000000000000000000", scopedToken, nil)
	hiddenText := strings.ReplaceAll(string(hidden), retrievaltest.Refund.ID(), "ID")
	missingText := strings.ReplaceAll(string(missing), "d000000000000000000000000", "ID")
	if hiddenText != missingText || restCode(t, hidden) != ingestd.ENOTFOUND {
		t.Errorf("another installation's document %s, a missing one %s: want the same not found", hidden, missing)
	}
	for _, c := range []struct {
		token, id string
		want      int
	}{
		{scopedToken, tagged.ID(), http.StatusOK},
		{chatToken, retrievaltest.DeletedComment.ID(), http.StatusNotFound},
		{adminToken, tagged.ID(), http.StatusForbidden}, // admin is not retrieve
		{"", tagged.ID(), http.StatusUnauthorized},
	} {
		if status, body, _ := e.do(t, "GET", "/v1/documents/"+c.id, c.token, nil); status != c.want {
			t.Errorf("GET %s: %d %s, want %d", c.id, status, body, c.want)
		}
	}
}

// listPage is one page of GET /v1/installations/{id}/documents.
type listPage struct {
	Installation  string                    `json:"installation"`
	Documents     []ingestd.DocumentSummary `json:"documents"`
	NextPageToken string                    `json:"next_page_token"`
}

func (e *env) list(t *testing.T, token, inst string, q url.Values) (int, listPage, []byte) {
	t.Helper()
	status, body, _ := e.do(t, "GET", "/v1/installations/"+inst+"/documents?"+q.Encode(), token, nil)
	var p listPage
	if status == http.StatusOK {
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
	}
	return status, p, body
}

func TestListDocuments(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Tokens: []api.Token{
		{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
		{Name: "desk", Token: scopedToken, Scopes: []string{api.ScopeRetrieve}, Installations: []string{"handbook"}},
	}})
	var more []retrievaltest.Doc
	for i := range 7 {
		more = append(more, retrievaltest.Doc{Installation: "handbook", ExternalID: fmt.Sprintf("page-%d.md", i), Title: fmt.Sprintf("Page %d", i),
			Tier: ingestd.TierTrustedInternal, Chunks: []string{fmt.Sprintf("Handbook page number %d.", i)}})
	}
	retrievaltest.MustPut(t, e.Store, embedder.NewLexical(retrievaltest.Dims), more...)
	var want []string
	for _, d := range append(retrievaltest.Acceptance(), more...) {
		if d.Installation == "handbook" {
			want = append(want, d.ID())
		}
	}
	slices.Sort(want)

	// Walk the pages three at a time: every document once, in id order.
	var got []string
	token := ""
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatalf("more pages than documents: the token does not advance")
		}
		q := url.Values{"limit": {"3"}}
		if token != "" {
			q.Set("page_token", token)
		}
		status, p, body := e.list(t, scopedToken, "handbook", q)
		if status != http.StatusOK {
			t.Fatalf("page %d: %d %s", pages, status, body)
		}
		if len(p.Documents) > 3 {
			t.Fatalf("page %d has %d documents, limit 3", pages, len(p.Documents))
		}
		for _, d := range p.Documents {
			got = append(got, d.ID)
			if d.Tier != string(ingestd.TierTrustedInternal) || d.Installation != "handbook" || d.Title == "" {
				t.Errorf("summary %+v: want the handbook's tier and a title", d)
			}
		}
		if token = p.NextPageToken; token == "" {
			break
		}
		if strings.Contains(token, "handbook") {
			t.Errorf("page token %q shows its contents: want it opaque", token)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}

	// The mail's installation lists its untrusted documents to a token
	// that sees it, and is refused to one limited to the handbook.
	if status, p, body := e.list(t, chatToken, "support", nil); status != http.StatusOK || len(p.Documents) == 0 || !p.Documents[0].Untrusted {
		t.Errorf("chat lists support: %d %s, want its untrusted mails", status, body)
	}
	for _, c := range []struct {
		name, token, inst string
		q                 url.Values
		wantCode          string
	}{
		{"outside the token's installations", scopedToken, "support", nil, ingestd.EFORBIDDEN},
		{"not configured", chatToken, "nowhere", nil, ingestd.ENOTFOUND},
		{"limit zero", chatToken, "handbook", url.Values{"limit": {"0"}}, ingestd.EINVALID},
		{"limit too large", chatToken, "handbook", url.Values{"limit": {"1000"}}, ingestd.EINVALID},
		{"limit not a number", chatToken, "handbook", url.Values{"limit": {"ten"}}, ingestd.EINVALID},
		{"made-up token", chatToken, "handbook", url.Values{"page_token": {"bm9wZQ"}}, ingestd.EINVALID},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, _, body := e.list(t, c.token, c.inst, c.q)
			if status == http.StatusOK || restCode(t, body) != c.wantCode {
				t.Errorf("%d %s, want code %q", status, body, c.wantCode)
			}
		})
	}
	// A token from one installation's listing is no good for another's.
	_, first, _ := e.list(t, chatToken, "handbook", url.Values{"limit": {"1"}})
	if status, _, body := e.list(t, chatToken, "support", url.Values{"page_token": {first.NextPageToken}}); status != http.StatusBadRequest {
		t.Errorf("handbook's token on support: %d %s, want 400", status, body)
	}
}
