// The cases of ingestd.DocumentStore: the pipeline's writes, deletions,
// statuses, the references a reconciliation reads, and cursors.

package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
)

func testPutNew(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", ingestd.TierTrustedInternal, "v1")
	d.Meta = map[string]string{"k": "v"}
	d.ParentID = ingestd.DocumentID("inst", "parent.md")
	if !MustPut(t, s, d, Chunks(d, 0, "alpha text", "beta text"), nil) {
		t.Fatal("first put: changed = false, want true")
	}
	got, err := s.Document(ctx(), d.ID)
	if err != nil {
		t.Fatalf("Document: %v", err)
	}
	if got.ID != d.ID || got.Installation != d.Installation || got.ExternalID != d.ExternalID ||
		got.SourceKind != d.SourceKind || got.ItemKind != d.ItemKind || got.URI != d.URI ||
		got.Title != d.Title || got.Author != d.Author || got.ContentHash != d.ContentHash ||
		got.Tier != d.Tier || got.Status != ingestd.StatusActive || got.ParentID != d.ParentID {
		t.Fatalf("Document = %+v, want %+v", got, d)
	}
	if !got.CreatedAt.Equal(d.CreatedAt) || !got.UpdatedAt.Equal(d.UpdatedAt) || !got.IngestedAt.Equal(d.IngestedAt) {
		t.Fatalf("times = %v %v %v, want %v %v %v", got.CreatedAt, got.UpdatedAt, got.IngestedAt, d.CreatedAt, d.UpdatedAt, d.IngestedAt)
	}
	if got.Meta["k"] != "v" || len(got.Meta) != 1 {
		t.Fatalf("Meta = %v, want map[k:v]", got.Meta)
	}
}

