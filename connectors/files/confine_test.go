//go:build unix

package files_test

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/files"
)

const secret = "TOP SECRET, outside the root"

// MustOutside writes a file holding secret in a folder outside any root
// and returns the folder.
func MustOutside(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "secret.md"), []byte("# Secret\n\n"+secret), 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// mustLink makes link a symlink to target, or skips where symlinks are
// not supported.
func mustLink(tb testing.TB, target, link string) {
	tb.Helper()
	if err := os.Symlink(target, link); err != nil {
		tb.Skipf("symlinks unsupported: %v", err)
	}
}

// wantOutcome checks what a pass did with one file: put, refused by a
// rule, or failed with an error code.
func wantOutcome(t *testing.T, ids []string, fails map[string]error, rel, want string) {
	t.Helper()
	err := fails[rel]
	switch want {
	case "put":
		if !slices.Contains(ids, rel) || err != nil {
			t.Errorf("%q: put %v, fail %v; want it put", rel, slices.Contains(ids, rel), err)
		}
	case "absent":
		if slices.Contains(ids, rel) || err != nil {
			t.Errorf("%q: put %v, fail %v; want it not listed", rel, slices.Contains(ids, rel), err)
		}
	case ingestd.ENOTFOUND, ingestd.ETOOLARGE:
		if slices.Contains(ids, rel) || ingestd.ErrorCode(err) != want {
			t.Errorf("%q: put %v, fail %v; want %s", rel, slices.Contains(ids, rel), err, want)
		}
	default:
		re, ok := files.IsRefused(err)
		if slices.Contains(ids, rel) || !ok || re.Rule != want {
			t.Errorf("%q: put %v, fail %v; want a refusal by rule %q", rel, slices.Contains(ids, rel), err, want)
		}
		if ok && !strings.HasPrefix(err.Error(), "refused: ") {
			t.Errorf("%q: refusal %q does not say so", rel, err)
		}
	}
}

