package postgres

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
)

// TestBroadReaderFilter: once ANALYZE has seen the readers, a person who
// reads a large share of the chunks (alice, a quarter) gets the
// full-text passes' row-by-row readers test and one who reads little
// (carol, one document of a hundred and one) the readers index; both
// forms (and the pass over common words, which takes the index for
// both) answer exactly what the person may read, and an unmapped
// document (readers unknown) is read by neither.
func TestBroadReaderFilter(t *testing.T) {
	s := mustOpen(t, &Options{Dims: 4})
	ctx := context.Background()
	put := func(i int, readers ingestd.Readers) string {
		t.Helper()
		d := &ingestd.Document{Installation: "mail", ExternalID: fmt.Sprintf("%d.eml", i), SourceKind: "imap",
			ContentHash: fmt.Sprint(i), Status: ingestd.StatusActive, Readers: readers}
		d.ID = ingestd.DocumentID(d.Installation, d.ExternalID)
		text := fmt.Sprintf("invoice number %d for the quarter", i)
		if _, err := s.PutDocument(ctx, d, []ingestd.Chunk{{ID: ingestd.ChunkID(d.ID, text, 0), DocumentID: d.ID, Text: text,
			Fenced: text, Embedding: []float32{float32(i), 1, 0, 0.5}, EmbedderID: "test/4"}}, nil); err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	want := map[string][]string{}
	for i := range 100 {
		who := "user:bob@example.com"
		if i%4 == 0 {
			who = "user:alice@example.com"
		}
		want[who] = append(want[who], put(i, ingestd.ReadersOf(ingestd.Principal(who))))
	}
	want["user:carol@example.com"] = []string{put(100, ingestd.ReadersOf("user:carol@example.com"))}
	put(101, ingestd.Readers{}) // unmapped: no person reads it
	if _, err := s.pool.Exec(ctx, "ANALYZE chunks"); err != nil {
		t.Fatal(err)
	}
	s.readers.forget() // statistics read afresh

	for who, docs := range want {
		r := ingestd.NewReader(ingestd.Principal(who))
		if got, wantBroad := s.broad(ctx, r), who != "user:carol@example.com"; got != wantBroad {
			t.Errorf("%s: broad %v, want %v", who, got, wantBroad)
		}
		// "number 7": its rarest word is in one of bob's documents, so
		// the others find the rest in the pass over common words alone.
		for _, q := range []string{"invoice quarter", "number 7"} {
			hits, err := s.SearchText(ctx, q, ingestd.Filter{Reader: r}, 200)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				got = append(got, h.DocumentID)
			}
			slices.Sort(got)
			slices.Sort(docs)
			if !slices.Equal(got, docs) {
				t.Errorf("%s, %q: %d documents found, want their %d", who, q, len(got), len(docs))
			}
		}
	}
	if hits, err := s.SearchText(ctx, "invoice", ingestd.Filter{Reader: ingestd.NewReader("user:mallory@example.com")}, 200); err != nil || len(hits) != 0 {
		t.Errorf("a person who reads nothing found %d chunks (%v)", len(hits), err)
	}
}
