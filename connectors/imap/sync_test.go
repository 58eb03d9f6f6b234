package imap_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	imap "github.com/emersion/go-imap/v2"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/connectortest"
	imapconn "github.com/ingestd/ingestd/connectors/imap"
)

var day = time.Date(2024, 5, 30, 12, 0, 0, 0, time.UTC)

func withAttachment(id string) []byte {
	return []byte("From: Carol <carol@example.net>\r\nTo: support@example.com\r\nSubject: Logs attached\r\n" +
		"Date: Tue, 04 Jun 2024 09:00:00 +0000\r\nMessage-ID: <" + id + ">\r\n" +
		"In-Reply-To: <m1@Example.COM>\r\nReferences: <root@example.com> <m1@example.com>\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n" +
		"--XX\r\nContent-Type: text/plain\r\n\r\nSee the log.\r\n" +
		"--XX\r\nContent-Type: text/plain; name=app.log\r\nContent-Disposition: attachment; filename=app.log\r\n\r\nERROR disk full\r\n" +
		"--XX\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=scan.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n" +
		"--XX--\r\n")
}

func TestSync_FirstThenIncremental(t *testing.T) {
	ts := MustServer(t)
	uids := ts.MustAppend(t, "INBOX", day,
		msg("m1@example.com", "Printer on fire", "It is on fire."),
		msg("", "No id here", "Anonymous body."),
		withAttachment("m3@example.com"),
	)
	src := MustSource(t, ts.Addr, nil)
	p := newPass()

	MustSync(t, src, p)
	if got, want := len(p.ItemIDs("mail")), 3; got != want {
		t.Fatalf("%d mails stored, want %d: %v", got, want, p.ItemIDs("mail"))
	}
	if p.LastTotal() != 5 { // three messages, a text attachment and a PDF that cannot be read
		t.Errorf("Total(%d), want 5", p.LastTotal())
	}
	if got, want := ts.Fetches(), []string{"1:3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("FETCH sets %q, want %q", got, want)
	}

	m1 := p.Items()["<m1@example.com>"]
	if m1.Title != "Printer on fire" || m1.Author != "Bob <bob@example.org>" || m1.ItemKind != "mail" || m1.Format != ingestd.FormatMail {
		t.Errorf("m1 = %+v", m1)
	}
	if got, want := m1.URI, "imap://mail/INBOX;uidvalidity=1/;uid=1"; got != want {
		t.Errorf("URI = %q, want %q", got, want)
	}
	if got, want := m1.CreatedAt, time.Date(2024, 6, 3, 10, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("CreatedAt = %v, want %v", got, want)
	}
	if m1.Meta["mailbox"] != "INBOX" || m1.Meta["uid"] != "1" || m1.Meta["message_id"] != "m1@example.com" {
		t.Errorf("m1 Meta = %v", m1.Meta)
	}

	var anon ingestd.Item
	for _, it := range p.Items() {
		if it.Title == "No id here" {
			anon = it
		}
	}
	if !strings.HasPrefix(anon.ExternalID, "sha256:") {
		t.Errorf("message without Message-ID has external id %q, want a content hash", anon.ExternalID)
	}

	m3 := p.Items()["<m3@example.com>"]
	wantLinks := []ingestd.ItemLink{
		{ToExternalID: "<m1@example.com>", Relation: "reply"},
		{ToExternalID: "<root@example.com>", Relation: "thread"},
	}
	if !reflect.DeepEqual(m3.Links, wantLinks) {
		t.Errorf("m3 Links = %+v, want %+v", m3.Links, wantLinks)
	}
	if got := m3.Meta["attachments"]; !strings.Contains(got, "scan.pdf (application/pdf") {
		t.Errorf("unreadable attachment not listed in Meta: %q", got)
	}
	// scan.pdf is "%PDF-1.4" and nothing else: a failed item, and a
	// defect of its message.
	if err := p.Fails()["<m3@example.com>#attachment/2/scan.pdf"]; err == nil || !strings.Contains(err.Error(), "extract PDF") {
		t.Errorf("scan.pdf: failure %v, want the PDF reader's", err)
	}
	if got := m3.Meta["defects"]; !strings.Contains(got, `attachment "scan.pdf": `) {
		t.Errorf("m3 defects %q do not name scan.pdf", got)
	}
	child, ok := p.Items()["<m3@example.com>#attachment/1/app.log"]
	if !ok {
		t.Fatalf("no attachment child; items %v", p.ItemIDs(""))
	}
	if child.ParentExternalID != "<m3@example.com>" || child.ItemKind != "attachment" || !strings.Contains(child.Text, "ERROR disk full") {
		t.Errorf("child = %+v", child)
	}
	if _, ok := p.Items()["<m3@example.com>#attachment/2/scan.pdf"]; ok {
		t.Error("unreadable attachment became a child item")
	}

	// Incremental: only the new UIDs are fetched.
	ts.MustAppend(t, "INBOX", day, msg("m4@example.com", "Four", "4"), msg("m5@example.com", "Five", "5"))
	MustSync(t, src, p)
	if got, want := len(p.PutIDs()), 2; got != want {
		t.Errorf("second pass Put %d items, want %d: %v", got, want, p.PutIDs())
	}
	if got, want := ts.Fetches(), []string{"4:5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("FETCH sets %q, want %q", got, want)
	}

	// Nothing changed: no search, no fetch.
	ts.Searches()
	MustSync(t, src, p)
	if len(p.PutIDs()) != 0 || len(ts.Fetches()) != 0 || ts.Searches() != 0 {
		t.Errorf("unchanged mailbox: %d puts, want no FETCH or SEARCH", len(p.PutIDs()))
	}
	if len(p.Deletes()) != 0 {
		t.Errorf("deleted %v", p.Deletes())
	}
	_ = uids
}

