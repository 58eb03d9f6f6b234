package e2e_test

import (
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// TestRetrievalIsolationByInstallation holds two installations whose
// documents share every word and are wired to each other by every relation
// expansion follows (links both ways, a parent in the other installation
// with siblings there, adjacent chunks) plus a dismissed document in each.
// A retrieval restricted to one installation must serve nothing of the
// other in any block, and its verdict must be computed from what it served.
func TestRetrievalIsolationByInstallation(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.MustOpen(t)
	emb := embedder.NewLexical(128)
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewCached(emb, nil)})
	if err != nil {
		t.Fatal(err)
	}
	a := ingestd.Installation{ID: "team-a", Kind: "files", Tier: ingestd.TierTrustedInternal}
	b := ingestd.Installation{ID: "inbox-b", Kind: "imap", Tier: ingestd.TierUntrustedExternal}
	text := "# Wire transfer approval\n\nA wire transfer of the refund needs approval from finance before the payout tool runs.\n\n" +
		"## Second part\n\nFinance checks the refund, the wire transfer and the payout tool log every Friday.\n"
	for _, inst := range []ingestd.Installation{a, b} {
		items := []ingestd.Item{
			{ExternalID: "parent", Title: "parent", Format: ingestd.FormatMarkdown, Text: text + "parent thread"},
			{ExternalID: "child-1", Title: "child 1", Format: ingestd.FormatMarkdown, Text: text + "first child", ParentExternalID: "parent"},
			{ExternalID: "child-2", Title: "child 2", Format: ingestd.FormatMarkdown, Text: text + "second child", ParentExternalID: "parent"},
			{ExternalID: "linked", Title: "linked", Format: ingestd.FormatMarkdown, Text: text + "linked page",
				Links: []ingestd.ItemLink{{ToExternalID: "child-1", Relation: "xref"}}},
			{ExternalID: "dismissed", Title: "dismissed", Format: ingestd.FormatMarkdown, Text: text + "dismissed approach", Status: ingestd.StatusRejected},
		}
		for _, it := range items {
			if _, err := p.Ingest(ctx, inst, it); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Wire the installations to each other: every document of each links
	// to every document of the other, and each child links to the other
	// installation's parent as its parent. Pipeline never writes such links (it
	// links within an installation); a store may still hold them (an
	// import, a future connector), so the filter must not rely on that.
	for _, pair := range [][2]ingestd.Installation{{a, b}, {b, a}} {
		from, to := pair[0], pair[1]
		refs, err := st.DocumentRefs(ctx, from.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range refs {
			doc, err := st.Document(ctx, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			views, err := st.DocumentChunks(ctx, []string{r.ID})
			if err != nil {
				t.Fatal(err)
			}
			var chunks []ingestd.Chunk
			for _, v := range views {
				chunks = append(chunks, v.Chunk)
			}
			var links []ingestd.Link
			for _, ext := range []string{"parent", "child-1", "child-2", "linked", "dismissed"} {
				links = append(links, ingestd.Link{From: r.ID, To: ingestd.DocumentID(to.ID, ext), Relation: "xref"})
			}
			if doc.ParentID != "" {
				// Expansion follows the link. The document's ParentID (what
				// it was derived from, whose tier its own follows) stays.
				links = append(links, ingestd.Link{From: r.ID, To: ingestd.DocumentID(to.ID, "parent"), Relation: "parent"})
			}
			doc.ContentHash += "+cross"
			if _, err := st.PutDocument(ctx, doc, chunks, links); err != nil {
				t.Fatal(err)
			}
		}
	}

	svc, err := retrieval.New(retrieval.Options{Store: st, Embedder: emb, Installations: []ingestd.Installation{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		req          ingestd.RetrieveRequest
		only         string
		toolsAllowed bool
	}{
		// top_k 1 leaves the rest of the installation and every
		// cross-installation neighbour to expansion.
		{"trusted A", ingestd.RetrieveRequest{Installations: []string{a.ID}, TopK: 1}, a.ID, true},
		{"untrusted B", ingestd.RetrieveRequest{Installations: []string{b.ID}, TopK: 1}, b.ID, false},
		{"A with top_k 100", ingestd.RetrieveRequest{Installations: []string{a.ID}, TopK: 100}, a.ID, true},
		{"A by source kind too", ingestd.RetrieveRequest{Installations: []string{a.ID}, SourceKinds: []string{"files", "imap"}, TopK: 1}, a.ID, true},
		{"B excluding untrusted", ingestd.RetrieveRequest{Installations: []string{b.ID}, ExcludeUntrusted: true, TopK: 1}, b.ID, true},
	}
	// Unrestricted, the cross links do pull the other installation in:
	// the restriction below is what keeps it out.
	res, err := svc.Retrieve(ctx, ingestd.RetrieveRequest{Query: "wire transfer refund payout tool", TopK: 1})
	if err != nil {
		t.Fatal(err)
	}
	insts := map[string]bool{}
	for _, c := range res.Expanded {
		insts[c.Installation] = true
	}
	if !insts[a.ID] || !insts[b.ID] {
		t.Fatalf("unrestricted expansion reaches %v; want both installations (the cross links are not followed)", insts)
	}

	queries := []string{"wire transfer refund payout tool", "dismissed approach", "first child", "linked page", "parent thread"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var served int
			for _, q := range queries {
				r := tt.req
				r.Query = q
				res, err := svc.Retrieve(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				blocks := map[string][]ingestd.ServedChunk{"primary": res.Primary, "expanded": res.Expanded, "rejected": res.Rejected}
				for name, cs := range blocks {
					for _, c := range cs {
						served++
						if c.Installation != tt.only {
							t.Errorf("%q: %s block serves %s of %s (via %q); want only %s", q, name, c.DocumentID, c.Installation, c.Via, tt.only)
						}
					}
				}
				if res.Verdict.ToolsAllowed != tt.toolsAllowed {
					t.Errorf("%q: verdict %+v; want tools_allowed=%v", q, res.Verdict, tt.toolsAllowed)
				}
				for _, id := range res.Verdict.UntrustedDocumentIDs {
					d, err := st.Document(ctx, id)
					if err != nil || d.Installation != tt.only {
						t.Errorf("%q: verdict names %s (%v), not a document of %s", q, id, err, tt.only)
					}
				}
				if q == "wire transfer refund payout tool" && tt.req.TopK == 1 && !tt.req.ExcludeUntrusted && (len(res.Expanded) == 0 || len(res.Rejected) == 0) {
					t.Errorf("%q: expanded %d, rejected %d; the test needs both blocks populated to mean anything", q, len(res.Expanded), len(res.Rejected))
				}
			}
			if served == 0 && !tt.req.ExcludeUntrusted {
				t.Error("nothing served")
			}
		})
	}
}
