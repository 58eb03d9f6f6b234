package files_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mustWrite writes a file under root.
func mustWrite(tb testing.TB, root, rel string, data []byte) {
	tb.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}

// eml is a message with n tiny text attachments.
func eml(id, body string, n int) []byte {
	var b strings.Builder
	b.WriteString("From: Mallory <m@example.net>\r\nTo: support@example.com\r\nSubject: logs\r\n" +
		"Date: Tue, 04 Jun 2024 09:00:00 +0000\r\nMessage-ID: <" + id + ">\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=ZZ\r\n\r\n" +
		"--ZZ\r\nContent-Type: text/plain\r\n\r\n" + body + "\r\n")
	for i := range n {
		fmt.Fprintf(&b, "--ZZ\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=a%d.txt\r\n\r\nline %d\r\n", i, i)
	}
	b.WriteString("--ZZ--\r\n")
	return []byte(b.String())
}

// TestSync_EmlAttachmentCap: an .eml with 10,000 attachments makes at
// most max_attachments child documents; the rest are skipped and counted
// on the message. Before, it made 10,001 documents.
func TestSync_EmlAttachmentCap(t *testing.T) {
	const n = 10_000
	root := t.TempDir()
	mustWrite(t, root, "flood.eml", eml("flood@x", "see attached", n))
	mustWrite(t, root, "few.eml", eml("few@x", "see attached", 3))
	for _, tt := range []struct {
		name  string
		block string
		max   int
	}{
		{name: "default", block: "", max: 100},
		{name: "configured", block: "\nmax_attachments: 2", max: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := MustSync(t, MustSource(t, "h", "root: "+quote(root)+tt.block))
			rec.MustTotalSeen(t)
			children := 0
			for _, it := range rec.Puts() {
				if it.ParentExternalID == "flood.eml" {
					children++
				}
			}
			if children != tt.max {
				t.Errorf("%d children of flood.eml, want %d", children, tt.max)
			}
			over := n - tt.max + max(3-tt.max, 0)
			if got := rec.SkipCount("over max_attachments"); got != over {
				t.Errorf("%d skipped over max_attachments, want %d", got, over)
			}
			flood := rec.MustPut(t, "flood.eml")
			if want := fmt.Sprintf("%d of %d text attachments over max_attachments (%d)", n-tt.max, n, tt.max); !strings.Contains(flood.Meta["defects"], want) {
				t.Errorf("defects %q, want %q", flood.Meta["defects"], want)
			}
		})
	}
	if _, err := newSource("h", "root: "+quote(root)+"\nmax_attachments: -1"); err == nil || !strings.Contains(err.Error(), "files.max_attachments") {
		t.Errorf("negative max_attachments: %v, want an error naming the key", err)
	}
}

// TestSync_EmlIdentityIsThePath: two files holding different messages
// with one Message-ID are two documents, as are two copies of one
// message: a file's identity is its path.
func TestSync_EmlIdentityIsThePath(t *testing.T) {
	root := t.TempDir()
	mustWrite(t, root, "a.eml", eml("same@x", "first", 0))
	mustWrite(t, root, "b.eml", eml("same@x", "second", 0))
	mustWrite(t, root, "copy/a.eml", eml("same@x", "first", 0))
	rec := MustSync(t, MustSource(t, "h", "root: "+quote(root)))
	for _, tt := range []struct{ id, text string }{{"a.eml", "first"}, {"b.eml", "second"}, {"copy/a.eml", "first"}} {
		if got := rec.MustPut(t, tt.id).Text; got != tt.text {
			t.Errorf("%s text %q, want %q", tt.id, got, tt.text)
		}
	}
}