func TestSync_SeenUntouched(t *testing.T) {
	ts := MustServer(t)
	ts.MustAppend(t, "INBOX", day, msg("a@x", "a", "a"), msg("b@x", "b", "b"))
	MustSync(t, MustSource(t, ts.Addr, nil), newPass())
	st, err := ts.User.Status("INBOX", &imap.StatusOptions{NumUnseen: true, NumMessages: true})
	if err != nil {
		t.Fatal(err)
	}
	if *st.NumUnseen != 2 {
		t.Errorf("%d of %d messages unseen after sync, want all", *st.NumUnseen, *st.NumMessages)
	}
}

func TestSync_ExpungeTombstones(t *testing.T) {
	ts := MustServer(t)
	uids := ts.MustAppend(t, "INBOX", day, msg("a@x", "a", "a"), withAttachment("b@x"), msg("c@x", "c", "c"))
	src := MustSource(t, ts.Addr, nil)
	p := newPass()
	MustSync(t, src, p)

	ts.MustExpunge(t, "INBOX", uids[1])
	MustSync(t, src, p)
	if got, want := p.Deletes(), []string{"<b@x>#attachment/1/app.log", "<b@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("deleted %q, want %q", got, want)
	}
	if got, want := p.ItemIDs("mail"), []string{"<a@x>", "<c@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mails %q, want %q", got, want)
	}

	// The oldest message goes too: reconciliation has no horizon.
	ts.MustAppend(t, "INBOX", day, msg("d@x", "d", "d"))
	ts.MustExpunge(t, "INBOX", uids[0])
	MustSync(t, src, p)
	if got, want := p.Deletes(), []string{"<a@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("deleted %q, want %q", got, want)
	}
	MustSync(t, src, p)
	if len(p.Deletes()) != 0 {
		t.Errorf("deleted again: %q", p.Deletes())
	}
}

