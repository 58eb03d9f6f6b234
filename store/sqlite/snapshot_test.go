package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/storetest"
)

// snapshotFixture writes documents with text and vectors along a few axes.
func snapshotFixture(t *testing.T, s *Store, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		d := storetest.Doc([]string{"a", "b", "c"}[i%3], fmt.Sprintf("%d.md", i), []ingestd.Tier{ingestd.TierTrustedInternal, ingestd.TierUntrustedExternal, ""}[i%3], fmt.Sprint(i))
		d.Title = fmt.Sprintf("title %d", i%7)
		storetest.MustPut(t, s, d, storetest.Chunks(d, i%5, fmt.Sprintf("alpha beta %d", i), fmt.Sprintf("gamma %d delta", i%11)), nil)
	}
}

// answers is what a store answers to a fixed set of searches.
func answers(t *testing.T, s *Store) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, f := range []ingestd.Filter{{}, {Installations: []string{"b"}}, {Statuses: []ingestd.Status{ingestd.StatusRejected}}} {
		for _, q := range []string{"alpha", "gamma 3", "title delta"} {
			hits, err := s.SearchText(ctx, q, f, 20)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "text %q %v: %v\n", q, f, hits)
		}
		for axis := range 5 {
			hits, err := s.SearchVector(ctx, storetest.Axis(axis), f, 20)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "vector %d %v: %v\n", axis, f, hits)
		}
	}
	facts, err := s.TierFacts(ctx, []string{ingestd.DocumentID("a", "0.md"), ingestd.DocumentID("b", "1.md")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "facts: %v\n", facts)
	return b.String()
}

// reference answers from a store that loads the file of s from its rows,
// ignoring any snapshot (once s has written its own).
func reference(t *testing.T, s0 *Store) string {
	t.Helper()
	s0.vec.snapWG.Wait()
	path := s0.path
	os.Rename(path+".index", path+".index.aside")
	defer os.Rename(path+".index.aside", path+".index")
	s := mustOpen(t, path)
	defer s.Close(context.Background())
	got := answers(t, s)
	if s.vec.fromSnap {
		t.Fatal("reference store loaded a snapshot")
	}
	holdSnapshots(s.vec) // write no snapshot at Close
	return got
}

func TestSnapshotLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, path)
	snapshotFixture(t, s, 0, 60)
	ctx := context.Background()
	if err := s.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	if s.vec.fromSnap {
		t.Fatal("first load came from a snapshot")
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".index"); err != nil {
		t.Fatalf("no snapshot after Close: %v", err)
	}

	// Reopened: the snapshot is used and answers as the rows do.
	s = mustOpen(t, path)
	got := answers(t, s)
	if !s.vec.fromSnap {
		t.Fatal("reopened store did not load the snapshot")
	}
	if want := reference(t, s); got != want {
		t.Fatalf("from the snapshot:\n%s\nfrom the rows:\n%s", got, want)
	}

	// Another process writes after the snapshot: the next load catches up.
	holdSnapshots(s.vec) // keep the old snapshot
	s.Close(context.Background())
	w := mustOpen(t, path)
	snapshotFixture(t, w, 60, 90)
	if err := w.DeleteDocument(ctx, ingestd.DocumentID("a", "3.md")); err != nil {
		t.Fatal(err)
	}
	if err := w.SetStatus(ctx, ingestd.DocumentID("b", "4.md"), ingestd.StatusRejected); err != nil {
		t.Fatal(err)
	}
	d := storetest.Doc("c", "5.md", "", "5b") // replaced chunks
	storetest.MustPut(t, w, d, storetest.Chunks(d, 2, "alpha replaced"), nil)
	w.Close(context.Background())
	s = mustOpen(t, path)
	got = answers(t, s)
	if !s.vec.fromSnap {
		t.Fatal("store did not load the older snapshot")
	}
	if want := reference(t, s); got != want {
		t.Fatalf("from the caught-up snapshot:\n%s\nfrom the rows:\n%s", got, want)
	}
	s.Close(context.Background())
}

