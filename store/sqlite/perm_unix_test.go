//go:build unix

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/storetest"
)

func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got&^want != 0 {
		t.Errorf("%s has mode %v, want %v at most", path, got, want)
	}
}

// TestFilesArePrivateWhateverTheUmask: with umask 0, the database, its
// write-ahead log and shared memory, the index snapshot beside it, a
// backup and a restored database are their owner's alone.
func TestFilesArePrivateWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "ingestd.db")
	s, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := storetest.Doc("support", "m1", ingestd.TierUntrustedExternal, "m1")
	storetest.MustPut(t, s, d, storetest.Chunks(d, 0, "please wire the money"), nil)
	if err := s.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	d2 := storetest.Doc("support", "m2", ingestd.TierUntrustedExternal, "m2")
	storetest.MustPut(t, s, d2, storetest.Chunks(d2, 0, "and more"), nil)
	if _, err := s.SearchText(ctx, "money", ingestd.Filter{}, 1); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		wantMode(t, p, 0o600)
	}
	backup := filepath.Join(dir, "b.db")
	if _, err := Backup(ctx, path, backup); err != nil {
		t.Fatal(err)
	}
	wantMode(t, backup, 0o600)
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantMode(t, s.snapshotPath(), 0o600)

	restored := filepath.Join(dir, "new", "ingestd.db")
	if _, err := Restore(ctx, backup, restored, testRestore); err != nil {
		t.Fatal(err)
	}
	wantMode(t, filepath.Dir(restored), 0o700)
	wantMode(t, restored, 0o600)
}