func TestSync_SameMessageInTwoMailboxes(t *testing.T) {
	ts := MustServer(t)
	if err := ts.User.Create("Archive", nil); err != nil {
		t.Fatal(err)
	}
	m := msg("same@x", "twice", "body")
	in := ts.MustAppend(t, "INBOX", day, m)
	ts.MustAppend(t, "Archive", day, m)
	src := MustSource(t, ts.Addr, func(c *imapconn.Config) { c.Mailboxes = []string{"*"} })
	p := newPass()
	MustSync(t, src, p)
	if got, want := p.ItemIDs("mail"), []string{"<same@x>"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("mails %q, want %q", got, want)
	}
	ts.MustExpunge(t, "INBOX", in[0]) // moved to the archive, say
	MustSync(t, src, p)
	if len(p.Deletes()) != 0 {
		t.Errorf("deleted %q though the message is still in Archive", p.Deletes())
	}
}

func TestSync_UIDValidityChange(t *testing.T) {
	ts := MustServer(t)
	a, b, c := msg("a@x", "a", "a"), msg("b@x", "b", "b"), msg("c@x", "c", "c")
	ts.MustAppend(t, "INBOX", day, a, b, c)
	src := MustSource(t, ts.Addr, nil)
	p := newPass()
	MustSync(t, src, p)

	// Recreate the mailbox: a new UIDVALIDITY, b is gone, d is new.
	if err := ts.User.Delete("INBOX"); err != nil {
		t.Fatal(err)
	}
	if err := ts.User.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	ts.MustAppend(t, "INBOX", day, c, a, msg("d@x", "d", "d"))
	MustSync(t, src, p)
	if got, want := p.ItemIDs("mail"), []string{"<a@x>", "<c@x>", "<d@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mails %q, want %q", got, want)
	}
	if got, want := p.Deletes(), []string{"<b@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("deleted %q, want %q", got, want)
	}
	if got := p.Items()["<a@x>"].URI; got != "imap://mail/INBOX;uidvalidity=2/;uid=2" {
		t.Errorf("a's URI = %q, want the new generation's", got)
	}
	for k, v := range p.Cursors() {
		if strings.HasPrefix(k, "uidmap:1:") && v != "" {
			t.Errorf("old generation's uid map %s left: %s", k, v)
		}
	}
	// And later expunges in the new generation still resolve.
	ts.MustExpunge(t, "INBOX", 1)
	MustSync(t, src, p)
	if got, want := p.Deletes(), []string{"<c@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("deleted %q, want %q", got, want)
	}
}

func TestSync_ResumesAfterCut(t *testing.T) {
	ts := MustServer(t)
	var raws [][]byte
	for i := range 12 {
		raws = append(raws, msg(string(rune('a'+i))+"@x", "n", "body"))
	}
	ts.MustAppend(t, "INBOX", day, raws...)
	src := MustSource(t, ts.Addr, func(c *imapconn.Config) { c.BatchSize = 5 })
	p := newPass()
	ts.CutAfter(7)      // inside the second batch
	MustSync(t, src, p) // fails on a duplicate Put
	if got := len(p.ItemIDs("mail")); got != 12 {
		t.Errorf("%d mails stored, want 12", got)
	}
	if len(p.Fails()) != 0 {
		t.Errorf("failed: %v", p.Fails())
	}
	fetches := ts.Fetches()
	if len(fetches) < 4 {
		t.Errorf("FETCH sets %q: want the cut batch resumed", fetches)
	}
	MustSync(t, src, p)
	if len(p.PutIDs()) != 0 || len(p.Deletes()) != 0 {
		t.Errorf("next pass Put %v, deleted %v", p.PutIDs(), p.Deletes())
	}
}

func TestSync_CutBeforeAnyProgressResumesFromCursor(t *testing.T) {
	ts := MustServer(t)
	for i := range 4 {
		ts.MustAppend(t, "INBOX", day, msg(string(rune('a'+i))+"@x", "n", "body"))
	}
	src := MustSource(t, ts.Addr, func(c *imapconn.Config) { c.BatchSize = 2 })
	p := newPass()
	ts.CutAfter(1)
	MustSync(t, src, p)
	if got := len(p.ItemIDs("mail")); got != 4 {
		t.Errorf("%d mails stored, want 4", got)
	}
}

