package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestQuickstartCopyLeavesDataBehind: a quickstart that has been served
// in the tree (its git-ignored data/ holds a store, an erasure key and
// NATS files) is copied for a test without them, so the two README
// commands work in either order: every test builds its own data_dir.
func TestQuickstartCopyLeavesDataBehind(t *testing.T) {
	src := t.TempDir()
	for name, body := range map[string]string{
		"ingestd.yaml":           "data_dir: ./data\n",
		"handbook/a.md":          "# A\n",
		"support-inbox/1.eml":    "Subject: hi\n\nhello\n",
		"data/ingestd.db":        "not empty",
		"data/erasure.key":       "0123",
		"data/nats/jetstream/x":  "x",
		"data/spool/upload.part": "x",
		"notes-from-a-user.txt":  "x",
	} {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dst := t.TempDir()
	if err := copyQuickstart(dst, src); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ingestd.yaml", "handbook/a.md", "support-inbox/1.eml"} {
		if _, err := os.Stat(filepath.Join(dst, filepath.FromSlash(name))); err != nil {
			t.Errorf("the corpus file %s was not copied: %v", name, err)
		}
	}
	for _, name := range []string{"data", "notes-from-a-user.txt"} {
		if _, err := os.Stat(filepath.Join(dst, name)); !os.IsNotExist(err) {
			t.Errorf("%s was copied (err %v): a served quickstart's state would reach the test", name, err)
		}
	}
}