func testPutIdempotent(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", ingestd.TierTrustedInternal, "v1")
	first := Chunks(d, 0, "original words here")
	MustPut(t, s, d, first, nil)
	// Same hash, tier and status: nothing may be rewritten, not even when
	// the caller passes other chunks, another title or a later ingest time.
	again := *d
	again.Title = "Another title"
	again.IngestedAt = d.IngestedAt.Add(time.Hour)
	if MustPut(t, s, &again, Chunks(&again, 1, "replacement words"), nil) {
		t.Fatal("identical put: changed = true, want false")
	}
	got, err := s.Document(ctx(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != d.Title || !got.IngestedAt.Equal(d.IngestedAt) {
		t.Fatalf("document rewritten by a no-op put: title %q ingested %v", got.Title, got.IngestedAt)
	}
	views, err := s.DocumentChunks(ctx(), []string{d.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].ID != first[0].ID {
		t.Fatalf("chunks after no-op put = %v, want the original chunk %s", viewIDs(views), first[0].ID)
	}
	hits, err := s.SearchText(ctx(), "replacement", ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Fatalf("SearchText found text of a no-op put: %v", hits)
	}
}

func testPutReplaces(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", ingestd.TierTrustedInternal, "v1")
	other := Doc("inst", "b.md", ingestd.TierTrustedInternal, "b")
	MustPut(t, s, other, nil, nil)
	old := Chunks(d, 0, "obsolete paragraph", "kept paragraph")
	MustPut(t, s, d, old, []ingestd.Link{{From: d.ID, To: other.ID, Relation: "xref"}})

	d2 := Doc("inst", "a.md", ingestd.TierTrustedInternal, "v2")
	d2.Title = "New title"
	next := Chunks(d2, 3, "kept paragraph", "fresh paragraph", "another fresh one")
	if !MustPut(t, s, d2, next, nil) {
		t.Fatal("changed content: changed = false, want true")
	}
	views, err := s.DocumentChunks(ctx(), []string{d.ID})
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "chunks", viewIDs(views), chunkIDList(next))
	if got, _ := s.Chunks(ctx(), []string{old[0].ID}); len(got) != 0 {
		t.Fatalf("old chunk %s still served", old[0].ID)
	}
	if hits, _ := s.SearchText(ctx(), "obsolete", ingestd.Filter{}, 10); len(hits) != 0 {
		t.Fatalf("SearchText finds replaced text: %v", hits)
	}
	hits, err := s.SearchText(ctx(), "fresh", ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "fresh hits", sorted(chunkIDs(hits)...), sorted(next[1].ID, next[2].ID))
	// The vector of the replaced chunk left the vector index.
	vh, err := s.SearchVector(ctx(), Axis(0), ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range vh {
		if h.ChunkID == old[0].ID {
			t.Fatalf("SearchVector returns replaced chunk %s", h.ChunkID)
		}
	}
	links, err := s.Links(ctx(), []string{d.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 0 {
		t.Fatalf("links after replacement = %v, want none", links)
	}
	got, err := s.Document(ctx(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Title != "New title" || got.ContentHash != d2.ContentHash {
		t.Fatalf("document not rewritten: %+v", got)
	}
}

func testPutTierStatus(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", "", "v1")
	MustPut(t, s, d, Chunks(d, 0, "some words"), nil)
	d.Tier = ingestd.TierUntrustedExternal
	if !MustPut(t, s, d, Chunks(d, 0, "some words"), nil) {
		t.Fatal("tier change: changed = false, want true")
	}
	facts, err := s.TierFacts(ctx(), []string{d.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if facts[d.ID].Tier != ingestd.TierUntrustedExternal {
		t.Fatalf("tier = %q after change", facts[d.ID].Tier)
	}
	views, err := s.DocumentChunks(ctx(), []string{d.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 || views[0].Tier != ingestd.TierUntrustedExternal || views[0].DocumentTier != ingestd.TierUntrustedExternal {
		t.Fatalf("chunk tier after change = %+v", views)
	}
	d.Status = ingestd.StatusRejected
	if !MustPut(t, s, d, Chunks(d, 0, "some words"), nil) {
		t.Fatal("status change: changed = false, want true")
	}
	got, err := s.Document(ctx(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != ingestd.StatusRejected {
		t.Fatalf("status = %q, want rejected", got.Status)
	}
	if MustPut(t, s, d, Chunks(d, 0, "some words"), nil) {
		t.Fatal("repeated rejected put: changed = true, want false")
	}
}

func testPutSourceKind(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", ingestd.TierTrustedInternal, "v1")
	MustPut(t, s, d, Chunks(d, 0, "some words"), nil)
	// The installation's kind changed in the configuration and the new
	// connector writes the same content: the document must carry its new
	// kind, or it would stay orphaned.
	d.SourceKind = "url"
	if !MustPut(t, s, d, Chunks(d, 0, "some words"), nil) {
		t.Fatal("source kind change: changed = false, want true")
	}
	got, err := s.Document(ctx(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.SourceKind != "url" {
		t.Fatalf("source kind = %q after change", got.SourceKind)
	}
	if MustPut(t, s, d, Chunks(d, 0, "some words"), nil) {
		t.Fatal("same kind again: changed = true, want false")
	}
}

func testPutInvalid(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", "", "v1")
	d.Status = ingestd.StatusDeleted
	_, err := s.PutDocument(ctx(), d, nil, nil)
	wantCode(t, err, ingestd.EINVALID)

	other := Doc("inst", "b.md", "", "v1")
	bad := Doc("inst", "c.md", "", "v1")
	_, err = s.PutDocument(ctx(), bad, Chunks(other, 0, "wrong document"), nil)
	wantCode(t, err, ingestd.EINVALID)
	if _, err := s.Document(ctx(), bad.ID); ingestd.ErrorCode(err) != ingestd.ENOTFOUND {
		t.Fatalf("refused put left a document behind: %v", err)
	}
}

// putDocumentsCase writes, with put, five documents into s, where
// "same.md" is already stored as it is: a new one, one refused (a chunk
// of another document), one whose chunk id another document holds, the
// unchanged one and another new one. It returns the results and the puts.
func putDocumentsCase(t *testing.T, s ingestd.Store, put func([]ingestd.DocumentPut) []ingestd.PutResult) ([]ingestd.PutResult, []ingestd.DocumentPut) {
	t.Helper()
	same := Doc("inst", "same.md", ingestd.TierTrustedInternal, "same")
	MustPut(t, s, same, Chunks(same, 0, "the same words"), nil)
	a := Doc("inst", "a.md", ingestd.TierTrustedInternal, "a")
	bad := Doc("inst", "bad.md", ingestd.TierTrustedInternal, "bad")
	taker := Doc("inst", "taker.md", ingestd.TierTrustedInternal, "taker")
	e := Doc("inst", "e.md", ingestd.TierUntrustedExternal, "e")
	aChunks := Chunks(a, 1, "alpha words", "alpha more")
	takerChunks := Chunks(taker, 2, "taker words", "taker more")
	takerChunks[1].ID = aChunks[0].ID
	sameAgain := *same
	puts := []ingestd.DocumentPut{
		{Doc: a, Chunks: aChunks, Links: []ingestd.Link{{From: a.ID, To: e.ID, Relation: "xref"}}},
		{Doc: bad, Chunks: Chunks(a, 0, "not its own chunk")},
		{Doc: taker, Chunks: takerChunks},
		{Doc: &sameAgain, Chunks: Chunks(same, 0, "the same words")},
		{Doc: e, Chunks: Chunks(e, 3, "echo words")},
	}
	return put(puts), puts
}

// PutDocuments writes many documents as many PutDocument calls would: one
// refused or conflicting document leaves its neighbours written whole.
func testPutDocuments(t *testing.T, s ingestd.Store) {
	if got := s.PutDocuments(ctx(), nil); len(got) != 0 {
		t.Fatalf("PutDocuments(nil) = %v, want no results", got)
	}
	res, puts := putDocumentsCase(t, s, func(p []ingestd.DocumentPut) []ingestd.PutResult { return s.PutDocuments(ctx(), p) })
	if got, want := len(res), len(puts); got != want {
		t.Fatalf("%d results for %d puts", got, want)
	}
	wants := []struct {
		changed bool
		code    string
	}{{true, ""}, {false, ingestd.EINVALID}, {false, ingestd.ECONFLICT}, {false, ""}, {true, ""}}
	for i, w := range wants {
		id := puts[i].Doc.ID
		if got := ingestd.ErrorCode(res[i].Err); got != w.code || (w.code == "" && res[i].Err != nil) {
			t.Errorf("put %d (%s): err %v, want code %q", i, puts[i].Doc.ExternalID, res[i].Err, w.code)
		}
		if res[i].Changed != w.changed {
			t.Errorf("put %d (%s): changed %v, want %v", i, puts[i].Doc.ExternalID, res[i].Changed, w.changed)
		}
		_, err := s.Document(ctx(), id)
		if stored := err == nil; stored != (w.code == "") {
			t.Errorf("put %d (%s): Document err %v after PutDocuments", i, puts[i].Doc.ExternalID, err)
		}
	}
	views, err := s.DocumentChunks(ctx(), []string{puts[0].Doc.ID, puts[2].Doc.ID, puts[4].Doc.ID})
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "chunks written", viewIDs(views), []string{puts[0].Chunks[0].ID, puts[0].Chunks[1].ID, puts[4].Chunks[0].ID})
	links, err := s.Links(ctx(), []string{puts[0].Doc.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 1 || links[0].To != puts[4].Doc.ID {
		t.Fatalf("links of %s = %v, want the one to %s", puts[0].Doc.ID, links, puts[4].Doc.ID)
	}
	hits, err := s.SearchText(ctx(), "taker", ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Fatalf("SearchText found the text of a refused put: %v", hits)
	}
}

// A store's PutDocuments answers as PutDocumentsOf, one PutDocument a
// document, does.
func testPutDocumentsAsDefault(t *testing.T, s ingestd.Store) {
	res, puts := putDocumentsCase(t, s, func(p []ingestd.DocumentPut) []ingestd.PutResult { return s.PutDocuments(ctx(), p) })
	describe := func(s ingestd.Store, res []ingestd.PutResult, puts []ingestd.DocumentPut) []string {
		var out []string
		for i, r := range res {
			views, err := s.DocumentChunks(ctx(), []string{puts[i].Doc.ID})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s changed=%v code=%q chunks=%v", puts[i].Doc.ExternalID, r.Changed, ingestd.ErrorCode(r.Err), viewIDs(views)))
		}
		return out
	}
	got := describe(s, res, puts)
	// The same puts, one PutDocument each, into documents of another
	// installation so that both sets live side by side.
	moved := func(p []ingestd.DocumentPut) []ingestd.DocumentPut {
		out := make([]ingestd.DocumentPut, len(p))
		for i, x := range p {
			d := *x.Doc
			d.Installation = "other"
			d.ID = ingestd.DocumentID("other", d.ExternalID)
			cs := make([]ingestd.Chunk, len(x.Chunks))
			for j, c := range x.Chunks {
				if c.DocumentID == x.Doc.ID {
					c.DocumentID = d.ID
				}
				c.ID = "other-" + c.ID
				cs[j] = c
			}
			var ls []ingestd.Link
			for _, l := range x.Links {
				ls = append(ls, ingestd.Link{From: d.ID, To: l.To, Relation: l.Relation})
			}
			out[i] = ingestd.DocumentPut{Doc: &d, Chunks: cs, Links: ls}
		}
		return out
	}
	same := moved([]ingestd.DocumentPut{{Doc: puts[3].Doc, Chunks: puts[3].Chunks}})[0]
	MustPut(t, s, same.Doc, same.Chunks, nil)
	ps := moved(puts)
	want := describe(s, ingestd.PutDocumentsOf(ctx(), s, ps), ps)
	for i := range want {
		want[i] = strings.ReplaceAll(want[i], "other-", "")
	}
	for i := range got {
		if i < len(want) && got[i] != want[i] {
			t.Errorf("PutDocuments: %s\nPutDocumentsOf: %s", got[i], want[i])
		}
	}
}

func testDocumentNotFound(t *testing.T, s ingestd.Store) {
	_, err := s.Document(ctx(), "dmissing")
	wantCode(t, err, ingestd.ENOTFOUND)
}

func testDelete(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", ingestd.TierUntrustedExternal, "v1")
	keep := Doc("inst", "b.md", ingestd.TierUntrustedExternal, "b")
	cs := Chunks(d, 0, "tombstoned words appear here")
	MustPut(t, s, d, cs, nil)
	MustPut(t, s, keep, Chunks(keep, 1, "surviving words"), nil)
	// Search once first so an index built lazily is built before the delete.
	if hits, err := s.SearchVector(ctx(), Axis(0), ingestd.Filter{}, 10); err != nil || len(hits) != 2 || hits[0].ChunkID != cs[0].ID {
		t.Fatalf("SearchVector before delete = %v, %v", hits, err)
	}
	if err := s.DeleteDocument(ctx(), d.ID); err != nil {
		t.Fatalf("DeleteDocument: %v", err)
	}
	got, err := s.Document(ctx(), d.ID)
	if err != nil {
		t.Fatalf("Document of a tombstone: %v", err)
	}
	if got.Status != ingestd.StatusDeleted || got.ContentHash != d.ContentHash {
		t.Fatalf("tombstone = %+v", got)
	}
	all := ingestd.Filter{Statuses: []ingestd.Status{ingestd.StatusActive, ingestd.StatusRejected, ingestd.StatusDeleted}}
	if hits, err := s.SearchText(ctx(), "tombstoned", all, 10); err != nil || len(hits) != 0 {
		t.Fatalf("SearchText after delete = %v, %v", hits, err)
	}
	if hits, err := s.SearchVector(ctx(), Axis(0), all, 10); err != nil || len(hits) != 1 || hits[0].DocumentID != keep.ID {
		t.Fatalf("SearchVector after delete = %v, %v, want only %s", hits, err, keep.ID)
	}
	if views, err := s.DocumentChunks(ctx(), []string{d.ID}); err != nil || len(views) != 0 {
		t.Fatalf("DocumentChunks after delete = %v, %v", views, err)
	}
	counts, err := s.CountDocuments(ctx(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 1 || counts[0].Count != 1 {
		t.Fatalf("CountDocuments after delete = %+v, want one document", counts)
	}
	refs, err := s.DocumentRefs(ctx(), "inst")
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0].ID != keep.ID {
		t.Fatalf("DocumentRefs after delete = %+v", refs)
	}
	if err := s.DeleteDocument(ctx(), d.ID); err != nil {
		t.Fatalf("deleting a tombstone: %v", err)
	}
	if hits, err := s.SearchText(ctx(), "surviving", ingestd.Filter{}, 10); err != nil || len(hits) != 1 {
		t.Fatalf("other document after delete = %v, %v", hits, err)
	}
}

func testResurrect(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", ingestd.TierTrustedInternal, "v1")
	MustPut(t, s, d, Chunks(d, 0, "phoenix rises"), nil)
	if err := s.DeleteDocument(ctx(), d.ID); err != nil {
		t.Fatal(err)
	}
	if !MustPut(t, s, d, Chunks(d, 0, "phoenix rises"), nil) {
		t.Fatal("put of a tombstone with its old hash: changed = false, want true")
	}
	got, err := s.Document(ctx(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != ingestd.StatusActive {
		t.Fatalf("status = %q, want active", got.Status)
	}
	if hits, err := s.SearchText(ctx(), "phoenix", ingestd.Filter{}, 10); err != nil || len(hits) != 1 {
		t.Fatalf("SearchText after resurrection = %v, %v", hits, err)
	}
	if hits, err := s.SearchVector(ctx(), Axis(0), ingestd.Filter{}, 10); err != nil || len(hits) != 1 {
		t.Fatalf("SearchVector after resurrection = %v, %v", hits, err)
	}
}

func testDeleteNotFound(t *testing.T, s ingestd.Store) {
	wantCode(t, s.DeleteDocument(ctx(), "dmissing"), ingestd.ENOTFOUND)
}

func testSetStatus(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", ingestd.TierTrustedInternal, "v1")
	MustPut(t, s, d, Chunks(d, 0, "dismissed approach"), nil)
	// Build any lazy index before the status changes.
	if _, err := s.SearchVector(ctx(), Axis(0), ingestd.Filter{}, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatus(ctx(), d.ID, ingestd.StatusRejected); err != nil {
		t.Fatalf("SetStatus: %v", err)
	}
	got, err := s.Document(ctx(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != ingestd.StatusRejected {
		t.Fatalf("status = %q, want rejected", got.Status)
	}
	rejected := ingestd.Filter{Statuses: []ingestd.Status{ingestd.StatusRejected}}
	for _, tc := range []struct {
		name   string
		f      ingestd.Filter
		search func(ingestd.Filter) ([]ingestd.Hit, error)
		want   int
	}{
		{"text default", ingestd.Filter{}, func(f ingestd.Filter) ([]ingestd.Hit, error) { return s.SearchText(ctx(), "dismissed", f, 10) }, 0},
		{"text rejected", rejected, func(f ingestd.Filter) ([]ingestd.Hit, error) { return s.SearchText(ctx(), "dismissed", f, 10) }, 1},
		{"vector default", ingestd.Filter{}, func(f ingestd.Filter) ([]ingestd.Hit, error) { return s.SearchVector(ctx(), Axis(0), f, 10) }, 0},
		{"vector rejected", rejected, func(f ingestd.Filter) ([]ingestd.Hit, error) { return s.SearchVector(ctx(), Axis(0), f, 10) }, 1},
	} {
		hits, err := tc.search(tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(hits) != tc.want {
			t.Fatalf("%s: %d hits, want %d", tc.name, len(hits), tc.want)
		}
	}
	if err := s.SetStatus(ctx(), d.ID, ingestd.StatusActive); err != nil {
		t.Fatal(err)
	}
	if hits, _ := s.SearchVector(ctx(), Axis(0), ingestd.Filter{}, 10); len(hits) != 1 {
		t.Fatalf("SearchVector after reactivation: %d hits, want 1", len(hits))
	}
	wantCode(t, s.SetStatus(ctx(), d.ID, ingestd.StatusDeleted), ingestd.EINVALID)
	wantCode(t, s.SetStatus(ctx(), "dmissing", ingestd.StatusRejected), ingestd.ENOTFOUND)
	if err := s.DeleteDocument(ctx(), d.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStatus(ctx(), d.ID, ingestd.StatusActive); err == nil {
		t.Fatal("SetStatus on a tombstone: no error")
	}
	if got, _ := s.Document(ctx(), d.ID); got == nil || got.Status != ingestd.StatusDeleted {
		t.Fatalf("tombstone changed by SetStatus: %+v", got)
	}
}

func testDocumentRefs(t *testing.T, s ingestd.Store) {
	a := Doc("inst", "a.md", "", "a")
	b := Doc("inst", "b.md", "", "b")
	c := Doc("other", "c.md", "", "c")
	for _, d := range []*ingestd.Document{a, b, c} {
		MustPut(t, s, d, nil, nil)
	}
	if err := s.SetStatus(ctx(), b.ID, ingestd.StatusRejected); err != nil {
		t.Fatal(err)
	}
	refs, err := s.DocumentRefs(ctx(), "inst")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(refs, func(x, y ingestd.DocumentRef) int { return strings.Compare(x.ExternalID, y.ExternalID) })
	want := []ingestd.DocumentRef{
		{ID: a.ID, ExternalID: "a.md", ContentHash: a.ContentHash, Status: ingestd.StatusActive},
		{ID: b.ID, ExternalID: "b.md", ContentHash: b.ContentHash, Status: ingestd.StatusRejected},
	}
	if !slices.Equal(refs, want) {
		t.Fatalf("DocumentRefs = %+v, want %+v", refs, want)
	}
	if refs, err := s.DocumentRefs(ctx(), "nobody"); err != nil || len(refs) != 0 {
		t.Fatalf("DocumentRefs of an unknown installation = %v, %v", refs, err)
	}
}

func testCursors(t *testing.T, s ingestd.Store) {
	if v, err := s.Cursor(ctx(), "inst", "uid"); err != nil || v != "" {
		t.Fatalf("unset cursor = %q, %v", v, err)
	}
	if err := s.SetCursor(ctx(), "inst", "uid", "41"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCursor(ctx(), "inst", "uid", "42"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCursor(ctx(), "other", "uid", "7"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Cursor(ctx(), "inst", "uid"); err != nil || v != "42" {
		t.Fatalf("cursor = %q, %v, want 42", v, err)
	}
	if v, err := s.Cursor(ctx(), "other", "uid"); err != nil || v != "7" {
		t.Fatalf("other cursor = %q, %v, want 7", v, err)
	}
}
