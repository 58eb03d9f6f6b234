// The cases of ingestd.Eraser: finding documents, erasing them with their
// tombstones, and listing cursors by prefix.

package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
)

func testFindDocuments(t *testing.T, s ingestd.Store) {
	mail := Doc("support", "<m1@example.com>", ingestd.TierUntrustedExternal, "m1")
	mail.Author = "Alice Example <Alice@Example.com>, bob@example.com"
	att := Doc("support", "<m1@example.com>/a.pdf", ingestd.TierUntrustedExternal, "a")
	att.ParentID = mail.ID
	other := Doc("wiki", "page.md", ingestd.TierTrustedInternal, "p")
	other.Author = "carol"
	for _, d := range []*ingestd.Document{mail, att, other} {
		MustPut(t, s, d, nil, nil)
	}
	if err := s.DeleteDocument(ctx(), att.ID); err != nil {
		t.Fatal(err)
	}
	ids := func(ds []ingestd.Document, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out := make([]string, len(ds))
		for i, d := range ds {
			out[i] = d.ID
		}
		return out
	}
	for _, tt := range []struct {
		name string
		q    ingestd.DocumentQuery
		want []string
	}{
		{"ids", ingestd.DocumentQuery{IDs: []string{other.ID, att.ID, "dmissing"}}, sorted(other.ID, att.ID)},
		{"parents (a tombstone included)", ingestd.DocumentQuery{ParentIDs: []string{mail.ID}}, []string{att.ID}},
		{"installation", ingestd.DocumentQuery{Installation: "support"}, sorted(mail.ID, att.ID)},
		{"author, ASCII case ignored", ingestd.DocumentQuery{AuthorContains: "alice@EXAMPLE.com"}, []string{mail.ID}},
		{"author, second sender", ingestd.DocumentQuery{AuthorContains: "bob@"}, []string{mail.ID}},
		{"author nobody has", ingestd.DocumentQuery{AuthorContains: "mallory"}, nil},
	} {
		equalStrings(t, tt.name, ids(s.FindDocuments(ctx(), tt.q)), tt.want)
	}
	got, err := s.FindDocuments(ctx(), ingestd.DocumentQuery{IDs: []string{mail.ID}})
	if err != nil || len(got) != 1 || got[0].Author != mail.Author || got[0].ExternalID != mail.ExternalID {
		t.Fatalf("FindDocuments(%s) = %+v, %v", mail.ID, got, err)
	}
	for _, q := range []ingestd.DocumentQuery{{}, {Installation: "support", AuthorContains: "x"}} {
		_, err := s.FindDocuments(ctx(), q)
		wantCode(t, err, ingestd.EINVALID)
	}
}

func testEraseRemoves(t *testing.T, s ingestd.Store) {
	gone, keep, dead, goneChunks := eraseFixture(t, s)
	// Load any lazily built index first, so the erasure has to reach it.
	if hits, err := s.SearchText(ctx(), "zebrafish", ingestd.Filter{}, 10); err != nil || len(hits) != 2 {
		t.Fatalf("SearchText before erasure = %v, %v", hits, err)
	}
	n, err := s.Erase(ctx(), ingestd.Erasure{
		DocumentIDs: []string{gone.ID, dead.ID, "dmissing"},
		TextHashes:  []string{"hgone"},
		Cursors: []ingestd.Cursor{
			{Installation: "inst", Key: "event-at:gone.md"},
			{Installation: "inst", Key: "map", Value: "keep.md"},
		},
		Tombstones: []ingestd.Tombstone{{Key: "k-gone", KeyID: "kid", Kind: ingestd.TombstoneDocument, Installation: "inst", CreatedAt: t0}},
	})
	if err != nil {
		t.Fatalf("Erase: %v", err)
	}
	want := ingestd.ErasureCounts{Documents: 2, Chunks: 2, Links: 2, CachedEmbeddings: 2, Cursors: 2, Tombstones: 1}
	if n != want {
		t.Fatalf("Erase counts %+v, want %+v", n, want)
	}
	wantErased(t, s, gone, keep, dead, goneChunks)
	if hits, err := s.SearchText(ctx(), "ordinary", ingestd.Filter{}, 10); err != nil || len(hits) != 1 {
		t.Fatalf("the other document after erasure = %v, %v", hits, err)
	}
	// Erasing nothing (again) is no error.
	if n, err := s.Erase(ctx(), ingestd.Erasure{DocumentIDs: []string{gone.ID}}); err != nil || n.Documents != 0 {
		t.Fatalf("second Erase = %+v, %v", n, err)
	}
}

