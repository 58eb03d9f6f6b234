package mail_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/mail"
)

const base = "From: Bob <bob@example.org>\r\nTo: support@example.com\r\nSubject: Printer\r\n" +
	"Date: Mon, 03 Jun 2024 10:00:00 +0000\r\nMessage-ID: <p@x>\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n\r\nIt is on fire.\r\n"

func TestFingerprint(t *testing.T) {
	for _, tt := range []struct {
		name string
		raw  string
		same bool // as base
	}{
		{"transport fields added", "Return-Path: <b@x>\r\nReceived: from a by b; Mon, 03 Jun 2024 10:00:01 +0000\r\n" +
			"Delivered-To: s@x\r\nDKIM-Signature: v=1; b=abc\r\nX-Spam-Score: 1\r\n" + base, true},
		{"list fields added", "List-Id: <l.x>\r\nSender: l-bounces@x\r\nReply-To: l@x\r\n" + base, true},
		{"mbox From line", "From bob@example.org Mon Jun  3 10:00:00 2024\r\n" + base, true},
		{"LF line ends", strings.ReplaceAll(base, "\r\n", "\n"), true},
		{"folded differently", strings.Replace(base, "Subject: Printer", "Subject:\r\n  Printer", 1), true},
		{"header case", strings.Replace(base, "Subject:", "SUBJECT:", 1), true},
		{"trailing blank lines", base + "\r\n\r\n", true},
		{"another body", strings.Replace(base, "on fire", "on fire!", 1), false},
		{"another subject", strings.Replace(base, "Printer", "[list] Printer", 1), false},
		{"another sender", strings.Replace(base, "bob@example.org", "mallory@example.org", 1), false},
		{"another date", strings.Replace(base, "10:00:00", "10:00:01", 1), false},
		{"another charset", strings.Replace(base, "utf-8", "iso-8859-1", 1), false},
		{"another recipient", strings.Replace(base, "To: support", "To: sales", 1), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := mail.Fingerprint([]byte(tt.raw)) == mail.Fingerprint([]byte(base)); got != tt.same {
				t.Errorf("same fingerprint as the original = %v, want %v", got, tt.same)
			}
		})
	}
	if got := len(mail.Fingerprint([]byte(base))); got != 32 {
		t.Errorf("fingerprint has %d hex digits, want 32", got)
	}
}

func TestAttachmentItemsCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("Subject: many\r\nMessage-ID: <m@x>\r\nContent-Type: multipart/mixed; boundary=Z\r\n\r\n--Z\r\n\r\nbody\r\n")
	for i := range 5 {
		fmt.Fprintf(&b, "--Z\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=b%d.pdf\r\n\r\nxx\r\n", i)
		fmt.Fprintf(&b, "--Z\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=t%d.txt\r\n\r\nt%d\r\n", i, i)
	}
	b.WriteString("--Z--\r\n")
	m, err := mail.Parse([]byte(b.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	parent := ingestd.Item{ExternalID: "<m@x>", URI: "imap://i/INBOX;uidvalidity=1/;uid=1"}
	att, err := mail.AttachmentItems(t.Context(), parent, m, mail.AttachmentOptions{Max: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range att.Children {
		ids = append(ids, c.ExternalID)
		if c.ParentExternalID != "<m@x>" {
			t.Errorf("%s parent %q", c.ExternalID, c.ParentExternalID)
		}
	}
	if got, want := strings.Join(ids, " "), "<m@x>#attachment/2/t0.txt <m@x>#attachment/4/t1.txt"; got != want {
		t.Errorf("children %q, want %q", got, want)
	}
	if got, want := strings.Join(att.Over, " "), "<m@x>#attachment/6/t2.txt <m@x>#attachment/8/t3.txt <m@x>#attachment/10/t4.txt"; got != want {
		t.Errorf("over %q, want %q", got, want)
	}
	if got, want := att.Defect, "3 of 5 text attachments over max_attachments (2); not ingested"; got != want {
		t.Errorf("defect %q, want %q", got, want)
	}
	if got, want := strings.Join(att.Binary, "; "), "b0.pdf (application/pdf, 2 bytes); b1.pdf (application/pdf, 2 bytes); and 3 more"; got != want {
		t.Errorf("binary %q, want %q", got, want)
	}
	if att, err := mail.AttachmentItems(t.Context(), parent, m, mail.AttachmentOptions{}); err != nil || len(att.Children) != 5 || att.Defect != "" || len(att.Over) != 0 {
		t.Errorf("default cap: %d children, over %q, defect %q", len(att.Children), att.Over, att.Defect)
	}
}

// TestParse_AttachedMessageDepthBounded: forwards of forwards are read to
// a depth, deeper ones are listed without text, and the text does not
// grow with the nesting beyond it.
func TestParse_AttachedMessageDepthBounded(t *testing.T) {
	const n = 40
	inner := "Subject: level 40\r\n\r\ndeepest text\r\n"
	for i := n - 1; i >= 0; i-- {
		inner = fmt.Sprintf("Subject: level %d\r\nContent-Type: multipart/mixed; boundary=L%d\r\n\r\n--L%d\r\n\r\nlevel %d text\r\n--L%d\r\nContent-Type: message/rfc822\r\n\r\n%s\r\n--L%d--\r\n", i, i, i, i, i, inner, i)
	}
	m, err := mail.Parse([]byte(inner), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !containsFragment(m.Defects, "attached messages nested deeper than 8 levels") {
		t.Errorf("Defects = %q, want the attached-message depth limit", m.Defects)
	}
	if len(m.Attachments) != 1 {
		t.Fatalf("%d attachments, want 1", len(m.Attachments))
	}
	text := m.Attachments[0].Text
	if !strings.Contains(text, "level 8 text") || strings.Contains(text, "level 10 text") || strings.Contains(text, "deepest") {
		t.Errorf("attached text reaches the wrong depth:\n%s", text)
	}
}

// TestParse_DefectsBounded: a message with thousands of broken parts
// lists the first defects and counts the rest.
func TestParse_DefectsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("Subject: broken\r\nContent-Type: multipart/mixed; boundary=Z\r\n\r\n")
	for i := range 2000 {
		fmt.Fprintf(&b, "--Z\r\nContent-Type: text/plain; charset=x-unknown-%d\r\nContent-Disposition: attachment; filename=a%d.txt\r\n\r\ntext\r\n", i, i)
	}
	b.WriteString("--Z--\r\n")
	m, err := mail.Parse([]byte(b.String()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(m.Defects); got != 51 {
		t.Errorf("%d defects listed, want 50 and a count of the rest", got)
	}
	if last := m.Defects[len(m.Defects)-1]; last != "1950 more defects not listed" {
		t.Errorf("last defect %q", last)
	}
}
