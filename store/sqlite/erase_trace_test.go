package sqlite

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/storetest"
)

// canary is a word no other document holds (the porter stemmer leaves it
// as it is, so the text index's dictionary would hold it verbatim).
const canary = "qzvcanaryxqzv"

// putCanary writes a document whose title, text and external id hold the
// canary, and a few others beside it; it returns the canary document.
func putCanary(t *testing.T, s *Store) *ingestd.Document {
	t.Helper()
	snapshotFixture(t, s, 0, 30)
	d := storetest.Doc("a", canary+".md", ingestd.TierTrustedInternal, "canary")
	d.Title = "the " + canary + " report"
	storetest.MustPut(t, s, d, storetest.Chunks(d, 3, "alpha "+canary+" beta", "the second part names "+canary+" too"), nil)
	return d
}

// traces lists the files beside path (the database, its write-ahead log,
// the index snapshot and any temporary snapshot) that hold the canary.
func traces(t *testing.T, path string) []string {
	t.Helper()
	files, err := filepath.Glob(path + "*")
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(canary)) {
			found = append(found, filepath.Base(f))
		}
	}
	return found
}

// mustSearchNone fails unless a text search for the canary finds nothing.
func mustSearchNone(t *testing.T, s *Store) {
	t.Helper()
	hits, err := s.SearchText(context.Background(), canary, ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Errorf("search for the erased word: %v, want nothing", hits)
	}
}

// TestEraseLeavesNoTrace erases a document and reads the raw bytes of every
// file of the store: the database, its write-ahead log and the index
// snapshot must not hold the erased text anywhere, whether the erasing
// process held the in-memory indexes, did not, or another process that
// holds them closes (and saves its snapshot) after the erasure.
func TestEraseLeavesNoTrace(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		// erase erases doc from the file at path, written by s (loaded,
		// with a snapshot of the canary written), and closes what it
		// opened.
		erase func(t *testing.T, s *Store, doc *ingestd.Document)
	}{
		{"by the process holding the indexes", func(t *testing.T, s *Store, doc *ingestd.Document) {
			mustErase(t, s, doc)
			mustSearchNone(t, s)
		}},
		{"by a process that never loaded them", func(t *testing.T, s *Store, doc *ingestd.Document) {
			other := mustOpen(t, s.path)
			mustErase(t, other, doc)
			if other.vec.loaded {
				t.Fatal("the erasing store loaded its indexes")
			}
			other.Close(context.Background())
		}},
		{"while another process holds them and then closes", func(t *testing.T, s *Store, doc *ingestd.Document) {
			// s took in a write since its snapshot: its Close saves one,
			// from indexes that still hold the canary.
			snapshotFixture(t, s, 30, 31)
			if err := s.Warm(ctx); err != nil {
				t.Fatal(err)
			}
			if s.vec.snapPending == 0 {
				t.Fatal("no snapshot pending in the store that closes last")
			}
			other := mustOpen(t, s.path)
			mustErase(t, other, doc)
			other.Close(context.Background())
			s.Close(context.Background())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ingestd.db")
			s := mustOpen(t, path)
			doc := putCanary(t, s)
			if err := s.Warm(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.Optimize(ctx); err != nil { // writes the snapshot
				t.Fatal(err)
			}
			if got := traces(t, path); len(got) == 0 {
				t.Fatal("no file holds the canary before the erasure: the test would prove nothing")
			}
			if b, err := os.ReadFile(path + ".index"); err != nil || !bytes.Contains(b, []byte(canary)) {
				t.Fatalf("the snapshot does not hold the canary before the erasure (%v)", err)
			}

			tt.erase(t, s, doc)
			if got := traces(t, path); len(got) > 0 {
				t.Errorf("after the erasure the canary is in %v", got)
			}

			// A process opening the file afterwards finds nothing either,
			// and the snapshot it leaves holds nothing of it.
			s.Close(context.Background())
			next := mustOpen(t, path)
			mustSearchNone(t, next)
			if hits, err := next.SearchText(ctx, "alpha", ingestd.Filter{}, 100); err != nil || len(hits) < 30 {
				t.Errorf("search for the other documents: %d hits, %v; want 30 or more", len(hits), err)
			}
			next.Close(context.Background())
			if got := traces(t, path); len(got) > 0 {
				t.Errorf("after the next process closed, the canary is in %v", got)
			}
		})
	}
}

func mustErase(t *testing.T, s *Store, doc *ingestd.Document) {
	t.Helper()
	n, err := s.Erase(context.Background(), ingestd.Erasure{DocumentIDs: []string{doc.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if n.Documents != 1 || n.Chunks != 2 {
		t.Fatalf("erased %+v, want 1 document and 2 chunks", n)
	}
}