func TestSync_MaxPerPassAndSince(t *testing.T) {
	ts := MustServer(t)
	old := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC) // outside 720h before 2024-06-01
	ts.MustAppend(t, "INBOX", old, msg("old@x", "old", "old"))
	ts.MustAppend(t, "INBOX", day, msg("n1@x", "n", "1"), msg("n2@x", "n", "2"), msg("n3@x", "n", "3"))
	ts.MustAppend(t, "INBOX", old, msg("old2@x", "old", "old"))
	src := MustSource(t, ts.Addr, func(c *imapconn.Config) { c.Since = 720 * time.Hour; c.MaxPerPass = 2 })
	p := newPass()
	MustSync(t, src, p)
	if got, want := p.ItemIDs("mail"), []string{"<n1@x>", "<n2@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("first pass mails %q, want %q", got, want)
	}
	if p.LastTotal() != 2 {
		t.Errorf("Total(%d), want 2", p.LastTotal())
	}
	MustSync(t, src, p)
	if got, want := p.ItemIDs("mail"), []string{"<n1@x>", "<n2@x>", "<n3@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("second pass mails %q, want %q", got, want)
	}
	// Mail arriving after the first sync is taken whatever its date.
	ts.MustAppend(t, "INBOX", old, msg("late@x", "late", "late"))
	MustSync(t, src, p)
	if got, want := p.ItemIDs("mail"), []string{"<late@x>", "<n1@x>", "<n2@x>", "<n3@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("third pass mails %q, want %q", got, want)
	}
}

func TestSync_SkipAutoGenerated(t *testing.T) {
	ts := MustServer(t)
	ts.MustAppend(t, "INBOX", day,
		msg("h@x", "human", "hi"),
		msg("b@x", "bulk", "buy", "Precedence: bulk"),
		msg("l@x", "list", "news", "List-Unsubscribe: <mailto:u@x>"),
		msg("r@x", "auto", "ooo", "Auto-Submitted: auto-replied"),
		msg("n@x", "explicit no", "hi", "Auto-Submitted: no"),
	)
	p := newPass()
	MustSync(t, MustSource(t, ts.Addr, func(c *imapconn.Config) { c.SkipAutoGenerated = true }), p)
	if got, want := p.ItemIDs("mail"), []string{"<h@x>", "<n@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mails %q, want %q", got, want)
	}
	if got := p.SkipCount("auto-generated"); got != len(p.Skips()) || got == 0 {
		t.Errorf("skips %+v, want each filtered mail skipped as auto-generated", p.Skips())
	}
}

func TestSync_TooLargeIsSkippedAndPassGoesOn(t *testing.T) {
	ts := MustServer(t)
	ts.MustAppend(t, "INBOX", day, msg("big@x", "big", strings.Repeat("x", 4000)), msg("ok@x", "ok", "fine"))
	p := newPass()
	MustSync(t, MustSource(t, ts.Addr, func(c *imapconn.Config) { c.MaxMessageBytes = 1000 }), p)
	if got, want := p.ItemIDs("mail"), []string{"<ok@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mails %q, want %q", got, want)
	}
	if got, want := p.Skips(), []connectortest.Skip{{ExternalID: "uid:1", Reason: "over max_message_bytes"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("skips %+v, want %+v", got, want)
	}
}

func TestSync_PutFailureStopsPassWithoutAdvancing(t *testing.T) {
	ts := MustServer(t)
	ts.MustAppend(t, "INBOX", day, msg("a@x", "a", "a"))
	src := MustSource(t, ts.Addr, nil)
	p := newPass()
	p.SetPutErr(errors.New("store down"))
	if err := src.Sync(context.Background(), p); err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("Sync = %v, want the store's error", err)
	}
	p.SetPutErr(nil)
	MustSync(t, src, p)
	if got, want := p.ItemIDs("mail"), []string{"<a@x>"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mails %q, want %q", got, want)
	}
}

