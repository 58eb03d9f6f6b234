package api_test

import (
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

const (
	aliceToken = "alice-laptop-token-3141-5926535897932"
	actForTok  = "chat-backend-acts-for-2718-281828459"
	serviceTok = "ops-service-token-1618-03398874989"
)

// mustSetReaders gives stored documents their readers, as a sync pass
// that mirrored them would (the chunks stay).
func mustSetReaders(t *testing.T, e *env, readers map[string]ingestd.Readers) {
	t.Helper()
	for id, r := range readers {
		d, err := e.Store.Document(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		d.Readers = r
		if _, err := e.Store.PutDocument(t.Context(), d, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPrincipalMatrix runs the person cases against every surface and
// every block: a person retrieves, expands into, sees rejected and counts
// only what they may read; an unmapped document is read by no person; a
// token that acts for people must name one; a token bound to a person
// cannot name another; a service token keeps the operator's view.
func TestPrincipalMatrix(t *testing.T) {
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
		retrievaltest.Refund.ID():        bob, // linked from the page: hidden from alice's expansion
		retrievaltest.Migration.ID():     ingestd.ReadersOf("group:eng"),
		retrievaltest.MongoProposal.ID(): bob, // rejected: hidden from alice's rejected block
	})
	aliceMay := []string{Escalation.ID(), retrievaltest.Migration.ID()}

	retrieves := []struct {
		name  string
		token string
		req   ingestd.RetrieveRequest
		check func(t *testing.T, a answer)
	}{
		{"alice does not expand into bob's mail", aliceToken, ingestd.RetrieveRequest{Query: "escalation ladder duty manager", TopK: 1}, func(t *testing.T, a answer) {
			if !slices.Contains(a.primary, Escalation.ID()) || slices.Contains(a.expanded, retrievaltest.Refund.ID()) {
				t.Errorf("primary %v expanded %v: want the page and not the mail", a.primary, a.expanded)
			}
		}},
		{"alice reads only what she may", aliceToken, ingestd.RetrieveRequest{Query: "refund by wire transfer database migration escalation"}, func(t *testing.T, a answer) {
			for _, id := range slices.Concat(a.primary, a.expanded, a.rejected) {
				if !slices.Contains(aliceMay, id) {
					t.Errorf("served %s, which alice may not read (primary %v expanded %v rejected %v)", id, a.primary, a.expanded, a.rejected)
				}
			}
			if len(a.primary) == 0 {
				t.Error("alice was served nothing")
			}
		}},
		{"alice's group, not bob's rejected proposal", aliceToken, ingestd.RetrieveRequest{Query: "database migration plan orders"}, func(t *testing.T, a answer) {
			if !slices.Contains(a.primary, retrievaltest.Migration.ID()) || slices.Contains(a.rejected, retrievaltest.MongoProposal.ID()) {
				t.Errorf("primary %v rejected %v: want the plan (group:eng) and not the proposal", a.primary, a.rejected)
			}
		}},
		{"acting for bob", actForTok, ingestd.RetrieveRequest{Query: "database migration plan orders", Principal: "user:bob@example.com"}, func(t *testing.T, a answer) {
			if slices.Contains(a.primary, retrievaltest.Migration.ID()) || !slices.Contains(a.rejected, retrievaltest.MongoProposal.ID()) {
				t.Errorf("primary %v rejected %v: want bob's proposal and not eng's plan", a.primary, a.rejected)
			}
		}},
		{"acting for nobody is refused", actForTok, ingestd.RetrieveRequest{Query: "database migration plan orders"}, func(t *testing.T, a answer) {
			if a.code != ingestd.EINVALID {
				t.Errorf("code %q, want %q (refused, not widened)", a.code, ingestd.EINVALID)
			}
		}},
		{"acting for a group is refused", actForTok, ingestd.RetrieveRequest{Query: "plan", Principal: "group:eng"}, func(t *testing.T, a answer) {
			if a.code != ingestd.EINVALID {
				t.Errorf("code %q, want %q", a.code, ingestd.EINVALID)
			}
		}},
		{"alice naming bob is refused", aliceToken, ingestd.RetrieveRequest{Query: "refund", Principal: "user:bob@example.com"}, func(t *testing.T, a answer) {
			if a.code != ingestd.EFORBIDDEN {
				t.Errorf("code %q, want %q", a.code, ingestd.EFORBIDDEN)
			}
		}},
		{"alice naming herself", aliceToken, ingestd.RetrieveRequest{Query: "database migration plan", Principal: "alice@example.com"}, func(t *testing.T, a answer) {
			if a.code != "" || !slices.Contains(a.primary, retrievaltest.Migration.ID()) {
				t.Errorf("code %q primary %v: want the plan", a.code, a.primary)
			}
		}},
		{"a stranger reads no unmapped document", actForTok, ingestd.RetrieveRequest{Query: "refund by wire transfer", Principal: "user:carol@example.com"}, func(t *testing.T, a answer) {
			for _, id := range slices.Concat(a.primary, a.expanded, a.rejected) {
				if id != Escalation.ID() {
					t.Errorf("served %s to a stranger: only the public page is hers", id)
				}
			}
		}},
		{"the service view reads unmapped documents", serviceTok, ingestd.RetrieveRequest{Query: "refund by wire transfer"}, func(t *testing.T, a answer) {
			if !slices.Contains(a.primary, retrievaltest.Refund.ID()) {
				t.Errorf("primary %v: want the refund mail", a.primary)
			}
		}},
	}
	reports := []struct {
		name  string
		token string
		check func(t *testing.T, rep ingestd.ProvenanceReport, code string)
	}{
		{"alice counts what she may read", aliceToken, func(t *testing.T, rep ingestd.ProvenanceReport, code string) {
			if code != "" || rep.Total != len(aliceMay) || rep.Unmapped != 0 {
				t.Errorf("code %q total %d unmapped %d: want %d, none unmapped", code, rep.Total, rep.Unmapped, len(aliceMay))
			}
		}},
		{"the service view counts the unmapped", serviceTok, func(t *testing.T, rep ingestd.ProvenanceReport, code string) {
			if code != "" || rep.Unmapped == 0 || rep.Unmapped >= rep.Total {
				t.Errorf("code %q total %d unmapped %d: want some unmapped documents", code, rep.Total, rep.Unmapped)
			}
		}},
		{"acting for nobody is refused", actForTok, func(t *testing.T, rep ingestd.ProvenanceReport, code string) {
			if code != ingestd.EINVALID {
				t.Errorf("code %q, want %q", code, ingestd.EINVALID)
			}
		}},
	}
	for _, s := range surfaces(e) {
		t.Run(s.name, func(t *testing.T) {
			if s.retrieve != nil {
				for _, tt := range retrieves {
					t.Run(tt.name, func(t *testing.T) { tt.check(t, s.retrieve(t, tt.token, tt.req)) })
				}
			}
			for _, tt := range reports {
				t.Run("provenance/"+tt.name, func(t *testing.T) {
					rep, code := s.provenance(t, tt.token, nil)
					tt.check(t, rep, code)
				})
			}
		})
	}
}