// TestSync_Confined: a pass reads only regular files inside the root.
// Symlinks that leave it (to a file, through a chain, to a directory, to a
// device) or are absolute, FIFOs, sockets, device nodes, names that cannot
// be an identity are refused, each reported with the rule, and the pass
// reads everything else, does not block, and completes.
func TestSync_Confined(t *testing.T) {
	root := MustCopyTree(t, "basic")
	out := MustOutside(t)
	in := func(name string) string { return filepath.Join(root, name) }

	want := map[string]string{
		"handbook.md":         "put",
		"inside-link.md":      "put",
		"chain-in.md":         "put",
		"abs-inside.md":       "outside-root",
		"outside-link.md":     "outside-root",
		"rel-outside.md":      "outside-root",
		"chain-out.md":        "outside-root",
		"dev-link.md":         "outside-root",
		"loop.md":             "symlinks",
		"dangling.md":         ingestd.ENOTFOUND,
		"fifo.md":             "not-regular",
		"sock.md":             "not-regular",
		"new\nline.md":        "file-name",
		"bell\x07.md":         "file-name",
		"latin1-\xe9.md":      "file-name",
		"outdir/secret.md":    "absent",
		"notes-link/front.md": "absent",
	}
	mustLink(t, "handbook.md", in("inside-link.md"))
	mustLink(t, "inside-link.md", in("chain-in.md"))
	mustLink(t, in("handbook.md"), in("abs-inside.md"))
	mustLink(t, filepath.Join(out, "secret.md"), in("outside-link.md"))
	rel, err := filepath.Rel(root, filepath.Join(out, "secret.md"))
	if err != nil {
		t.Fatal(err)
	}
	mustLink(t, rel, in("rel-outside.md"))
	mustLink(t, "rel-outside.md", in("chain-out.md"))
	mustLink(t, "/dev/zero", in("dev-link.md"))
	mustLink(t, "loop.md", in("loop.md"))
	mustLink(t, "nope.md", in("dangling.md"))
	mustLink(t, out, in("outdir"))
	mustLink(t, "notes", in("notes-link"))
	if err := syscall.Mkfifo(in("fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", in("sock.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, name := range []string{"new\nline.md", "bell\x07.md", "latin1-\xe9.md"} {
		if err := os.WriteFile(in(name), []byte("# odd name\n\ntext"), 0o644); err != nil {
			t.Skipf("file system refuses the name %q: %v", name, err)
		}
	}
	huge, err := os.Create(in("huge.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := huge.Truncate(files.DefaultMaxFileBytes + 1); err != nil { // sparse
		t.Fatal(err)
	}
	huge.Close()
	// A device node, where this user may make one (root in CI).
	if err := syscall.Mknod(in("dev.md"), syscall.S_IFCHR|0o644, 1<<8|5 /* makedev(1, 5): /dev/zero */); err == nil {
		want["dev.md"] = "not-regular"
	} else {
		t.Logf("no device node (mknod: %v); that case is not covered here", err)
	}
	// A hard link is a regular file with a second name: it is read
	// (os.Root cannot tell it, see docs/SECURITY.md).
	if err := os.Link(filepath.Join(out, "secret.md"), in("hardlink.md")); err == nil {
		want["hardlink.md"] = "put"
	} else {
		t.Logf("no hard link across %s and %s (%v); that case is not covered here", out, root, err)
	}

	rec := MustSync(t, MustSource(t, "h", "root: "+quote(root)))
	ids, fails := fileIDs(rec), rec.Fails()
	for rel, w := range want {
		wantOutcome(t, ids, fails, rel, w)
	}
	// A file over max_file_bytes is left out by a rule, not a failure:
	// counted as skipped, its stored document kept.
	if slices.Contains(ids, "huge.md") || fails["huge.md"] != nil || !slices.ContainsFunc(rec.Skips(), func(s connectortest.Skip) bool {
		return s.ExternalID == "huge.md" && s.Reason == "over max_file_bytes"
	}) {
		t.Errorf("huge.md: put %v, fail %v, skips %v; want it skipped as over max_file_bytes", slices.Contains(ids, "huge.md"), fails["huge.md"], rec.Skips())
	}
	for _, id := range ids {
		if strings.HasPrefix(id, "outdir/") || strings.HasPrefix(id, "notes-link/") {
			t.Errorf("descended a symlinked directory: %q", id)
		}
		if it := rec.MustPut(t, id); strings.Contains(it.Text, secret) && id != "hardlink.md" {
			t.Errorf("%q holds the secret from outside the root", id)
		}
	}
	for _, id := range []string{"notes/plain.txt", "mail/support.eml", "vendor/lib/readme.md"} {
		if !slices.Contains(ids, id) {
			t.Errorf("the pass lost %q", id)
		}
	}
	if !rec.Completed() {
		t.Error("Complete not called: refusals must not make the listing partial")
	}
}

// TestReadPath_Confined: `ingestd ingest PATH` reads through the root like
// a pass, whatever form the path takes.
func TestReadPath_Confined(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "docs")
	out := MustOutside(t)
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "basic"))); err != nil {
		t.Fatal(err)
	}
	mustLink(t, "docs", filepath.Join(base, "docs-link"))
	mustLink(t, filepath.Join(out, "secret.md"), filepath.Join(root, "outside-link.md"))
	mustLink(t, out, filepath.Join(root, "outdir"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		root     string // configured root; default root
		path     string
		wantID   string
		wantRule string
	}{
		{name: "inside", path: filepath.Join(root, "handbook.md"), wantID: "handbook.md"},
		{name: "dot-dot that stays inside", path: filepath.Join(root, "notes") + "/../handbook.md", wantID: "handbook.md"},
		{name: "symlink out", path: filepath.Join(root, "outside-link.md"), wantRule: "outside-root"},
		{name: "through a symlinked directory", path: filepath.Join(root, "outdir", "secret.md"), wantRule: "outside-root"},
		{name: "absolute outside", path: filepath.Join(out, "secret.md"), wantRule: "outside-root"},
		{name: "dot-dot out", path: root + "/../docs-link/../../" + filepath.Base(filepath.Dir(out)) + "/" + filepath.Base(out) + "/secret.md", wantRule: "outside-root"},
		{name: "the root itself", path: root, wantRule: "not-regular"},
		{name: "a directory", path: filepath.Join(root, "notes"), wantRule: "not-regular"},
		{name: "fifo", path: filepath.Join(root, "fifo.md"), wantRule: "not-regular"},
		{name: "symlinked root, path through the link", root: filepath.Join(base, "docs-link"), path: filepath.Join(base, "docs-link", "handbook.md"), wantID: "handbook.md"},
		{name: "symlinked root, path through the real folder", root: filepath.Join(base, "docs-link"), path: filepath.Join(root, "handbook.md"), wantID: "handbook.md"},
		{name: "symlinked root, symlink out", root: filepath.Join(base, "docs-link"), path: filepath.Join(root, "outside-link.md"), wantRule: "outside-root"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := root
			if tt.root != "" {
				r = tt.root
			}
			src := MustSource(t, "h", "root: "+quote(r)).(*files.Source)
			items, err := src.ReadPath(tt.path)
			if tt.wantRule != "" {
				if re, ok := files.IsRefused(err); !ok || re.Rule != tt.wantRule || len(items) != 0 {
					t.Fatalf("ReadPath = %d items, %v; want a refusal by rule %q", len(items), err, tt.wantRule)
				}
				if got := ingestd.ErrorCode(err); got != ingestd.EINVALID {
					t.Errorf("code %q, want EINVALID", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadPath: %v", err)
			}
			if got := items[0].ExternalID; got != tt.wantID {
				t.Errorf("external id = %q, want %q", got, tt.wantID)
			}
		})
	}
}

// TestReaderConformance runs the ItemReader cases against a files
// installation, as cmd reaches it: through the Reader its kind declares.
func TestReaderConformance(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "docs")
	out := MustOutside(t)
	if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", "basic"))); err != nil {
		t.Fatal(err)
	}
	mustLink(t, filepath.Join(out, "secret.md"), filepath.Join(root, "outside-link.md"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := newConnector("h", "root: "+quote(root))
	if err != nil {
		t.Fatal(err)
	}
	connectortest.RunItemReader(t, c.Reader, connectortest.ReaderCases{
		Inside: []string{filepath.Join(root, "handbook.md"), filepath.Join(root, "mail", "support.eml")},
		Outside: []string{
			filepath.Join(out, "secret.md"),                  // absolute, outside
			root + "/../" + filepath.Base(base) + "/../x.md", // dot-dot out
			filepath.Join(root, "outside-link.md"),           // symlink out
			filepath.Join(root, "fifo.md"),                   // not a regular file
			filepath.Join(root, "notes"),                     // a directory
		},
	})
}