// A snapshot that does not fit the file is not used; the rows are loaded
// and answer the same.
// TestCloseWithEndedContextSkipsTheSnapshot: a Close whose context has
// ended releases the store without writing the index snapshot (a cache
// of the rows), and the next open loads from the rows.
func TestCloseWithEndedContextSkipsTheSnapshot(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, path)
	snapshotFixture(t, s, 0, 40)
	if err := s.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	holdSnapshots(s.vec) // the first load's snapshot is written
	if err := os.Remove(path + ".index"); err != nil {
		t.Fatal(err)
	}
	s.vec.syncMu.Lock()
	s.vec.snapPending = 1 // a snapshot is due at Close
	s.vec.syncMu.Unlock()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Close(ended); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".index"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("snapshot after a Close with an ended context: %v, want none", err)
	}

	s = mustOpen(t, path)
	got := answers(t, s)
	if s.vec.fromSnap {
		t.Fatal("reopened store loaded a snapshot")
	}
	if want := reference(t, s); got != want {
		t.Fatalf("after reopening:\n%s\nfrom the rows:\n%s", got, want)
	}
	s.Close(ctx)
}

func TestSnapshotRefused(t *testing.T) {
	ctx := context.Background()
	// setup returns a file with a snapshot written at 40 documents and
	// 20 more documents written after it.
	setup := func(t *testing.T) string {
		path := filepath.Join(t.TempDir(), "db")
		s := mustOpen(t, path)
		snapshotFixture(t, s, 0, 40)
		if err := s.Warm(ctx); err != nil {
			t.Fatal(err)
		}
		s.Close(context.Background())
		s = mustOpen(t, path)
		holdSnapshots(s.vec)
		snapshotFixture(t, s, 40, 60)
		s.Close(context.Background())
		return path
	}
	tests := []struct {
		name  string
		spoil func(t *testing.T, path string)
	}{
		{"corrupt", func(t *testing.T, path string) {
			b, err := os.ReadFile(path + ".index")
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0x10
			os.WriteFile(path+".index", b, 0o600)
		}},
		{"truncated", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path + ".index")
			os.WriteFile(path+".index", b[:len(b)-10], 0o600)
		}},
		{"another store's", func(t *testing.T, path string) {
			other := filepath.Join(t.TempDir(), "other")
			o := mustOpen(t, other)
			snapshotFixture(t, o, 100, 160) // as many chunks, other documents
			o.Warm(ctx)
			o.Close(context.Background())
			b, _ := os.ReadFile(other + ".index")
			os.WriteFile(path+".index", b, 0o600)
		}},
		{"changes pruned past it", func(t *testing.T, path string) {
			s := mustOpen(t, path)
			holdSnapshots(s.vec)
			if err := s.DeleteDocument(ctx, ingestd.DocumentID("a", "0.md")); err != nil {
				t.Fatal(err)
			}
			s.keepChanges = 0
			if err := s.writeTx(ctx, func(tx *sql.Tx) error { return s.pruneChanges(ctx, tx) }); err != nil {
				t.Fatal(err)
			}
			s.Close(context.Background())
		}},
		{"file older than the snapshot", func(t *testing.T, path string) {
			s := mustOpen(t, path)
			holdSnapshots(s.vec)
			if _, err := s.write.Exec("UPDATE sqlite_sequence SET seq = 1 WHERE name = 'chunks'"); err != nil {
				t.Fatal(err)
			}
			s.Close(context.Background())
		}},
		{"rows it cannot catch up with", func(t *testing.T, path string) {
			// A chunk removed without a trace in the changes log.
			s := mustOpen(t, path)
			holdSnapshots(s.vec)
			if _, err := s.write.Exec(`DROP TRIGGER chunks_ad; DELETE FROM chunks WHERE seq = 3;
				CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN INSERT INTO changes (chunk_seq) VALUES (old.seq); END`); err != nil {
				t.Fatal(err)
			}
			s.Close(context.Background())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := setup(t)
			tt.spoil(t, path)
			s := mustOpen(t, path)
			defer s.Close(context.Background())
			got := answers(t, s)
			if s.vec.fromSnap {
				t.Fatal("the snapshot was used")
			}
			if want := reference(t, s); got != want {
				t.Fatalf("after refusing the snapshot:\n%s\nfrom the rows:\n%s", got, want)
			}
		})
	}
}
