// The cases of the methods ingestd.Store adds to its roles: the embedding
// cache, re-embedding, installations and Ping.

package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
)

func testEmbeddingCache(t *testing.T, s ingestd.Store) {
	v1 := []float32{0.5, -0.25, 1e-7, 3}
	if err := s.PutEmbeddings(ctx(), "e1", map[string][]float32{"h1": v1, "h2": {1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutEmbeddings(ctx(), "e2", map[string][]float32{"h1": {9}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.CachedEmbeddings(ctx(), "e1", []string{"h1", "h3"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !slices.Equal(got["h1"], v1) {
		t.Fatalf("CachedEmbeddings = %v, want only h1 = %v", got, v1)
	}
	if got, err := s.CachedEmbeddings(ctx(), "e2", []string{"h1", "h2"}); err != nil || len(got) != 1 || !slices.Equal(got["h1"], []float32{9}) {
		t.Fatalf("other embedder's cache = %v, %v", got, err)
	}
	many := make([]string, 1200)
	for i := range many {
		many[i] = fmt.Sprint("x", i)
	}
	many[1100] = "h2"
	if got, err := s.CachedEmbeddings(ctx(), "e1", many); err != nil || len(got) != 1 {
		t.Fatalf("CachedEmbeddings of 1200 hashes = %d, %v, want 1", len(got), err)
	}
}

func testChunksToEmbed(t *testing.T, s ingestd.Store) {
	var all []string
	for i := range 3 {
		d := Doc("inst", fmt.Sprintf("%d.md", i), "", fmt.Sprint(i))
		cs := Chunks(d, 0, "p", "q", "r")
		MustPut(t, s, d, cs, nil)
		all = append(all, chunkIDList(cs)...)
	}
	gone := Doc("inst", "gone.md", "", "gone")
	MustPut(t, s, gone, Chunks(gone, 0, "gone"), nil)
	if err := s.DeleteDocument(ctx(), gone.ID); err != nil {
		t.Fatal(err)
	}
	slices.Sort(all)
	var got []string
	after := ""
	for range 10 {
		page, err := s.ChunksToEmbed(ctx(), "new/8", after, 4)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > 4 {
			t.Fatalf("page of %d, limit 4", len(page))
		}
		if len(page) == 0 {
			break
		}
		for _, c := range page {
			got = append(got, c.ID)
			if c.Text == "" || c.DocumentID == "" {
				t.Fatalf("chunk to embed lacks text or document: %+v", c)
			}
		}
		after = page[len(page)-1].ID
	}
	equalStrings(t, "ChunksToEmbed pages", got, all)
	vecs := map[string][]float32{}
	for _, id := range all[:5] {
		vecs[id] = Axis(3)
	}
	vecs["cmissing"] = Axis(3)
	if err := s.SetEmbeddings(ctx(), "new/8", vecs); err != nil {
		t.Fatal(err)
	}
	page, err := s.ChunksToEmbed(ctx(), "new/8", "", 100)
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "left to embed", chunkIDList(page), all[5:])
	views, err := s.Chunks(ctx(), all[:1])
	if err != nil {
		t.Fatal(err)
	}
	if views[0].EmbedderID != "new/8" || !slices.Equal(views[0].Embedding, Axis(3)) {
		t.Fatalf("after SetEmbeddings: %s %v", views[0].EmbedderID, views[0].Embedding)
	}
	hits, err := s.SearchVector(ctx(), Axis(3), ingestd.Filter{EmbedderID: "new/8"}, 100)
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, "search of re-embedded", sorted(chunkIDs(hits)...), all[:5])
}

func testPutInstallations(t *testing.T, s ingestd.Store) {
	insts := []ingestd.Installation{
		{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal},
		{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal},
	}
	if err := s.PutInstallations(ctx(), insts); err != nil {
		t.Fatal(err)
	}
	insts[0].Tier = ingestd.TierMachineGenerated
	if err := s.PutInstallations(ctx(), insts[:1]); err != nil {
		t.Fatalf("PutInstallations again: %v", err)
	}
	if err := s.PutInstallations(ctx(), nil); err != nil {
		t.Fatal(err)
	}
}

func testPing(t *testing.T, s ingestd.Store) {
	if err := s.Ping(ctx()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}
