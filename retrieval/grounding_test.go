package retrieval_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// untrustedServed returns the untrusted documents served in any block of
// the blocks, by the tier each chunk shows.
func untrustedServed(blocks ...[]ingestd.ServedChunk) []string {
	var out []string
	for _, b := range blocks {
		for _, c := range b {
			if provenance.Untrusted(ingestd.Tier(c.Tier)) && !slices.Contains(out, c.DocumentID) {
				out = append(out, c.DocumentID)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestGroundingAuto: grounding auto answers from trusted documents when
// one of them is the best full-text evidence, leaving untrusted documents
// out of all three blocks (and counting them), and lets them in when an
// untrusted document answers better. Either way the verdict is the
// verdict over what was served.
func TestGroundingAuto(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	tests := []struct {
		name         string
		req          ingestd.RetrieveRequest
		wantGrounded string
		wantPrimary  string // a document primary must hold
		wantLeftOut  []string
	}{
		{
			name:         "the policy answers: mails left out of primary",
			req:          ingestd.RetrieveRequest{Query: "refund policy original card", TopK: 5},
			wantGrounded: ingestd.GroundedTrusted, wantPrimary: retrievaltest.RefundPolicy.ID(),
			wantLeftOut: []string{retrievaltest.Refund.ID(), retrievaltest.Refund2.ID()},
		},
		{
			name:         "only a mail says it: external let in",
			req:          ingestd.RetrieveRequest{Query: "urgent refund call the payment tool", TopK: 3},
			wantGrounded: ingestd.GroundedExternal, wantPrimary: retrievaltest.Refund2.ID(),
		},
		{
			name:         "a stranger's comment reached by expansion is left out",
			req:          ingestd.RetrieveRequest{Query: "flaky scheduler timezone boundaries", TopK: 1},
			wantGrounded: ingestd.GroundedTrusted, wantPrimary: retrievaltest.Issue.ID(),
			wantLeftOut: []string{retrievaltest.StrangerComment.ID()},
		},
		{
			name:         "an untrusted dismissed approach is left out",
			req:          ingestd.RetrieveRequest{Query: "database migration plan move orders postgres logical replication", TopK: 1},
			wantGrounded: ingestd.GroundedTrusted, wantPrimary: retrievaltest.Migration.ID(),
			wantLeftOut: []string{retrievaltest.MongoProposal.ID()},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := MustRetrieve(t, svc, tt.req)
			if got, want := all.Grounding, ingestd.GroundedAll; got != want {
				t.Errorf("grounding all: response grounding = %q, want %q", got, want)
			}
			for _, id := range tt.wantLeftOut {
				if !slices.Contains(docs(all), id) {
					t.Fatalf("without grounding auto %s is not served; the case needs it", id)
				}
			}
			req := tt.req
			req.Grounding = ingestd.GroundingAuto
			resp := MustRetrieve(t, svc, req)
			if got := resp.Grounding; got != tt.wantGrounded {
				t.Fatalf("grounding = %q, want %q (primary %v)", got, tt.wantGrounded, blockDocs(resp.Primary))
			}
			if !slices.Contains(blockDocs(resp.Primary), tt.wantPrimary) {
				t.Errorf("primary = %v, want %s in it", blockDocs(resp.Primary), tt.wantPrimary)
			}
			served := untrustedServed(resp.Primary, resp.Expanded, resp.Rejected)
			if got, want := resp.Verdict.UntrustedDocumentIDs, served; !slices.Equal(got, want) {
				t.Errorf("verdict names %v, served untrusted %v", got, want)
			}
			if got, want := resp.Verdict.ToolsAllowed, len(served) == 0; got != want {
				t.Errorf("tools allowed = %v with %d untrusted documents served", got, len(served))
			}
			switch tt.wantGrounded {
			case ingestd.GroundedTrusted:
				if len(served) > 0 {
					t.Errorf("trusted grounding served untrusted %v", served)
				}
				for _, id := range tt.wantLeftOut {
					if slices.Contains(docs(resp), id) {
						t.Errorf("%s served", id)
					}
				}
				if got, want := resp.ExcludedUntrustedDocuments, len(tt.wantLeftOut); got < want {
					t.Errorf("excluded_untrusted_documents = %d, want at least %d", got, want)
				}
			case ingestd.GroundedExternal:
				if len(served) == 0 || resp.Verdict.ToolsAllowed {
					t.Errorf("external grounding: served untrusted %v, verdict %+v", served, resp.Verdict)
				}
				if resp.ExcludedUntrustedDocuments != 0 {
					t.Errorf("external grounding excluded %d documents", resp.ExcludedUntrustedDocuments)
				}
				// Letting untrusted documents in serves what grounding
				// all serves.
				if got, want := docs(resp), docs(all); !slices.Equal(got, want) {
					t.Errorf("served %v, grounding all serves %v", got, want)
				}
			}
		})
	}
}

// TestGroundingAutoWithExclusion: exclude_untrusted leaves grounding auto
// nothing to choose; the answer is the excluded one and says so.
func TestGroundingAutoWithExclusion(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	req := ingestd.RetrieveRequest{Query: "urgent refund call the payment tool", TopK: 3, ExcludeUntrusted: true}
	want := MustRetrieve(t, svc, req)
	req.Grounding = ingestd.GroundingAuto
	got := MustRetrieve(t, svc, req)
	if got.Grounding != ingestd.GroundedTrusted || want.Grounding != ingestd.GroundedTrusted {
		t.Errorf("grounding = %q (auto), %q (all); want trusted", got.Grounding, want.Grounding)
	}
	if !slices.Equal(docs(got), docs(want)) || got.ExcludedUntrustedDocuments != want.ExcludedUntrustedDocuments {
		t.Errorf("auto with exclusion served %v (%d left out), exclusion alone %v (%d)",
			docs(got), got.ExcludedUntrustedDocuments, docs(want), want.ExcludedUntrustedDocuments)
	}
}

func TestGroundingRefused(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	_, err := svc.Retrieve(t.Context(), ingestd.RetrieveRequest{Query: "refund", Grounding: "trusted-first"})
	if got, want := ingestd.ErrorCode(err), ingestd.EINVALID; got != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// TestTrustedView: a request with trusted_view gets, beside its answer,
// exactly the blocks exclude_untrusted serves, with a verdict over those
// blocks; the answer and its verdict are the ones the request gets
// without the view. In shadow mode each verdict reports its own
// would_block.
func TestTrustedView(t *testing.T) {
	for _, mode := range []string{ingestd.ModeEnforce, ingestd.ModeShadow} {
		svc := MustService(t, mode)
		for _, g := range []string{"", ingestd.GroundingAuto} {
			for _, q := range []string{"please process my refund by wire transfer today", "flaky scheduler timezone boundaries", "vacation days accrue"} {
				req := ingestd.RetrieveRequest{Query: q, TopK: 3, Grounding: g}
				plain := MustRetrieve(t, svc, req)
				req.TrustedView = true
				resp := MustRetrieve(t, svc, req)
				excl := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: q, TopK: 3, ExcludeUntrusted: true})
				if plain.TrustedView != nil {
					t.Fatalf("%s %q: a view without asking", mode, q)
				}
				v := resp.TrustedView
				if v == nil {
					t.Fatalf("%s %q: no trusted view", mode, q)
				}
				if !slices.Equal(docs(resp), docs(plain)) || !reflect.DeepEqual(resp.Verdict, plain.Verdict) {
					t.Errorf("%s %q grounding %q: the answer changed with the view: %v %+v, want %v %+v",
						mode, q, g, docs(resp), resp.Verdict, docs(plain), plain.Verdict)
				}
				viewResp := &ingestd.RetrieveResponse{Primary: v.Primary, Expanded: v.Expanded, Rejected: v.Rejected, Verdict: v.Verdict}
				CheckFenced(t, viewResp)
				if got, want := docs(viewResp), docs(excl); !slices.Equal(got, want) {
					t.Errorf("%s %q: view serves %v, exclude_untrusted %v", mode, q, got, want)
				}
				if got, want := v.ExcludedUntrustedDocuments, excl.ExcludedUntrustedDocuments; got != want {
					t.Errorf("%s %q: view excluded %d, exclude_untrusted %d", mode, q, got, want)
				}
				if got := untrustedServed(v.Primary, v.Expanded, v.Rejected); len(got) > 0 {
					t.Errorf("%s %q: view serves untrusted %v", mode, q, got)
				}
				if !v.Verdict.ToolsAllowed || v.Verdict.WouldBlock || v.Verdict.Mode != mode || len(v.Verdict.UntrustedDocumentIDs) != 0 {
					t.Errorf("%s %q: view verdict %+v, want tools allowed", mode, q, v.Verdict)
				}
			}
		}
	}
}

// TestTrustedViewVerdictIsItsOwn: the view's verdict is computed over the
// view's blocks, not copied from the answer: with every installation
// undeclared, every document is untrusted (orphaned), so the view is
// empty and allows tools while the answer blocks.
func TestTrustedViewVerdictIsItsOwn(t *testing.T) {
	s, e := retrievaltest.MustAcceptance(t)
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "vacation days accrue", TrustedView: true})
	if resp.Verdict.ToolsAllowed || len(resp.Primary) == 0 {
		t.Fatalf("answer verdict %+v with %d primary chunks; every document is orphaned and should block", resp.Verdict, len(resp.Primary))
	}
	v := resp.TrustedView
	if len(v.Primary)+len(v.Expanded)+len(v.Rejected) != 0 || !v.Verdict.ToolsAllowed {
		t.Errorf("view serves %d chunks with verdict %+v, want none and tools allowed", len(v.Primary)+len(v.Expanded)+len(v.Rejected), v.Verdict)
	}
}

// TestGroundingAutoNothingToChoose: with a narrowing that matches no
// document (the support mailbox, asked for trusted documents only),
// grounding auto serves nothing and says trusted: nothing untrusted could
// be served.
func TestGroundingAutoNothingToChoose(t *testing.T) {
	svc := MustService(t, ingestd.ModeEnforce)
	resp := MustRetrieve(t, svc, ingestd.RetrieveRequest{Query: "refund", Grounding: ingestd.GroundingAuto,
		Installations: []string{"support"}, Tiers: []string{string(ingestd.TierTrustedInternal)}})
	if len(docs(resp)) != 0 || resp.Grounding != ingestd.GroundedTrusted || !resp.Verdict.ToolsAllowed {
		t.Errorf("served %v, grounding %q, verdict %+v; want nothing, trusted, allowed", docs(resp), resp.Grounding, resp.Verdict)
	}
}
