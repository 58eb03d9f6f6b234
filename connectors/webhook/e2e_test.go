package webhook_test

import (
	"context"
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

type installations map[string]ingestd.Installation

func (m installations) Installation(id string) (ingestd.Installation, ingestd.Source, error) {
	inst, ok := m[id]
	if !ok {
		return inst, nil, ingestd.Errorf(ingestd.ENOTFOUND, "no installation %q", id)
	}
	return inst, nil, nil
}

// TestDeliveriesToRetrieval drives real deliveries through the handler,
// the pipeline (in-process queue) and a SQLite store, then asks retrieval:
// the closed-unmerged PR is in the rejected block, the comment's issue is
// expanded by its parent link, and the verdict follows the declared tiers,
// author-association tiers included.
func TestDeliveriesToRetrieval(t *testing.T) {
	st := sqlitetest.MustOpen(t)
	emb := embedder.NewLexical(64)
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewCached(emb, nil)})
	if err != nil {
		t.Fatal(err)
	}
	insts := installations{
		// A public repo whose maintainers the owner trusts...
		"maintained": {ID: "maintained", Kind: "webhook", Tier: ingestd.TierUntrustedExternal,
			TierByMeta: map[string]map[string]ingestd.Tier{"author_association": {"OWNER": ingestd.TierTrustedInternal}}},
		// ...and the same events where nobody is told apart.
		"public": {ID: "public", Kind: "webhook", Tier: ingestd.TierUntrustedExternal},
	}
	eps := map[string]webhook.Endpoint{}
	for id := range insts {
		eps[id] = MustEndpoint(t, id, webhook.Config{}, ghSecret)
	}
	ctx := context.Background()
	h, err := webhook.New(webhook.Options{Endpoints: eps, Enqueue: func(ctx context.Context, job ingestd.Job, _ string) error {
		return p.Handle(ctx, job, insts)
	}})
	if err != nil {
		t.Fatal(err)
	}
	hs := &harness{h: h}
	for id := range insts {
		for _, d := range []struct{ file, event string }{
			{"issues.opened.json", "issues"},
			{"issue_comment.created.json", "issue_comment"},
			{"pull_request.closed.json", "pull_request"},
		} {
			body := MustPayload(t, d.file)
			if w := hs.postGitHub("/v1/webhooks/"+id, d.event, id+d.file, signGitHub(ghSecret, body), body); w.Code != 202 {
				t.Fatalf("%s %s: %d %s", id, d.file, w.Code, w.Body)
			}
		}
	}

	svc, err := retrieval.New(retrieval.Options{Store: st, Embedder: emb, Installations: []ingestd.Installation{insts["maintained"], insts["public"]}})
	if err != nil {
		t.Fatal(err)
	}
	for id, wantAllowed := range map[string]bool{"maintained": true, "public": false} {
		t.Run(id, func(t *testing.T) {
			pr := ingestd.DocumentID(id, "Codertocat/Hello-World#2")
			issue := ingestd.DocumentID(id, "Codertocat/Hello-World#1")

			res, err := svc.Retrieve(ctx, ingestd.RetrieveRequest{Query: "Update the README with new information", Installations: []string{id}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(res.Rejected, func(c ingestd.ServedChunk) bool { return c.DocumentID == pr }) {
				t.Errorf("closed-unmerged PR not in the rejected block: %+v", docIDs(res.Rejected))
			}
			if slices.ContainsFunc(res.Primary, func(c ingestd.ServedChunk) bool { return c.DocumentID == pr }) {
				t.Error("closed-unmerged PR served as primary")
			}
			if got := res.Verdict.ToolsAllowed; got != wantAllowed {
				t.Errorf("tools_allowed = %v, want %v (%+v)", got, wantAllowed, res.Verdict)
			}

			res, err = svc.Retrieve(ctx, ingestd.RetrieveRequest{Query: "You are totally right! I'll get this fixed right away.", Installations: []string{id}})
			if err != nil {
				t.Fatal(err)
			}
			var viaParent bool
			for _, c := range res.Expanded {
				if c.DocumentID == issue && c.Via == "parent" {
					viaParent = true
				}
			}
			if !viaParent {
				t.Errorf("comment's issue not expanded via its parent link: primary %v expanded %v", docIDs(res.Primary), docIDs(res.Expanded))
			}
			for _, c := range append(res.Primary, res.Expanded...) {
				want := string(ingestd.TierUntrustedExternal)
				if wantAllowed {
					want = string(ingestd.TierTrustedInternal) // every author here is the OWNER
				}
				if c.Tier != want {
					t.Errorf("%s (%s) tier %s, want %s", c.DocumentID, c.Title, c.Tier, want)
				}
			}
		})
	}
}

func docIDs(cs []ingestd.ServedChunk) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.DocumentID+" "+c.Via)
	}
	return out
}
