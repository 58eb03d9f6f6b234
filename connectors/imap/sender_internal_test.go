package imap

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/mail"
)

// TestMessageItemsReportSenderFacts: with the installation's boundary
// authserv-id, the message's item reports what it verified; its
// attached message's item never does (its header is its forwarder's
// claim), and without an authserv-id nothing is reported.
func TestMessageItemsReportSenderFacts(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "internal", "mail", "testdata", "sender", "attached-message.eml"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := mail.Parse(raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := fetched{mailbox: "INBOX", uidvalidity: 1, uid: 7, raw: raw}
	items, _, err := messageItems(t.Context(), "support", f, m, "<fwd-att@example.com>", nil, mail.AttachmentOptions{}, "mx.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 {
		t.Fatalf("%d items, want the message and its attached message", len(items))
	}
	if got := items[0].Meta[ingestd.MetaSenderVerifiedDomain]; got != "example.com" {
		t.Errorf("message: verified %q", got)
	}
	if got := items[0].Meta[ingestd.MetaDerivedContent]; got != "attached_message" {
		t.Errorf("message: derived %q", got)
	}
	for _, k := range []string{ingestd.MetaSenderVerifiedDomain, ingestd.MetaSenderVerifiedBy} {
		if v, ok := items[1].Meta[k]; ok {
			t.Errorf("attached message carries %s=%q", k, v)
		}
	}
	items, _, err = messageItems(t.Context(), "support", f, m, "<fwd-att@example.com>", nil, mail.AttachmentOptions{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := items[0].Meta[ingestd.MetaSenderVerifiedDomain]; ok {
		t.Error("facts reported without verified_senders")
	}
}
