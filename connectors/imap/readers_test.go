package imap_test

import (
	"testing"

	"github.com/ingestd/ingestd"
	imapconn "github.com/ingestd/ingestd/connectors/imap"
)

// TestSync_OwnerReadsEveryMessage: every item a pass puts, attachments
// included, is readable by the mailbox's owner (the login), completed
// with reader_domain when the login has no @.
func TestSync_OwnerReadsEveryMessage(t *testing.T) {
	ts := MustServer(t)
	ts.MustAppend(t, "INBOX", day, msg("m1@example.com", "Printer on fire", "It is on fire."), withAttachment("m3@example.com"))
	p := newPass()
	MustSync(t, MustSource(t, ts.Addr, nil), p)
	want := ingestd.ReadersOf("user:alice@example.com")
	if len(p.Items()) < 3 {
		t.Fatalf("%d items, want the mails and an attachment", len(p.Items()))
	}
	for id, it := range p.Items() {
		if it.Readers == nil || !it.Readers.Equal(want) {
			t.Errorf("%s: readers %+v, want the owner", id, it.Readers)
		}
	}
	for _, tt := range []struct {
		login, domain string
		want          ingestd.Readers
	}{
		{"support", "example.com", ingestd.ReadersOf("user:support@example.com")},
		{"support", "", ingestd.ReadersOf("user:support")},
		{"bob@example.org", "example.com", ingestd.ReadersOf("user:bob@example.org")},
		{"a b", "", ingestd.Readers{}}, // no principal: unmapped
	} {
		src := MustSource(t, ts.Addr, func(c *imapconn.Config) { c.Username, c.ReaderDomain = tt.login, tt.domain })
		if got := src.Readers(); !got.Equal(tt.want) || got.Mapped != tt.want.Mapped {
			t.Errorf("login %q domain %q: readers %+v, want %+v", tt.login, tt.domain, got, tt.want)
		}
	}
}
