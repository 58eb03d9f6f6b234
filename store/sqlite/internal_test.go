package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/storetest"
)

func mustOpen(tb testing.TB, path string) *Store {
	tb.Helper()
	s, err := Open(context.Background(), path, nil)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, path)
	if _, err := s.write.Exec("INSERT INTO schema_version (version) VALUES (?)", SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	s.Close(context.Background())
	_, err := Open(context.Background(), path, nil)
	if got := ingestd.ErrorCode(err); got != ingestd.EINVALID {
		t.Fatalf("Open of a newer schema: %v (code %q), want EINVALID", err, got)
	}
	msg := ingestd.ErrorMessage(err)
	if !strings.Contains(msg, fmt.Sprint(SchemaVersion()+1)) || !strings.Contains(msg, fmt.Sprint(SchemaVersion())) {
		t.Fatalf("message %q does not name both versions", msg)
	}
}

func TestOpenTwiceKeepsVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	mustOpen(t, path).Close(context.Background())
	s := mustOpen(t, path)
	if got, want := versions(t, s.read), versionsUpTo(SchemaVersion()); !slices.Equal(got, want) {
		t.Fatalf("schema_version rows %v, want %v", got, want)
	}
}

// Two stores on one file stand for two processes: what one writes, the
// other's vector index picks up before its next search.
func TestVectorIndexFollowsOtherWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	reader, writer := mustOpen(t, path), mustOpen(t, path)
	ctx := context.Background()
	a := storetest.Doc("inst", "a.md", "", "a")
	ca := storetest.Chunks(a, 0, "a0", "a1")
	storetest.MustPut(t, writer, a, ca, nil)
	search := func(f ingestd.Filter) []string {
		t.Helper()
		hits, err := reader.SearchVector(ctx, storetest.Axis(0), f, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.ChunkID)
		}
		return ids
	}
	want := func(what string, got []string, want ...string) {
		t.Helper()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("%s: hits %v, want %v", what, got, want)
		}
	}
	want("initial load", search(ingestd.Filter{}), ca[0].ID, ca[1].ID)

	b := storetest.Doc("inst", "b.md", "", "b")
	cb := storetest.Chunks(b, 7, "b0") // along axis 7
	storetest.MustPut(t, writer, b, cb, nil)
	if err := writer.SetEmbeddings(ctx, cb[0].EmbedderID, map[string][]float32{cb[0].ID: storetest.Axis(0)}); err != nil {
		t.Fatal(err)
	}
	want("new and re-embedded chunk", search(ingestd.Filter{}), ca[0].ID, cb[0].ID, ca[1].ID)

	if err := writer.SetStatus(ctx, a.ID, ingestd.StatusRejected); err != nil {
		t.Fatal(err)
	}
	want("status change", search(ingestd.Filter{}), cb[0].ID)
	if err := writer.DeleteDocument(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	want("delete", search(ingestd.Filter{Statuses: []ingestd.Status{ingestd.StatusActive, ingestd.StatusRejected}}), ca[0].ID, ca[1].ID)

	// A reader that fell behind a prune reloads in full.
	c := storetest.Doc("inst", "c.md", "", "c")
	cc := storetest.Chunks(c, 0, "c0")
	storetest.MustPut(t, writer, c, cc, nil)
	if err := writer.DeleteDocument(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	writer.keepChanges = 0
	if err := writer.writeTx(ctx, func(tx *sql.Tx) error { return writer.pruneChanges(ctx, tx) }); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := writer.read.QueryRow("SELECT count(*) FROM changes").Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d changes left after pruning all", left)
	}
	want("after prune", search(ingestd.Filter{}), cc[0].ID)
}

func TestQueryTerms(t *testing.T) {
	tests := []struct {
		name, q string
		want    string
	}{
		{"words", "Rotate the DB password", "rotate db password"},
		{"operators are words", `"disk" OR NEAR/3 -full* title:x`, "disk near 3 full title x"},
		{"only stopwords", "the and of", "the and of"},
		{"repeats", "a b a b", "b"},
		{"non-ASCII kept as the tokenizer keeps it", "Grüße Über 東京 naïve—thing", "grüße Über 東京 naïve—thing"},
		{"empty", ` "*" `, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(queryTerms(tt.q), " "); got != tt.want {
				t.Fatalf("queryTerms(%q) = %q, want %q", tt.q, got, tt.want)
			}
		})
	}
}

// Searches run while the same store writes; every search sees a consistent
// index (no error, no hit of a chunk that was never written).
func TestConcurrentSearchAndWrite(t *testing.T) {
	s := mustOpen(t, filepath.Join(t.TempDir(), "db"))
	ctx := context.Background()
	written := map[string]bool{}
	var docs []*ingestd.Document
	var chunks [][]ingestd.Chunk
	for i := range 40 {
		d := storetest.Doc("inst", fmt.Sprintf("%d.md", i), "", fmt.Sprint(i))
		cs := storetest.Chunks(d, i, fmt.Sprintf("concurrent words %d", i), fmt.Sprintf("more words %d", i))
		docs, chunks = append(docs, d), append(chunks, cs)
		for _, c := range cs {
			written[c.ID] = true
		}
	}
	done := make(chan error, 1)
	go func() {
		for i, d := range docs {
			if _, err := s.PutDocument(ctx, d, chunks[i], nil); err != nil {
				done <- err
				return
			}
			if i%3 == 0 {
				if err := s.DeleteDocument(ctx, d.ID); err != nil {
					done <- err
					return
				}
			}
		}
		done <- nil
	}()
	check := func(hits []ingestd.Hit, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if !written[h.ChunkID] {
				t.Fatalf("hit of unknown chunk %s", h.ChunkID)
			}
		}
	}
	for finished := false; !finished; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		check(s.SearchVector(ctx, storetest.Axis(0), ingestd.Filter{}, 5))
		check(s.SearchText(ctx, "concurrent words", ingestd.Filter{}, 5))
	}
	hits, err := s.SearchText(ctx, "concurrent", ingestd.Filter{}, 100)
	check(hits, err)
	if got, want := len(hits), 26; got != want { // 40 written, 14 deleted
		t.Fatalf("%d hits after the writes, want %d", got, want)
	}
}