func TestSync_LoginRefused(t *testing.T) {
	ts := MustServer(t)
	src, err := imapconn.NewSource("mail", imapconn.Config{
		Addr: ts.Addr, Username: testUser, PasswordEnv: "P", TLS: "none", Insecure: true,
	}, &imapconn.Options{LookupEnv: func(string) (string, bool) { return "wrong", true }, Backoff: func(int) time.Duration { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	err = src.Sync(context.Background(), newPass())
	if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Sync = %v, want EINVALID login refused", err)
	}
}

func TestSync_Unreachable(t *testing.T) {
	ts := MustServer(t)
	addr := ts.Addr
	src := MustSource(t, "127.0.0.1:1", nil)
	_ = addr
	err := src.Sync(context.Background(), newPass())
	if ingestd.ErrorCode(err) != ingestd.EUNAVAILABLE {
		t.Errorf("Sync = %v, want EUNAVAILABLE", err)
	}
}

// TestWatcherConformance runs the Watcher cases against the Watcher an
// imap installation with idle: true declares, on a server that has IDLE.
func TestWatcherConformance(t *testing.T) {
	ts := MustServer(t)
	c := MustConnector(t, ts.Addr, func(c *imapconn.Config) { c.IDLE = true })
	if c.Watcher == nil {
		t.Fatal("an installation with idle: true declares no Watcher")
	}
	connectortest.RunWatcher(t, c.Watcher, func(t *testing.T) {
		ts.MustAppend(t, "INBOX", day, msg("", "new", "new"))
	})
}

// TestWatcherOnlyWithIdle: without idle: true the installation has no
// Watcher, so serve keeps no connection open for it.
func TestWatcherOnlyWithIdle(t *testing.T) {
	c := MustConnector(t, "imap.example.com:993", nil)
	if c.Watcher != nil || c.Reader != nil || c.Intake != nil {
		t.Errorf("abilities = %+v, want none without idle", c)
	}
}

// slowPass is a pass whose Put takes a while, as storing a message with
// large attachments does.
type slowPass struct {
	*connectortest.Pass
	delay time.Duration
}

func (p slowPass) Put(ctx context.Context, it ingestd.Item) error {
	time.Sleep(p.delay)
	return p.Pass.Put(ctx, it)
}

// TestSync_WorkOnAMessageIsNotServerSilence: reading and storing a
// message (its documents' extraction, a slow store) may take longer than
// the command timeout; the server is waiting on us then, so the FETCH
// goes on on the same connection. Before, the watchdog closed the
// connection after each slow message and the pass fetched the rest again
// on a new one.
func TestSync_WorkOnAMessageIsNotServerSilence(t *testing.T) {
	ts := MustServer(t)
	// Messages large enough that the server is still sending the second
	// while the first is handled.
	body := strings.Repeat("A line of a long message body.\r\n", 64<<10)
	ts.MustAppend(t, "INBOX", day, msg("s1@example.com", "One", body), msg("s2@example.com", "Two", body))
	// Long enough that a loaded machine (go test -race beside other
	// packages) still sends the next bytes within it: the test is about
	// our work outlasting the timeout, not the server's pace.
	const timeout = time.Second
	src := MustSource(t, ts.Addr, func(c *imapconn.Config) { c.Timeout = timeout })
	p := newPass()
	if err := src.Sync(t.Context(), slowPass{Pass: p, delay: 3 * timeout}); err != nil {
		t.Fatal(err)
	}
	if got := len(p.ItemIDs("mail")); got != 2 {
		t.Fatalf("%d mails stored, want 2", got)
	}
	if got, want := ts.Fetches(), []string{"1:2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("FETCH sets %q, want one FETCH %q", got, want)
	}
}
