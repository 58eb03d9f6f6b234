//go:build unix

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// wantPrivate fails unless every file under root (root too) is its
// owner's alone: 0600 at most for a file, 0700 for a folder.
func wantPrivate(t *testing.T, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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
		}
		if got := info.Mode().Perm(); got&^want != 0 {
			t.Errorf("%s has mode %v, want %v at most", p, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFilesArePrivateWhateverTheUmask: with umask 0, every file ingestd
// writes that holds corpus text or keys — data_dir and its database, the
// erasure key, the lock, a backup, an export, a restored database, the
// copy of an import's stdin — is its owner's alone.
func TestFilesArePrivateWhateverTheUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	cfg := mustQuickstart(t)
	mustRun(t, "sync", "handbook", "--config", cfg)
	mustRun(t, "sync", "support", "--config", cfg)
	mustRun(t, "erase", "--installation", "support", "--dry-run", "--config", cfg)
	data := filepath.Join(filepath.Dir(cfg), "data")
	if _, err := os.Stat(filepath.Join(data, erasureKeyFile)); err != nil {
		t.Fatalf("no erasure key was made: %v", err)
	}
	wantPrivate(t, data)

	out := t.TempDir()
	backup, export := filepath.Join(out, "b.db"), filepath.Join(out, "x.ingestd")
	mustRun(t, "backup", "--out", backup, "--config", cfg)
	mustRun(t, "export", "--out", export, "--config", cfg)

	// Restored into a data_dir that does not exist yet, with the
	// original's key beside it.
	into := mustQuickstart(t)
	intoData := filepath.Join(filepath.Dir(into), "data")
	if err := os.Mkdir(intoData, 0o700); err != nil {
		t.Fatal(err)
	}
	key := mustRead(t, filepath.Join(data, erasureKeyFile))
	if err := os.WriteFile(filepath.Join(intoData, erasureKeyFile), key, 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "restore", backup, "--config", into)
	wantPrivate(t, intoData)

	// An import from stdin keeps it in data_dir meanwhile.
	f, err := os.Open(export)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdin := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = stdin }()
	fresh := mustQuickstart(t)
	if out := mustRun(t, "import", "-", "--config", fresh); !strings.HasPrefix(out, "imported") {
		t.Fatalf("import: %s", out)
	}
	wantPrivate(t, filepath.Join(filepath.Dir(fresh), "data"))
	wantPrivate(t, backup)
	wantPrivate(t, export)
}
