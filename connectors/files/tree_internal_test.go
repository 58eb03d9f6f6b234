//go:build unix

package files

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ingestd/ingestd/connectors/connectortest"
)

// TestSync_SwappedAfterListing: files listed as regular files inside the
// root and then swapped, before they are read, for a symlink out of the
// root, a FIFO, or a directory swapped for a symlink to a folder outside,
// are refused when read (the check is the open itself, not an earlier
// look), and the FIFO does not block the pass.
func TestSync_SwappedAfterListing(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	for p, body := range map[string]string{
		filepath.Join(root, "a.md"):        "# A",
		filepath.Join(root, "b.md"):        "# B",
		filepath.Join(root, "dir", "c.md"): "# C",
		filepath.Join(root, "d.md"):        "# D",
		filepath.Join(out, "secret.md"):    "SECRET",
		filepath.Join(out, "c.md"):         "SECRET",
	} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err := NewSource("h", Config{Root: root}, nil)
	if err != nil {
		t.Fatal(err)
	}
	src.listed = func() {
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.Remove(filepath.Join(root, "a.md")))
		must(os.Symlink(filepath.Join(out, "secret.md"), filepath.Join(root, "a.md")))
		must(os.Remove(filepath.Join(root, "b.md")))
		must(syscall.Mkfifo(filepath.Join(root, "b.md"), 0o644))
		must(os.RemoveAll(filepath.Join(root, "dir")))
		must(os.Symlink(out, filepath.Join(root, "dir")))
	}
	rec := connectortest.New(nil)
	if err := src.Sync(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	for rel, rule := range map[string]string{"a.md": "outside-root", "b.md": "not-regular", "dir/c.md": "outside-root"} {
		if re, ok := IsRefused(rec.Fails()[rel]); !ok || re.Rule != rule {
			t.Errorf("%s: fail %v, want a refusal by rule %q", rel, rec.Fails()[rel], rule)
		}
	}
	for _, it := range rec.Puts() {
		if strings.Contains(it.Text, "SECRET") {
			t.Errorf("%s holds text from outside the root", it.ExternalID)
		}
	}
	if got := rec.PutIDs(); len(got) != 1 || got[0] != "d.md" {
		t.Errorf("put %v, want only d.md", got)
	}
}
