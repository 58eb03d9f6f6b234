package sqlite_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
	"github.com/ingestd/ingestd/store/storetest"
)

// TestEraseLeavesNoBytes erases one document among many written one by
// one (so the full-text index holds it in a segment of its own) and then
// reads the database file, its write-ahead log and the index snapshot
// beside it as raw bytes: the erased text is in none of them. A second
// Store on the same file, as another process opens it, had the document
// in its in-memory index and stops serving it at its next search.
// Without the merge of the full-text index the erased word stays in the
// file, in the index's old segments. The canary is lower-case letters
// only: the index keeps a word with a digit as its first and last three
// characters, which a scan for the whole word misses.
func TestEraseLeavesNoBytes(t *testing.T) {
	const canary = "zqcanarystorewx"
	path := filepath.Join(t.TempDir(), "ingestd.db")
	s := sqlitetest.MustOpenPath(t, path, nil)
	other := sqlitetest.MustOpenPath(t, path, nil)
	var gone *ingestd.Document
	for i := range 40 {
		d := storetest.Doc("inst", fmt.Sprintf("d%d.md", i), ingestd.TierUntrustedExternal, fmt.Sprint(i))
		text := fmt.Sprintf("ordinary word%d text", i)
		if i == 20 {
			d.Title = "about " + canary
			text = "keep " + canary + " private"
			gone = d
		}
		storetest.MustPut(t, s, d, storetest.Chunks(d, i%3, text), nil)
	}
	// The snapshot an index persisted before the erasure holds it too.
	if err := os.WriteFile(path+".index", []byte("snapshot "+canary), 0o600); err != nil {
		t.Fatal(err)
	}
	search := func(st interface {
		SearchText(context.Context, string, ingestd.Filter, int) ([]ingestd.Hit, error)
	}) int {
		t.Helper()
		hits, err := st.SearchText(context.Background(), canary, ingestd.Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	if got := search(other); got != 1 {
		t.Fatalf("the other store finds the canary %d times before the erasure, want 1", got)
	}
	holding := func() []string {
		var found []string
		for _, p := range []string{path, path + "-wal", path + "-shm", path + ".index"} {
			b, err := os.ReadFile(p)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(canary)) {
				found = append(found, filepath.Base(p))
			}
		}
		return found
	}
	if len(holding()) == 0 {
		t.Fatal("no file holds the canary before the erasure: the scan cannot see it")
	}

	n, err := s.Erase(context.Background(), ingestd.Erasure{DocumentIDs: []string{gone.ID}})
	if err != nil || n.Documents != 1 {
		t.Fatalf("Erase = %+v, %v", n, err)
	}
	if found := holding(); len(found) > 0 {
		t.Errorf("after the erasure the canary is still in %v", found)
	}
	if got := search(other); got != 0 {
		t.Errorf("the other store still serves the erased document (%d hits)", got)
	}
	if got := search(s); got != 0 {
		t.Errorf("the erasing store still serves the erased document (%d hits)", got)
	}
}
