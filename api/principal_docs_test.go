package api_test

import (
	"encoding/json"
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

// TestPrincipalDocumentRoutes: GET /v1/documents/{id} and an
// installation's listing read as the request's person, like retrieve: a
// document the person may not read answers exactly as a missing one, a
// listing holds only what they may read (its pages and tokens counting
// nothing else), a token acting for people must name one, and the
// service view lists the unmapped documents too.
func TestPrincipalDocumentRoutes(t *testing.T) {
	groups := ingestd.Groups{"group:eng": {"user:alice@example.com"}}
	e := MustServe(t, ingestd.ModeEnforce, api.Options{Tokens: []api.Token{
		{Name: "alice", Token: aliceToken, Scopes: []string{api.ScopeRetrieve}, User: "user:alice@example.com", Groups: groups},
		{Name: "chat", Token: actForTok, Scopes: []string{api.ScopeRetrieve}, ActForUsers: true, Groups: groups},
		{Name: "ops", Token: serviceTok, Scopes: []string{api.ScopeRetrieve}, Groups: groups},
	}})
	retrievaltest.MustPut(t, e.Store, embedder.NewLexical(retrievaltest.Dims), Escalation)
	bob := ingestd.ReadersOf("user:bob@example.com")
	mustSetReaders(t, e, map[string]ingestd.Readers{
		Escalation.ID():                  ingestd.Public(),
		retrievaltest.Refund.ID():        bob,
		retrievaltest.Migration.ID():     ingestd.ReadersOf("group:eng"),
		retrievaltest.MongoProposal.ID(): bob,
	})

	t.Run("a hidden document reads as a missing one", func(t *testing.T) {
		const missing = "0000000000000000000000000"
		hidden := retrievaltest.Refund.ID()
		st, body, _ := e.do(t, "GET", "/v1/documents/"+hidden, aliceToken, nil)
		mst, mbody, _ := e.do(t, "GET", "/v1/documents/"+missing, aliceToken, nil)
		if st != http.StatusNotFound || st != mst || strings.ReplaceAll(string(body), hidden, missing) != string(mbody) {
			t.Errorf("hidden: %d %s; missing: %d %s; want the same answer", st, body, mst, mbody)
		}
		if st, body, _ := e.do(t, "GET", "/v1/documents/"+retrievaltest.Migration.ID(), aliceToken, nil); st != http.StatusOK {
			t.Errorf("alice reading her group's plan: %d %s", st, body)
		}
		if st, body, _ := e.do(t, "GET", "/v1/documents/"+hidden, serviceTok, nil); st != http.StatusOK {
			t.Errorf("the service view reading the mail: %d %s", st, body)
		}
	})

	list := func(t *testing.T, token, inst, principal string) ([]string, int, string) {
		t.Helper()
		var ids []string
		pages, next := 0, ""
		for {
			q := url.Values{"limit": {"1"}}
			if principal != "" {
				q.Set("principal", principal)
			}
			if next != "" {
				q.Set("page_token", next)
			}
			st, body, _ := e.do(t, "GET", "/v1/installations/"+inst+"/documents?"+q.Encode(), token, nil)
			if st != http.StatusOK {
				var er struct{ Error struct{ Code string } }
				_ = json.Unmarshal(body, &er)
				return nil, st, er.Error.Code
			}
			var page struct {
				Documents []struct {
					ID string `json:"document_id"`
				}
				NextPageToken string `json:"next_page_token"`
			}
			if err := json.Unmarshal(body, &page); err != nil {
				t.Fatal(err)
			}
			pages++
			for _, d := range page.Documents {
				ids = append(ids, d.ID)
			}
			if next = page.NextPageToken; next == "" {
				return ids, pages, ""
			}
			if pages > 50 {
				t.Fatal("more than 50 pages")
			}
		}
	}
	t.Run("alice lists nothing of bob's mailbox", func(t *testing.T) {
		ids, pages, code := list(t, aliceToken, "support", "")
		if code != "" || len(ids) != 0 || pages != 1 {
			t.Errorf("ids %v in %d pages (%s): want one empty page", ids, pages, code)
		}
	})
	t.Run("acting for bob lists his mail, a page each", func(t *testing.T) {
		ids, pages, code := list(t, actForTok, "support", "user:bob@example.com")
		want := []string{retrievaltest.Refund.ID(), retrievaltest.MongoProposal.ID()}
		slices.Sort(want)
		if code != "" || !slices.Equal(ids, want) || pages != len(want) {
			t.Errorf("ids %v in %d pages (%s): want %v, one a page", ids, pages, code, want)
		}
	})
	t.Run("acting for nobody is refused", func(t *testing.T) {
		if _, st, code := list(t, actForTok, "support", ""); st != http.StatusBadRequest || code != ingestd.EINVALID {
			t.Errorf("%d %s, want 400 invalid (refused, not widened)", st, code)
		}
	})
	t.Run("alice naming bob is refused", func(t *testing.T) {
		if _, st, code := list(t, aliceToken, "support", "user:bob@example.com"); st != http.StatusForbidden {
			t.Errorf("%d %s, want 403", st, code)
		}
	})
	t.Run("the service view lists the unmapped too", func(t *testing.T) {
		ids, _, code := list(t, serviceTok, "support", "")
		if code != "" || !slices.Contains(ids, retrievaltest.Refund2.ID()) || !slices.Contains(ids, retrievaltest.Refund.ID()) {
			t.Errorf("ids %v (%s): want every support document", ids, code)
		}
	})
}
