package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

// TestReaderIndex: a person whose principals have reader indexes finds
// what they found through the whole graph, no more (another person's
// chunks, an unmapped document) and no less; the planner serves a
// principal's branch from its index; a dropped index leaves the answer
// as it was.
func TestReaderIndex(t *testing.T) {
	s := mustOpen(t, &Options{Dims: 4, ExactChunks: -1}) // the HNSW path however small
	ctx := context.Background()
	alice, bob := ingestd.Principal("user:alice@example.com"), ingestd.Principal("user:bob@example.com")
	put := func(i int, readers ingestd.Readers) {
		t.Helper()
		d := &ingestd.Document{Installation: "mail", ExternalID: fmt.Sprintf("%d.eml", i), SourceKind: "imap",
			ContentHash: fmt.Sprint(i), Status: ingestd.StatusActive, Readers: readers}
		d.ID = ingestd.DocumentID(d.Installation, d.ExternalID)
		text := fmt.Sprintf("note %d", i)
		if _, err := s.PutDocument(ctx, d, []ingestd.Chunk{{ID: ingestd.ChunkID(d.ID, text, 0), DocumentID: d.ID, Text: text,
			Fenced: text, Embedding: []float32{float32(i%7) + 1, float32(i % 5), 1, 0.5}, EmbedderID: "test/4"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 60 {
		put(i, ingestd.ReadersOf([]ingestd.Principal{alice, bob, ingestd.Everyone}[i%3]))
	}
	put(60, ingestd.Readers{}) // unmapped: no person reads it
	put(61, ingestd.ReadersOf(alice, bob))
	search := func(r *ingestd.Reader) []ingestd.Hit {
		t.Helper()
		hits, err := s.SearchVector(ctx, []float32{1, 1, 1, 0.5}, ingestd.Filter{Reader: r, EmbedderID: "test/4"}, 100)
		if err != nil {
			t.Fatal(err)
		}
		return hits
	}
	readers := []*ingestd.Reader{ingestd.NewReader(alice), ingestd.NewReader(bob), ingestd.NewReader("user:carol@example.com")}
	var before [][]ingestd.Hit
	for _, r := range readers {
		before = append(before, search(r))
	}
	if n := []int{len(before[0]), len(before[1]), len(before[2])}; !slices.Equal(n, []int{41, 41, 20}) {
		t.Fatalf("found %v chunks through the whole graph, want alice 41, bob 41, carol 20", n)
	}
	for _, p := range []ingestd.Principal{alice, ingestd.Everyone} {
		if err := s.IndexReader(ctx, p, RebuildOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.IndexReader(ctx, "alice", RebuildOptions{}); err == nil {
		t.Error("IndexReader of a name that is no principal: no error")
	}
	// A built index without its comment (a build stopped just before)
	// gets it from the next IndexReader, which builds nothing.
	if _, err := s.pool.Exec(ctx, "COMMENT ON INDEX "+readerIndexName(alice)+" IS NULL"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReaderIndexes(ctx); err != nil || !slices.Equal(got, []ingestd.Principal{ingestd.Everyone}) {
		t.Fatalf("ReaderIndexes without alice's comment = %v, %v; want *", got, err)
	}
	if err := s.IndexReader(ctx, "alice@example.com", RebuildOptions{}); err != nil { // her principal, as a bare address
		t.Fatal(err)
	}
	if got, err := s.ReaderIndexes(ctx); err != nil || !slices.Equal(got, []ingestd.Principal{ingestd.Everyone, alice}) {
		t.Fatalf("ReaderIndexes = %v, %v; want * and alice", got, err)
	}
	for i, r := range readers {
		if got := search(r); !slices.Equal(got, before[i]) {
			t.Errorf("%s with reader indexes: %d hits, not the %d found through the whole graph", r.User, len(got), len(before[i]))
		}
	}

	// The planner takes alice's index for her branch once it may not scan.
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	for _, q := range []string{"SET LOCAL enable_seqscan = off", "SET LOCAL enable_bitmapscan = off"} {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	where, args := filterSQL(ingestd.Filter{}, 4, false)
	rows, err := tx.Query(ctx, "EXPLAIN "+vectorSplitSQL(vectorEmbedderSQL, where, 4+len(args), 1),
		append([]any{"[1,1,1,0.5]", 10, "test/4"}, append(args, []string{string(alice)})...)...)
	if err != nil {
		t.Fatal(err)
	}
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(plan, "\n"); !strings.Contains(p, readerIndexName(alice)) {
		t.Errorf("alice's branch does not use her reader index:\n%s", p)
	}
	tx.Rollback(ctx)

	if err := s.DropReaderIndex(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReaderIndexes(ctx); err != nil || !slices.Equal(got, []ingestd.Principal{ingestd.Everyone}) {
		t.Fatalf("ReaderIndexes after the drop = %v, %v; want *", got, err)
	}
	if got := search(readers[0]); !slices.Equal(got, before[0]) {
		t.Errorf("alice after her index was dropped: %d hits, not %d", len(got), len(before[0]))
	}
}
