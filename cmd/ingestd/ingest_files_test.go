//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestIngestFileStaysInRoot: `ingestd ingest PATH` reads only regular
// files inside the installation's root: a symlink out of it (to a file or
// through a directory), a path outside it written in any form, a FIFO and
// a directory are refused with the rule named, nothing is stored, and the
// FIFO does not block the command.
func TestIngestFileStaysInRoot(t *testing.T) {
	cfg := writeConfig(t, `data_dir: ./data
installations:
  - id: hb
    kind: files
    tier: trusted-internal
    files: {root: ./docs}
`)
	dir := filepath.Dir(cfg)
	docs := filepath.Join(dir, "docs")
	secret := filepath.Join(dir, "secret.md")
	mustWrite(t, secret, "TOP SECRET outside the root")
	mustWrite(t, filepath.Join(docs, "ok.md"), "# OK\n\ninside the root")
	mustSymlink(t, "../secret.md", filepath.Join(docs, "link.md"))
	mustSymlink(t, secret, filepath.Join(docs, "abs-link.md"))
	mustSymlink(t, "link.md", filepath.Join(docs, "chain.md"))
	mustSymlink(t, dir, filepath.Join(docs, "up"))
	if err := syscall.Mkfifo(filepath.Join(docs, "fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(docs, "sub.md"), 0o755); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		name, path, want string
	}{
		{name: "relative symlink out", path: filepath.Join(docs, "link.md"), want: "outside the root"},
		{name: "absolute symlink out", path: filepath.Join(docs, "abs-link.md"), want: "outside the root"},
		{name: "symlink chain out", path: filepath.Join(docs, "chain.md"), want: "outside the root"},
		{name: "through a symlinked directory", path: filepath.Join(docs, "up", "secret.md"), want: "outside the root"},
		{name: "absolute path outside", path: secret, want: "outside the root"},
		{name: "dot-dot path", path: docs + "/../secret.md", want: "outside the root"},
		{name: "fifo", path: filepath.Join(docs, "fifo.md"), want: "not a regular file"},
		{name: "directory", path: filepath.Join(docs, "sub.md"), want: "not a regular file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCmd(t, "ingest", tt.path, "--installation", "hb", "--config", cfg)
			if code == 0 || !strings.Contains(errs, "refused") || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want a refusal saying %q", code, out, errs, tt.want)
			}
		})
	}
	t.Run("relative path from inside the root", func(t *testing.T) {
		t.Chdir(docs)
		code, out, errs := runCmd(t, "ingest", "../secret.md", "--installation", "hb", "--config", cfg)
		if code == 0 || !strings.Contains(errs, "outside the root") {
			t.Errorf("exit %d, stdout %q, stderr %q; want a refusal", code, out, errs)
		}
		code, out, errs = runCmd(t, "ingest", "ok.md", "--installation", "hb", "--config", cfg)
		if code != 0 || !strings.Contains(out, "ok.md") {
			t.Errorf("ingest ok.md: exit %d, stdout %q, stderr %q", code, out, errs)
		}
	})

	code, out, errs := runCmd(t, "search", "TOP SECRET outside", "--config", cfg, "--json")
	if code != 0 || strings.Contains(out, "TOP SECRET") {
		t.Errorf("search: exit %d, stderr %q; the secret was stored:\n%s", code, errs, out)
	}
}

// TestIngestFileSymlinkedRoot: a root that is itself a symlink is
// followed (the operator chose it); a file is found by a path through the
// link or through the real folder, and gets the same identity.
func TestIngestFileSymlinkedRoot(t *testing.T) {
	cfg := writeConfig(t, `data_dir: ./data
installations:
  - id: hb
    kind: files
    tier: trusted-internal
    files: {root: ./docs-link}
`)
	dir := filepath.Dir(cfg)
	mustWrite(t, filepath.Join(dir, "docs", "a.md"), "# A\n\nthrough a link")
	mustSymlink(t, "docs", filepath.Join(dir, "docs-link"))
	for _, p := range []string{filepath.Join(dir, "docs-link", "a.md"), filepath.Join(dir, "docs", "a.md")} {
		code, out, errs := runCmd(t, "ingest", p, "--installation", "hb", "--config", cfg)
		if code != 0 || !strings.Contains(out, " a.md (") {
			t.Errorf("ingest %s: exit %d, stdout %q, stderr %q; want a.md ingested", p, code, out, errs)
		}
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
