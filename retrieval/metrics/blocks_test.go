package metrics_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/metrics"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// answer is what the scripted retriever answers next: a verdict over the
// documents named, each served from installation "support".
type answer struct {
	verdict *ingestd.Verdict
	docs    []string
}

func scripted(next *answer) retrieverFunc {
	return func(context.Context, ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error) {
		resp := &ingestd.RetrieveResponse{Verdict: next.verdict}
		for _, id := range next.docs {
			resp.Primary = append(resp.Primary, ingestd.ServedChunk{DocumentID: id, Installation: "support"})
		}
		return resp, nil
	}
}

// TestBlockReportCountsTurnsAndDocuments: the report counts every turn
// and the blocked and would-block ones, per five-minute bucket over the
// last day (an older bucket drops out), and ranks the untrusted documents
// the blocking verdicts named by how many blocks each caused.
func TestBlockReportCountsTurnsAndDocuments(t *testing.T) {
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := start
	next := &answer{}
	r, err := metrics.New(scripted(next), &metrics.Options{Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	ask := func(v *ingestd.Verdict, docs ...string) {
		t.Helper()
		next.verdict, next.docs = v, docs
		if _, err := r.Retrieve(context.Background(), ingestd.RetrieveRequest{Query: "q"}); err != nil {
			t.Fatal(err)
		}
	}
	block := func(ids ...string) *ingestd.Verdict {
		return &ingestd.Verdict{Mode: ingestd.ModeEnforce, Reason: ingestd.ReasonUntrusted, UntrustedDocumentIDs: ids}
	}
	allow := &ingestd.Verdict{ToolsAllowed: true, Mode: ingestd.ModeEnforce, Reason: ingestd.ReasonNoUntrusted}

	ask(block("mail-1"), "mail-1") // a day ago: its bucket drops out, its document stays
	clock = start.Add(24 * time.Hour)
	ask(allow, "handbook")
	ask(block("mail-1", "mail-2"), "mail-1", "mail-2")
	clock = clock.Add(6 * time.Minute)
	ask(&ingestd.Verdict{ToolsAllowed: true, WouldBlock: true, Mode: ingestd.ModeShadow, UntrustedDocumentIDs: []string{"mail-3"}}, "mail-3")
	ask(block("mail-2"), "mail-2")
	ask(block("mail-2"), "mail-2")

	rep, err := r.BlockReport(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Turns != 6 || rep.Blocked != 4 || rep.WouldBlock != 1 || !rep.Since.Equal(start) || rep.BucketSeconds != 300 {
		t.Errorf("totals: %d turns, %d blocked, %d would block, since %v, %ds buckets; want 6, 4, 1, %v, 300s",
			rep.Turns, rep.Blocked, rep.WouldBlock, rep.Since, rep.BucketSeconds, start)
	}
	var buckets []string
	for _, b := range rep.Buckets {
		buckets = append(buckets, fmt.Sprintf("%s %d/%d/%d", b.Start.Format("15:04"), b.Turns, b.Blocked, b.WouldBlock))
	}
	if got, want := fmt.Sprint(buckets), "[09:00 2/1/0 09:05 3/2/1]"; got != want {
		t.Errorf("buckets %s, want %s (the one a day old dropped)", got, want)
	}
	var docs []string
	for _, d := range rep.Documents {
		docs = append(docs, fmt.Sprintf("%s@%s:%d", d.DocumentID, d.Installation, d.Blocks))
	}
	if got, want := fmt.Sprint(docs), "[mail-2@support:3 mail-1@support:2 mail-3@support:1]"; got != want {
		t.Errorf("documents %s, want %s", got, want)
	}
}

// TestBlockReportIsBounded: past ingestd.MaxTrackedBlockedDocuments
// documents, new ones are counted as untracked instead of growing the
// table.
func TestBlockReportIsBounded(t *testing.T) {
	next := &answer{}
	r, err := metrics.New(scripted(next), nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, ingestd.MaxTrackedBlockedDocuments+7)
	for i := range ids {
		ids[i] = fmt.Sprintf("doc-%05d", i)
	}
	next.verdict = &ingestd.Verdict{Mode: ingestd.ModeEnforce, UntrustedDocumentIDs: ids}
	if _, err := r.Retrieve(context.Background(), ingestd.RetrieveRequest{}); err != nil {
		t.Fatal(err)
	}
	rep, _ := r.BlockReport(context.Background())
	if len(rep.Documents) != ingestd.MaxTrackedBlockedDocuments || rep.Untracked != 7 {
		t.Errorf("%d documents tracked, %d untracked; want %d and 7", len(rep.Documents), rep.Untracked, ingestd.MaxTrackedBlockedDocuments)
	}
}

// TestBlockReportOfTheService: over the real retrieval service, the
// acceptance corpus's injection mail blocks a turn and is the document
// the report names.
func TestBlockReportOfTheService(t *testing.T) {
	s, e := retrievaltest.MustAcceptance(t)
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, Installations: retrievaltest.Installations()})
	if err != nil {
		t.Fatal(err)
	}
	r, err := metrics.New(svc, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.Retrieve(context.Background(), ingestd.RetrieveRequest{Query: "refund IBAN transfer"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Verdict.ToolsAllowed || len(resp.Verdict.UntrustedDocumentIDs) == 0 {
		t.Fatalf("the acceptance query was not blocked: %+v", resp.Verdict)
	}
	rep, _ := r.BlockReport(context.Background())
	if rep.Blocked != 1 || len(rep.Documents) != len(resp.Verdict.UntrustedDocumentIDs) || rep.Documents[0].Installation == "" {
		t.Errorf("report %+v for verdict %+v", rep, resp.Verdict)
	}
}