// eraseFixture writes what testEraseRemoves erases: gone (two chunks,
// linked both ways with keep), keep, dead (deleted), cached embeddings
// under two embedders, cursors naming gone and keep, and a pass of inst
// and one of another installation whose cursor summaries name gone.
func eraseFixture(t *testing.T, s ingestd.Store) (gone, keep, dead *ingestd.Document, goneChunks []ingestd.Chunk) {
	t.Helper()
	gone = Doc("inst", "gone.md", ingestd.TierUntrustedExternal, "g")
	keep = Doc("inst", "keep.md", ingestd.TierUntrustedExternal, "k")
	dead = Doc("inst", "dead.md", ingestd.TierUntrustedExternal, "d")
	goneChunks = Chunks(gone, 0, "zebrafish confidential", "second zebrafish part")
	MustPut(t, s, gone, goneChunks, []ingestd.Link{link(gone.ID, keep.ID, "reply")})
	MustPut(t, s, keep, Chunks(keep, 2, "ordinary words"), []ingestd.Link{link(keep.ID, gone.ID, "xref")})
	MustPut(t, s, dead, Chunks(dead, 3, "dead words"), nil)
	if err := s.DeleteDocument(ctx(), dead.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEmbeddings(ctx(), "e1", map[string][]float32{"hgone": {1}, "hkeep": {2}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEmbeddings(ctx(), "e2", map[string][]float32{"hgone": {3}}); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"event-at:gone.md": "t", "event-at:keep.md": "t", "map": "gone.md,keep.md"} {
		if err := s.SetCursor(ctx(), "inst", k, v); err != nil {
			t.Fatal(err)
		}
	}
	// A pass's cursor summary may name an erased item; another
	// installation's stays.
	for _, r := range []ingestd.SyncRun{
		{Installation: "inst", Trigger: ingestd.TriggerManual, StartedAt: t0, Seen: 3, Cursors: "map=gone.md,keep.md"},
		{Installation: "elsewhere", Trigger: ingestd.TriggerManual, StartedAt: t0, Seen: 1, Cursors: "map=gone.md"},
	} {
		if err := s.AddRun(ctx(), r, 10); err != nil {
			t.Fatal(err)
		}
	}
	return gone, keep, dead, goneChunks
}

// wantErased checks that nothing of gone and dead is left in any role
// after eraseFixture's erasure, and that keep, the other embedder's
// vectors of keep and the other installation's pass are.
func wantErased(t *testing.T, s ingestd.Store, gone, keep, dead *ingestd.Document, goneChunks []ingestd.Chunk) {
	t.Helper()
	for _, id := range []string{gone.ID, dead.ID} {
		_, err := s.Document(ctx(), id)
		wantCode(t, err, ingestd.ENOTFOUND)
	}
	all := ingestd.Filter{Statuses: []ingestd.Status{ingestd.StatusActive, ingestd.StatusRejected, ingestd.StatusDeleted}}
	if hits, err := s.SearchText(ctx(), "zebrafish", all, 10); err != nil || len(hits) != 0 {
		t.Fatalf("SearchText after erasure = %v, %v", hits, err)
	}
	if hits, err := s.SearchVector(ctx(), Axis(0), all, 10); err != nil || len(hits) != 1 || hits[0].DocumentID != keep.ID {
		t.Fatalf("SearchVector after erasure = %v, %v, want only %s", hits, err, keep.ID)
	}
	if views, err := s.Chunks(ctx(), chunkIDList(goneChunks)); err != nil || len(views) != 0 {
		t.Fatalf("Chunks after erasure = %v, %v", views, err)
	}
	if ls, err := s.Links(ctx(), []string{keep.ID, gone.ID}); err != nil || len(ls) != 0 {
		t.Fatalf("Links after erasure = %v, %v", ls, err)
	}
	if facts, err := s.TierFacts(ctx(), []string{gone.ID, keep.ID}, nil); err != nil || len(facts) != 1 {
		t.Fatalf("TierFacts after erasure = %v, %v, want only %s", facts, err, keep.ID)
	}
	if refs, err := s.DocumentRefs(ctx(), "inst"); err != nil || len(refs) != 1 || refs[0].ID != keep.ID {
		t.Fatalf("DocumentRefs after erasure = %+v, %v", refs, err)
	}
	if got, err := s.CachedEmbeddings(ctx(), "e1", []string{"hgone", "hkeep"}); err != nil || len(got) != 1 || got["hkeep"] == nil {
		t.Fatalf("cache after erasure = %v, %v, want only hkeep", got, err)
	}
	if got, err := s.CachedEmbeddings(ctx(), "e2", []string{"hgone"}); err != nil || len(got) != 0 {
		t.Fatalf("other embedder's cache after erasure = %v, %v, want none", got, err)
	}
	for k, want := range map[string]string{"event-at:gone.md": "", "event-at:keep.md": "t", "map": "keep.md"} {
		if v, err := s.Cursor(ctx(), "inst", k); err != nil || v != want {
			t.Fatalf("cursor %s = %q, %v, want %q", k, v, err, want)
		}
	}
	for inst, want := range map[string]string{"inst": "", "elsewhere": "map=gone.md"} {
		runs, err := s.Runs(ctx(), inst, 10)
		if err != nil || len(runs) != 1 {
			t.Fatalf("Runs(%s) after erasure = %+v, %v", inst, runs, err)
		}
		if got := runs[0]; got.Cursors != want || got.Seen == 0 {
			t.Errorf("%s's pass after erasure: cursors %q, seen %d; want cursors %q and the counts kept", inst, got.Cursors, got.Seen, want)
		}
	}
}

func testEraseTombstones(t *testing.T, s ingestd.Store) {
	erased := func(keyID string, keys ...string) bool {
		t.Helper()
		ok, err := s.Erased(ctx(), keyID, keys)
		if err != nil {
			t.Fatalf("Erased(%v): %v", keys, err)
		}
		return ok
	}
	if erased("kid", "a") {
		t.Fatal("Erased in an empty store = true")
	}
	ts := []ingestd.Tombstone{
		{Key: "a", KeyID: "kid", Kind: ingestd.TombstoneDocument, Installation: "inst", CreatedAt: t0},
		{Key: "b", KeyID: "kid", Kind: ingestd.TombstoneAuthor, CreatedAt: t0.Add(time.Second)},
	}
	if _, err := s.Erase(ctx(), ingestd.Erasure{Tombstones: ts}); err != nil {
		t.Fatal(err)
	}
	if !erased("kid", "x", "b") || !erased("kid", "a") || erased("kid", "x", "y") || erased("kid") {
		t.Fatal("Erased does not answer by the tombstones")
	}
	many := make([]string, 1200)
	for i := range many {
		many[i] = fmt.Sprint("x", i)
	}
	many[1100] = "a"
	if !erased("kid", many...) {
		t.Fatal("Erased of 1200 keys misses the one tombstone among them")
	}
	_, err := s.Erased(ctx(), "another", []string{"a"})
	wantCode(t, err, ingestd.ECONFLICT)
	got, err := s.Tombstones(ctx())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Key != "a" || got[0].Installation != "inst" || got[0].Kind != ingestd.TombstoneDocument ||
		!got[0].CreatedAt.Equal(t0) || got[1].Key != "b" || got[1].Installation != "" || got[1].KeyID != "kid" {
		t.Fatalf("Tombstones = %+v", got)
	}
	if n, err := s.LiftTombstones(ctx(), []string{"a", "zzz"}); err != nil || n != 1 {
		t.Fatalf("LiftTombstones = %d, %v, want 1", n, err)
	}
	if erased("kid", "a") || !erased("kid", "b") {
		t.Fatal("a lifted tombstone still answers, or the other does not")
	}
}

func testEraseInvalid(t *testing.T, s ingestd.Store) {
	d := Doc("inst", "a.md", "", "a")
	MustPut(t, s, d, nil, nil)
	for _, tomb := range []ingestd.Tombstone{{KeyID: "k", Kind: ingestd.TombstoneDocument}, {Key: "x", Kind: ingestd.TombstoneDocument}, {Key: "x", KeyID: "k", Kind: "other"}} {
		_, err := s.Erase(ctx(), ingestd.Erasure{DocumentIDs: []string{d.ID}, Tombstones: []ingestd.Tombstone{tomb}})
		wantCode(t, err, ingestd.EINVALID)
	}
	if _, err := s.Document(ctx(), d.ID); err != nil {
		t.Fatalf("a refused erasure removed the document: %v", err)
	}
}

func testCursorsByPrefix(t *testing.T, s ingestd.Store) {
	for _, c := range []ingestd.Cursor{
		{Installation: "inst", Key: "uidmap:1:0:INBOX", Value: "a"},
		{Installation: "inst", Key: "uidmap:1:1:INBOX", Value: "b"},
		{Installation: "inst", Key: "uidmap_", Value: "not under the prefix"},
		{Installation: "inst", Key: "mailbox:INBOX", Value: "c"},
		{Installation: "other", Key: "uidmap:1:0:INBOX", Value: "d"},
		{Installation: "inst", Key: "%wild", Value: "e"},
	} {
		if err := s.SetCursor(ctx(), c.Installation, c.Key, c.Value); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Cursors(ctx(), "inst", "uidmap:")
	if err != nil {
		t.Fatal(err)
	}
	want := []ingestd.Cursor{{Installation: "inst", Key: "uidmap:1:0:INBOX", Value: "a"}, {Installation: "inst", Key: "uidmap:1:1:INBOX", Value: "b"}}
	if !slices.Equal(got, want) {
		t.Fatalf("Cursors(inst, uidmap:) = %+v, want %+v", got, want)
	}
	if got, err := s.Cursors(ctx(), "inst", "%"); err != nil || len(got) != 1 || got[0].Value != "e" {
		t.Fatalf("Cursors(inst, %%) = %+v, %v: a prefix is not a pattern", got, err)
	}
	if got, err := s.Cursors(ctx(), "inst", ""); err != nil || len(got) != 5 {
		t.Fatalf("Cursors(inst, \"\") = %d cursors, %v, want all 5", len(got), err)
	}
}
