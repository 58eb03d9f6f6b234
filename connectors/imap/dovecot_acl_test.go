package imap_test

import (
	"slices"
	"testing"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/ingestd/ingestd"
	imapconn "github.com/ingestd/ingestd/connectors/imap"
)

// TestDovecot_ACLReaders: on a Dovecot with the acl plugin, a shared
// mailbox's messages are readable by its owner and by whom its ACL
// gives the read right; the owner's INBOX by the owner alone. Taking
// bob's right away between two syncs gives the stored messages their
// new readers (SetReaders) without fetching them again.
func TestDovecot_ACLReaders(t *testing.T) {
	addr := MustDovecot(t)
	c, err := imapclient.DialInsecure(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Login(testUser, testPassword).Wait(); err != nil {
		t.Fatal(err)
	}
	if !c.Caps().Has(imap.CapACL) {
		t.Fatal("dovecot does not advertise ACL: the acl plugin is not loaded")
	}
	if err := c.Create("Shared", nil).Wait(); err != nil {
		t.Fatal(err)
	}
	mustAppendIMAP(t, c, "INBOX", msg("mine@x", "mine", "only alice"))
	mustAppendIMAP(t, c, "Shared", msg("ours@x", "ours", "alice and bob"), withAttachment("att@x"))
	bob := imap.RightsIdentifier("bob@example.com")
	if err := c.SetACL("Shared", bob, imap.RightModificationReplace, imap.RightSet("lr")).Wait(); err != nil {
		t.Fatal(err)
	}

	src := MustSource(t, addr, func(cfg *imapconn.Config) { cfg.Mailboxes = []string{"INBOX", "Shared"} })
	p := newPass()
	MustSync(t, src, p)
	alice := ingestd.ReadersOf("user:alice@example.com")
	both := ingestd.ReadersOf("user:alice@example.com", "user:bob@example.com")
	check := func(when string, want map[string]ingestd.Readers) {
		t.Helper()
		items := p.Items()
		for id, w := range want {
			it, ok := items[id]
			if !ok {
				t.Fatalf("%s: no item %s among %v", when, id, slices.Collect(func(yield func(string) bool) {
					for k := range items {
						if !yield(k) {
							return
						}
					}
				}))
			}
			if it.Readers == nil || !it.Readers.Equal(w) {
				t.Errorf("%s: %s readers %+v, want %+v", when, id, it.Readers, w)
			}
		}
	}
	check("first sync", map[string]ingestd.Readers{"<mine@x>": alice, "<ours@x>": both})
	if got := p.ReaderSets(); len(got) != 0 {
		t.Errorf("first sync set readers of %v, want none (every item was put with its own)", got)
	}

	// doveadm acl delete's equivalent over IMAP: bob loses the right.
	if err := c.SetACL("Shared", bob, imap.RightModificationReplace, imap.RightSet("")).Wait(); err != nil {
		t.Fatal(err)
	}
	MustSync(t, src, p)
	check("after the revocation", map[string]ingestd.Readers{"<mine@x>": alice, "<ours@x>": alice})
	if got := p.ReaderSets(); !slices.Contains(got, "<ours@x>") || slices.Contains(got, "<mine@x>") {
		t.Errorf("SetReaders on %v, want the shared mailbox's messages only", got)
	}
	if got := len(p.Puts()); got != 0 { // Puts are this pass's
		t.Errorf("the revocation put %d items again, want none", got)
	}
}
