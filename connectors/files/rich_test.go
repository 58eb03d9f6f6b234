package files_test

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/extract"
)

func mustReadRich(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rich", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// locators are the locators of an item's sections, in order.
func locators(it ingestd.Item) []string {
	var out []string
	for _, s := range it.Sections {
		out = append(out, s.Locator)
	}
	return out
}

// TestSync_RichDocuments: PDF, DOCX and ODT files are read by default,
// through the root like every file, into sections with their pages or
// heading paths; an .eml's PDF attachment becomes a child the same way; a
// file that cannot be read — encrypted, not what its name says, over
// extract.max_pages — is failed naming why, and the pass goes on.
func TestSync_RichDocuments(t *testing.T) {
	root := t.TempDir()
	pdf := mustReadRich(t, "handbook.pdf")
	mustWrite(t, root, "docs/handbook.pdf", pdf)
	mustWrite(t, root, "docs/notes.odt", mustReadRich(t, "notes.odt"))
	mustWrite(t, root, "docs/secret.pdf", mustReadRich(t, "encrypted-password.pdf"))
	mustWrite(t, root, "docs/fake.docx", []byte("just text with a .docx name"))
	mustWrite(t, root, "readme.md", []byte("# Readme\n\nPlain text stays as it was."))
	mustWrite(t, root, "mail/invoice.eml", []byte("From: Dana <dana@example.net>\r\nSubject: Handbook\r\nMessage-ID: <h@example.net>\r\n"+
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\nAttached.\r\n"+
		"--B\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=handbook.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n"+
		base64.StdEncoding.EncodeToString(pdf)+"\r\n--B--\r\n"))

	rec := MustSync(t, MustSource(t, "h", "root: "+quote(root)))
	rec.MustTotalSeen(t)
	if !rec.Completed() {
		t.Error("pass not complete")
	}
	items := rec.Items()
	h, ok := items["docs/handbook.pdf"]
	if !ok {
		t.Fatalf("handbook.pdf not stored; items %q, failed %v", rec.PutIDs(), rec.Fails())
	}
	if got := locators(h); !slices.Equal(got, []string{"p. 1", "p. 2", "p. 3"}) {
		t.Errorf("handbook.pdf locators %q", got)
	}
	if h.Text != "" || h.Format != ingestd.FormatMarkdown || h.Title != "Support Handbook" || h.Author != "Erika Mustermann" ||
		h.ItemKind != "file" || h.Meta["format"] != "pdf" || h.Meta["pages"] != "3" || h.Meta["path"] != "docs/handbook.pdf" {
		t.Errorf("handbook.pdf = %+v", h)
	}
	if n := items["docs/notes.odt"]; len(n.Sections) == 0 || n.Meta["format"] != "odt" {
		t.Errorf("notes.odt = %+v", n)
	}
	att, ok := items["mail/invoice.eml#attachment/1/handbook.pdf"]
	if !ok || att.ParentExternalID != "mail/invoice.eml" || !slices.Equal(locators(att), []string{"p. 1", "p. 2", "p. 3"}) {
		t.Errorf("the .eml's PDF attachment = %+v (ok %v)", att, ok)
	}
	if r := items["readme.md"]; r.Text == "" || len(r.Sections) != 0 {
		t.Errorf("readme.md = %+v: Markdown is text, as before", r)
	}

	fails := rec.Fails()
	if err := fails["docs/secret.pdf"]; !errors.Is(err, extract.ErrEncrypted) {
		t.Errorf("secret.pdf: %v, want the encrypted error", err)
	}
	if err := fails["docs/fake.docx"]; ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), "not a DOCX document") {
		t.Errorf("fake.docx: %v, want EINVALID naming it not a DOCX", err)
	}
	if len(fails) != 2 {
		t.Errorf("failed %v, want secret.pdf and fake.docx", fails)
	}

	// Limits from the installation's extract: block.
	rec = MustSync(t, MustSource(t, "h", "root: "+quote(root)+"\nextract: {max_pages: 2}"))
	if err := rec.Fails()["docs/handbook.pdf"]; err == nil || !strings.Contains(err.Error(), "MaxPages") {
		t.Errorf("max_pages 2: handbook.pdf failed with %v, want the MaxPages limit", err)
	}
	if _, ok := rec.Items()["docs/handbook.pdf"]; ok {
		t.Error("a PDF over max_pages was stored")
	}

	// An include list that names only some kinds leaves PDFs out.
	rec = MustSync(t, MustSource(t, "h", "root: "+quote(root)+"\ninclude: [\"**/*.md\"]"))
	if got := fileIDs(rec); !slices.Equal(got, []string{"readme.md"}) {
		t.Errorf("include **/*.md read %q", got)
	}

	if _, err := newSource("h", "root: "+quote(root)+"\nextract: {timeout: -1s}"); err == nil || !strings.Contains(err.Error(), "files.extract.timeout") {
		t.Errorf("a negative extract.timeout: %v", err)
	}
}
