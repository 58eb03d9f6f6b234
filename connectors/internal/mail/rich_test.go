package mail_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/extract"
	"github.com/ingestd/ingestd/connectors/internal/mail"
)

// part is one attachment of a test message.
type part struct {
	name, contentType string
	data              []byte
}

// mimeMessage is a multipart/mixed message with a text body and the
// parts as base64 attachments.
func mimeMessage(id, body string, parts ...part) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "From: Dana <dana@example.net>\r\nTo: support@example.com\r\nSubject: Documents\r\nMessage-ID: <%s>\r\n"+
		"Date: Mon, 02 Nov 2026 09:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=B\r\n\r\n"+
		"--B\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n", id, body)
	for _, p := range parts {
		fmt.Fprintf(&b, "--B\r\nContent-Type: %s; name=%q\r\nContent-Disposition: attachment; filename=%q\r\nContent-Transfer-Encoding: base64\r\n\r\n",
			p.contentType, p.name, p.name)
		enc := base64.StdEncoding.EncodeToString(p.data)
		for len(enc) > 76 {
			b.WriteString(enc[:76] + "\r\n")
			enc = enc[76:]
		}
		b.WriteString(enc + "\r\n")
	}
	b.WriteString("--B--\r\n")
	return []byte(b.String())
}

// zipBombDOCX is a DOCX whose document part inflates a thousandfold:
// 4 MiB of one repeated paragraph in a few KiB.
func zipBombDOCX(tb testing.TB) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{
		{"[Content_Types].xml", `<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>`},
		{"word/document.xml", `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>` +
			strings.Repeat("<w:p><w:r><w:t>bomb</w:t></w:r></w:p>", 4<<20/38) + `</w:body></w:document>`},
	} {
		w, err := zw.Create(f.name)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func mustReadRich(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "rich", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestAttachmentItemsReadsDocuments: a PDF and a DOCX attachment become
// children whose sections carry their pages and heading paths; an
// encrypted PDF is a defect of the message, not a failure; a zip bomb is
// a failure named in the message's defects; the text attachment and the
// readable documents are children all the same.
func TestAttachmentItemsReadsDocuments(t *testing.T) {
	raw := mimeMessage("docs@example.net", "Please see the attached documents.",
		part{"handbook.pdf", "application/pdf", mustReadRich(t, "handbook.pdf")},
		part{"secret.pdf", "application/pdf", mustReadRich(t, "encrypted-password.pdf")},
		part{"bomb.docx", extract.MediaTypeDOCX, zipBombDOCX(t)},
		part{"handbook.docx", "application/octet-stream", mustReadRich(t, "handbook.docx")},
		part{"notes.txt", "text/plain", []byte("Call back on Monday.")},
	)
	m, err := mail.Parse(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	parent := ingestd.Item{ExternalID: "<docs@example.net>", URI: "imap://support/INBOX;uidvalidity=1/;uid=9", Author: m.From}
	att, err := mail.AttachmentItems(t.Context(), parent, m, mail.AttachmentOptions{Meta: map[string]string{"mailbox": "INBOX"}})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]ingestd.Item{}
	var ids []string
	for _, c := range att.Children {
		byID[c.ExternalID] = c
		ids = append(ids, c.ExternalID)
	}
	if want := []string{"<docs@example.net>#attachment/1/handbook.pdf", "<docs@example.net>#attachment/4/handbook.docx",
		"<docs@example.net>#attachment/5/notes.txt"}; !slices.Equal(ids, want) {
		t.Fatalf("children %q, want %q", ids, want)
	}

	pdf := byID["<docs@example.net>#attachment/1/handbook.pdf"]
	var locators []string
	for _, s := range pdf.Sections {
		locators = append(locators, s.Locator)
	}
	if !slices.Equal(locators, []string{"p. 1", "p. 2", "p. 3"}) || pdf.Text != "" || pdf.Format != ingestd.FormatMarkdown {
		t.Fatalf("PDF child: locators %q, text %q, format %q", locators, pdf.Text, pdf.Format)
	}
	if !strings.Contains(pdf.Sections[2].Text, "Suspicious messages") {
		t.Errorf("page 3 lacks its heading: %q", pdf.Sections[2].Text)
	}
	if pdf.ParentExternalID != parent.ExternalID || pdf.ItemKind != "attachment" || pdf.Title != "handbook.pdf" ||
		pdf.Meta["format"] != "pdf" || pdf.Meta["pages"] != "3" || pdf.Meta["mailbox"] != "INBOX" || pdf.Author != m.From {
		t.Errorf("PDF child = %+v", pdf)
	}

	docx := byID["<docs@example.net>#attachment/4/handbook.docx"]
	found := false
	for _, s := range docx.Sections {
		found = found || s.Locator == "Support Handbook > Refunds > Steps" && strings.Contains(s.Text, "Press the refund button")
	}
	if !found || docx.Meta["format"] != "docx" {
		t.Errorf("DOCX child (sent as octet-stream): no section \"Support Handbook > Refunds > Steps\" with its steps; meta %v", docx.Meta)
	}

	if len(att.Failed) != 1 || att.Failed[0].ExternalID != "<docs@example.net>#attachment/3/bomb.docx" ||
		ingestd.ErrorCode(att.Failed[0].Err) != ingestd.ETOOLARGE {
		t.Fatalf("failed = %+v, want the zip bomb, over a limit", att.Failed)
	}
	for _, want := range []string{`attachment "secret.pdf": encrypted; not read`, `attachment "bomb.docx": `} {
		if !strings.Contains(att.Defect, want) {
			t.Errorf("defect %q lacks %q", att.Defect, want)
		}
	}
	if got := strings.Join(att.Binary, "; "); !strings.Contains(got, "secret.pdf (application/pdf") || !strings.Contains(got, "bomb.docx (") {
		t.Errorf("binary %q: the unread documents are not listed", got)
	}
}

// TestAttachmentItemsDocumentsCountAgainstTheCap: reading a document costs
// the same whether it can be read or not, so every PDF, DOCX and ODT
// attachment counts against max_attachments.
func TestAttachmentItemsDocumentsCountAgainstTheCap(t *testing.T) {
	raw := mimeMessage("cap@example.net", "Three documents.",
		part{"bad.pdf", "application/pdf", []byte("%PDF-1.4\n")},
		part{"handbook.pdf", "application/pdf", mustReadRich(t, "handbook.pdf")},
		part{"notes.txt", "text/plain", []byte("Call back on Monday.")},
	)
	m, err := mail.Parse(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	att, err := mail.AttachmentItems(t.Context(), ingestd.Item{ExternalID: "<cap@example.net>"}, m, mail.AttachmentOptions{Max: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(att.Failed) != 1 || len(att.Children) != 1 || !slices.Equal(att.Over, []string{"<cap@example.net>#attachment/3/notes.txt"}) {
		t.Fatalf("failed %d, children %d, over %q; want 1, 1 and notes.txt", len(att.Failed), len(att.Children), att.Over)
	}
	if !strings.HasPrefix(att.Defect, "1 of 3 text attachments over max_attachments (2); not ingested; attachment \"bad.pdf\": ") {
		t.Errorf("defect %q", att.Defect)
	}
}

// TestAttachmentItemsLimits: a document over max_attachment_bytes is not
// read (the parser's defect says so); the installation's extract limits
// hold (max_pages); a pass that is stopping stops.
func TestAttachmentItemsLimits(t *testing.T) {
	pdf := mustReadRich(t, "handbook.pdf")
	raw := mimeMessage("big@example.net", "A handbook.", part{"handbook.pdf", "application/pdf", pdf})
	m, err := mail.Parse(raw, &mail.Options{MaxAttachmentBytes: int64(len(pdf) - 1)})
	if err != nil {
		t.Fatal(err)
	}
	if !containsFragment(m.Defects, `attachment "handbook.pdf" is`) {
		t.Errorf("defects %q do not say the attachment was too large", m.Defects)
	}
	att, err := mail.AttachmentItems(t.Context(), ingestd.Item{ExternalID: "<big@example.net>"}, m, mail.AttachmentOptions{})
	if err != nil || len(att.Children)+len(att.Failed) != 0 || len(att.Binary) != 1 {
		t.Fatalf("over max_attachment_bytes: %+v, %v; want it listed and not read", att, err)
	}

	m, err = mail.Parse(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	att, err = mail.AttachmentItems(t.Context(), ingestd.Item{ExternalID: "<big@example.net>"}, m, mail.AttachmentOptions{Extract: extract.Config{MaxPages: 2}})
	if err != nil || len(att.Failed) != 1 || !extract.IsLimit(att.Failed[0].Err, "MaxPages") || !strings.Contains(att.Defect, "MaxPages") {
		t.Fatalf("max_pages 2: %+v, %v; want the 3-page PDF failed over MaxPages", att, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := mail.AttachmentItems(ctx, ingestd.Item{ExternalID: "<big@example.net>"}, m, mail.AttachmentOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: err = %v, want context.Canceled", err)
	}
}
