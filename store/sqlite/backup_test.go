package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/store/sqlite"
	"github.com/ingestd/ingestd/store/storetest"
)

// restoreOptions fence a restored chunk as the pipeline would.
var restoreOptions = sqlite.RestoreOptions{
	Refence: func(d *ingestd.Document, chunks []ingestd.Chunk) {
		for i := range chunks {
			chunks[i].Fenced = firewall.Fence(chunks[i].Text, firewall.Origin{Installation: d.Installation, SourceKind: d.SourceKind, Tier: string(d.Tier)})
		}
	},
	FenceCheck: firewall.Check,
}

// TestBackupWhileWriting backs a database up while another connection
// writes to it, restores the copy elsewhere and opens it: the copy is
// whole, holds a prefix of the writes, and searches.
func TestBackupWhileWriting(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ingestd.db")
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	put := func(i int) error {
		d := storetest.Doc("inst", fmt.Sprintf("doc-%04d.md", i), ingestd.TierTrustedInternal, fmt.Sprint(i))
		_, err := s.PutDocument(context.Background(), d, storetest.Chunks(d, i%8, fmt.Sprintf("walrus number %d", i)), nil)
		return err
	}
	for i := range 50 {
		if err := put(i); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 50; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := put(i); err != nil {
				t.Errorf("write while backing up: %v", err)
				return
			}
		}
	}()
	var backups []string
	for k := range 3 {
		out := filepath.Join(dir, fmt.Sprintf("backup-%d.db", k))
		info, err := sqlite.Backup(context.Background(), path, out)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("Backup while writing: %v", err)
		}
		if info.Documents < 50 || info.SchemaVersion != sqlite.SchemaVersion() {
			t.Errorf("backup %d: %+v, want at least the 50 first documents at schema %d", k, info, sqlite.SchemaVersion())
		}
		backups = append(backups, out)
	}
	close(stop)
	wg.Wait()

	if _, err := sqlite.Backup(context.Background(), path, backups[0]); ingestd.ErrorCode(err) != ingestd.ECONFLICT {
		t.Fatalf("Backup over an existing file: %v, want ECONFLICT", err)
	}
	restored := filepath.Join(t.TempDir(), "data", "ingestd.db")
	info, err := sqlite.Restore(context.Background(), backups[2], restored, restoreOptions)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sqlite.Open(context.Background(), restored, nil)
	if err != nil {
		t.Fatalf("open the restored database: %v", err)
	}
	defer r.Close(context.Background())
	refs, err := r.DocumentRefs(context.Background(), "inst")
	if err != nil || len(refs) != info.Documents {
		t.Fatalf("restored database holds %d documents (%v), its backup %d", len(refs), err, info.Documents)
	}
	if hits, err := r.SearchText(context.Background(), "walrus", ingestd.Filter{}, 1000); err != nil || len(hits) != info.Documents {
		t.Fatalf("SearchText in the restored database = %d hits, %v, want %d", len(hits), err, info.Documents)
	}
}

// TestInspectRefuses: a file that is not a sound ingestd store is
// refused before it could be restored.
func TestInspectRefuses(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte("not a database at all, just some bytes that are long enough"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, path string
		code       string
	}{
		{"missing", filepath.Join(dir, "none.db"), ingestd.ENOTFOUND},
		{"junk", junk, ingestd.EINVALID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := sqlite.Restore(context.Background(), tt.path, filepath.Join(dir, "out.db"), restoreOptions); ingestd.ErrorCode(err) != tt.code {
				t.Fatalf("Restore(%s) = %v, want %s", tt.name, err, tt.code)
			}
			if _, err := os.Stat(filepath.Join(dir, "out.db")); err == nil {
				t.Fatal("a refused restore wrote the database")
			}
		})
	}
}

// TestBackupNeverOverwrites: a backup whose name appeared meanwhile is
// refused, and the file there is left as it was.
func TestBackupNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ingestd.db")
	s, err := sqlite.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close(context.Background())
	out := filepath.Join(dir, "mine.txt")
	if err := os.WriteFile(out, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Backup(context.Background(), path, out); ingestd.ErrorCode(err) != ingestd.ECONFLICT {
		t.Fatalf("Backup over a file: %v, want ECONFLICT", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep me" {
		t.Fatalf("the file was overwritten: %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*partial*")); len(left) != 0 {
		t.Fatalf("a refused backup left %v", left)
	}
}
