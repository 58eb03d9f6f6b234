package retrieval_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/postgres/pgtest"
)

// twins are documents whose text and title are another's, word for word,
// in other installations and tiers: a stranger mails the handbook's page
// to the support inbox. Their scores tie exactly, so which of them an
// answer serves — and so its verdict — is decided by the tie-break.
func twins() []retrievaltest.Doc {
	text := "Payroll cutoff: submit expense reports with receipts before the twentieth of the month."
	var out []retrievaltest.Doc
	for i, at := range []struct {
		inst, kind string
		tier       ingestd.Tier
	}{
		{"handbook", "files", ingestd.TierTrustedInternal},
		{"support", "imap", ingestd.TierUntrustedExternal},
		{"legacy", "files", ""},
		{"support", "imap", ingestd.TierUntrustedExternal},
		{"handbook", "files", ingestd.TierTrustedInternal},
		{"support", "imap", ingestd.TierUntrustedExternal},
	} {
		out = append(out, retrievaltest.Doc{Installation: at.inst, Kind: at.kind, Tier: at.tier,
			ExternalID: fmt.Sprintf("payroll-%d", i), Title: "Payroll cutoff", Chunks: []string{text}})
	}
	return out
}

// orderCorpus is the acceptance corpus (without the comment it deletes),
// the twins and a synthetic corpus with links, some rejected documents
// and a quarter of it untrusted.
func orderCorpus() ([]retrievaltest.Doc, []string) {
	var docs []retrievaltest.Doc
	for _, d := range retrievaltest.Acceptance() {
		if d.ExternalID != retrievaltest.DeletedComment.ExternalID {
			docs = append(docs, d)
		}
	}
	docs = append(docs, twins()...)
	syn := retrievaltest.NewSynthetic(1200, 26)
	docs = append(docs, syn.Docs...)
	queries := append([]string{"refund wire transfer", "payroll cutoff expense reports", "payroll", "database migration plan",
		"flaky scheduler test", "vacation days", "deploy rollback"}, syn.Queries[:40]...)
	return docs, queries
}

// orderRequests are the requests each query is asked in: a small top_k
// (which cuts inside the twins), exclude_untrusted, grounding auto with
// the trusted view.
func orderRequests(q string) []ingestd.RetrieveRequest {
	return []ingestd.RetrieveRequest{
		{Query: q, TopK: 2, RequestID: "r"},
		{Query: q, TopK: 8, RequestID: "r"},
		{Query: q, TopK: 3, ExcludeUntrusted: true, RequestID: "r"},
		{Query: q, TopK: 4, Grounding: ingestd.GroundingAuto, TrustedView: true, RequestID: "r"},
	}
}

// answerJSON is the answer as JSON without the fences' nonces, which
// every write draws afresh.
func answerJSON(t *testing.T, resp *ingestd.RetrieveResponse) string {
	t.Helper()
	blank := func(cs []ingestd.ServedChunk) {
		for i := range cs {
			cs[i].Fenced = ""
		}
	}
	blank(resp.Primary)
	blank(resp.Expanded)
	blank(resp.Rejected)
	if v := resp.TrustedView; v != nil {
		blank(v.Primary)
		blank(v.Expanded)
		blank(v.Rejected)
	}
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustSameAnswers asks every store every request and fails where an
// answer — blocks, scores, verdict — differs from the first store's.
func mustSameAnswers(t *testing.T, e ingestd.Embedder, queries []string, stores map[string]ingestd.Store, names []string) {
	t.Helper()
	svcs := map[string]*retrieval.Service{}
	for _, name := range names {
		// The acceptance corpus's installations and the synthetic one's
		// machine-generated one.
		insts := append(retrievaltest.Installations(), ingestd.Installation{ID: "bots", Kind: "webhook", Tier: ingestd.TierMachineGenerated})
		svc, err := retrieval.New(retrieval.Options{Store: stores[name], Embedder: e, Installations: insts})
		if err != nil {
			t.Fatal(err)
		}
		svcs[name] = svc
	}
	differ, twinsServed := 0, 0
	for _, q := range queries {
		for _, r := range orderRequests(q) {
			var want string
			for i, name := range names {
				resp, err := svcs[name].Retrieve(t.Context(), r)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 && slices.ContainsFunc(resp.Primary, func(c ingestd.ServedChunk) bool { return c.Title == "Payroll cutoff" }) {
					twinsServed++
				}
				got := answerJSON(t, resp)
				if i == 0 {
					want = got
				} else if got != want {
					if differ++; differ <= 3 {
						t.Errorf("%+v: %s answers\n%s\n%s answers\n%s", r, name, got, names[0], want)
					}
				}
			}
		}
	}
	if differ > 3 {
		t.Errorf("... %d answers differed in all", differ)
	}
	if twinsServed == 0 {
		t.Fatal("no answer served the twins: the corpus does not exercise ties")
	}
}

// load writes docs into a store, in their order or reversed.
func load(t *testing.T, s ingestd.DocumentStore, e ingestd.Embedder, docs []retrievaltest.Doc, reversed bool) {
	t.Helper()
	docs = slices.Clone(docs)
	if reversed {
		slices.Reverse(docs)
	}
	retrievaltest.MustPut(t, s, e, docs...)
}

// copyStore imports into dst an export of src, as `ingestd export` and
// `ingestd import` move a store.
func copyStore(t *testing.T, src, dst ingestd.Store) {
	t.Helper()
	var recs []ingestd.ArchiveRecord
	if err := src.Export(t.Context(), func(r ingestd.ArchiveRecord) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := dst.Import(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
}

// The same corpus written in two orders, and imported from an export of
// another store, answers every request alike on SQLite: the same blocks,
// scores and verdict.
func TestAnswersDoNotDependOnLoadOrderSQLite(t *testing.T) {
	e := embedder.NewLexical(retrievaltest.Dims)
	docs, queries := orderCorpus()
	forward, reversed, imported := retrievaltest.MustStore(t), retrievaltest.MustStore(t), retrievaltest.MustStore(t)
	load(t, forward, e, docs, false)
	load(t, reversed, e, docs, true)
	copyStore(t, reversed, imported)
	mustSameAnswers(t, e, queries, map[string]ingestd.Store{"forward": forward, "reversed": reversed, "imported": imported},
		[]string{"forward", "reversed", "imported"})
}

// The same on Postgres: a corpus synced straight into it, and one
// imported into it from an export of a SQLite store that synced the
// corpus in the other order, answer alike.
func TestAnswersDoNotDependOnLoadOrderPostgres(t *testing.T) {
	srv := pgtest.SkipUnlessServer(t, os.Getenv(pgtest.EnvURL))
	e := embedder.NewLexical(retrievaltest.Dims)
	docs, queries := orderCorpus()
	synced := pgtest.MustOpen(t, srv, &postgres.Options{Dims: retrievaltest.Dims})
	imported := pgtest.MustOpen(t, srv, &postgres.Options{Dims: retrievaltest.Dims, FenceCheck: firewall.Check})
	lite := retrievaltest.MustStore(t)
	load(t, synced, e, docs, false)
	load(t, lite, e, docs, true)
	copyStore(t, lite, imported)
	mustSameAnswers(t, e, queries, map[string]ingestd.Store{"synced": synced, "imported": imported},
		[]string{"synced", "imported"})
}
