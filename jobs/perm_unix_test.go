//go:build unix

package jobs

import (
	"context"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
)

// TestEmbeddedStoreIsPrivate: with umask 0, the embedded server's storage
// folder and the files JetStream keeps a queued job in are their owner's
// alone.
func TestEmbeddedStoreIsPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data", "nats")
	e, err := StartEmbedded(EmbeddedOptions{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	q := MustQueue(t, e, nil)
	if err := q.Publish(context.Background(), itemJob("handbook", "a.md", "hello"), "m1"); err != nil {
		t.Fatal(err)
	}
	e.Shutdown()
	files := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if got := info.Mode().Perm(); got&^want != 0 {
			t.Errorf("%s has mode %v, want %v at most", p, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("JetStream wrote no file")
	}
}
