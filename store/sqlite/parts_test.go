package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd"
)

// A document's vectors follow it between the vector index's parts as its
// status changes in this process (rejected, active again, deleted), and
// every search answers as a load of the same rows from the file does.
func TestVectorPartsFollowStatus(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "db")
	s := mustOpen(t, path)
	snapshotFixture(t, s, 0, 60)
	if err := s.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	holdSnapshots(s.vec) // the reference must load the rows, not a snapshot
	a4, b4, c5 := ingestd.DocumentID("b", "4.md"), ingestd.DocumentID("a", "3.md"), ingestd.DocumentID("c", "5.md")
	steps := []struct {
		name string
		do   func() error
	}{
		{"reject two", func() error {
			if err := s.SetStatus(ctx, a4, ingestd.StatusRejected); err != nil {
				return err
			}
			return s.SetStatus(ctx, c5, ingestd.StatusRejected)
		}},
		{"one active again", func() error { return s.SetStatus(ctx, a4, ingestd.StatusActive) }},
		{"a rejected one deleted", func() error { return s.DeleteDocument(ctx, c5) }},
		{"another rejected", func() error { return s.SetStatus(ctx, b4, ingestd.StatusRejected) }},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got, inRejected := partAnswers(t, s, answers(t, s), a4, c5)
		want := reference(t, s)
		s.vec.snapWG.Wait()
		os.Rename(path+".index", path+".index.aside") // r loads the rows
		r := mustOpen(t, path)
		want, wantRejected := partAnswers(t, r, want, a4, c5)
		if r.vec.fromSnap {
			t.Fatal("the store loading the rows loaded a snapshot")
		}
		holdSnapshots(r.vec)
		r.Close(context.Background())
		os.Remove(path + ".index") // r's own
		os.Rename(path+".index.aside", path+".index")
		if got != want {
			t.Fatalf("after %s, the loaded index answers:\n%s\na load from the rows:\n%s", st.name, got, want)
		}
		if inRejected != wantRejected {
			t.Fatalf("after %s: %d vectors in the rejected part, a load from the rows puts %d there", st.name, inRejected, wantRejected)
		}
	}
}

// holdSnapshots waits for a snapshot the store's load may be writing in
// the background, then keeps the changes since from asking for another
// (Close writes one when changes are pending).
func holdSnapshots(v *vectors) {
	v.snapWG.Wait()
	v.syncMu.Lock()
	v.snapPending = 0
	v.syncMu.Unlock()
}

// partAnswers appends to answers, for each of ids, the chunks a vector
// search over active and rejected documents finds of it, and counts the
// vectors in the rejected part.
func partAnswers(t *testing.T, s *Store, answers string, ids ...string) (string, int) {
	t.Helper()
	for _, id := range ids {
		hits, err := s.SearchVector(context.Background(), []float32{1, 1, 1, 1, 1}, ingestd.Filter{Statuses: []ingestd.Status{ingestd.StatusActive, ingestd.StatusRejected}}, 200)
		if err != nil {
			t.Fatal(err)
		}
		answers += id + ":"
		for _, h := range hits {
			if h.DocumentID == id {
				answers += " " + h.ChunkID
			}
		}
		answers += "\n"
	}
	s.vec.mu.RLock()
	defer s.vec.mu.RUnlock()
	rejected := 0
	for _, e := range s.vec.byEmb {
		rejected += e.parts[partRejected].Len()
	}
	return answers, rejected
}
