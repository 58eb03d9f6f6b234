package private_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd/internal/private"
)

// TestPlaceNew: the file moves to a free path; a taken path is refused
// with os.ErrExist, and both files stay as they were.
func TestPlaceNew(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := private.WriteFile(p, []byte(body)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	tmp, out := write("a.tmp", "new"), filepath.Join(dir, "a")
	if err := private.PlaceNew(tmp, out); err != nil {
		t.Fatalf("PlaceNew to a free path: %v", err)
	}
	if got, want := read(out), "new"; got != want {
		t.Fatalf("placed %q, want %q", got, want)
	}
	if _, err := os.Lstat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("tmp after placing: %v, want it gone", err)
	}

	tmp = write("b.tmp", "newer")
	if err := private.PlaceNew(tmp, out); !errors.Is(err, os.ErrExist) {
		t.Fatalf("PlaceNew to a taken path = %v, want os.ErrExist", err)
	}
	if got, want := read(out), "new"; got != want {
		t.Fatalf("taken path holds %q, want %q", got, want)
	}
	if got, want := read(tmp), "newer"; got != want {
		t.Fatalf("tmp holds %q, want %q", got, want)
	}
}
