package imap_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/connectortest"
	imapconn "github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/connectors/internal/mail"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// corpus is a set of real-world messages (testdata/NOTICE.md).
const corpus = "testdata/eml"

// MustCorpus returns the corpus's .eml files, sorted.
func MustCorpus(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(corpus, "*.eml"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		tb.Fatalf("no eml corpus at %s", corpus)
	}
	return files
}

// corpusMessage is one corpus file appended to a mailbox.
type corpusMessage struct {
	file string
	uid  string
	key  string // Message-ID and content fingerprint: one document per key
}

// MustCorpusMessages appends every corpus file to INBOX with append and
// returns them by UID.
func MustCorpusMessages(tb testing.TB, append func(raw []byte) uint32) map[string]corpusMessage {
	tb.Helper()
	out := map[string]corpusMessage{}
	for _, f := range MustCorpus(tb) {
		raw, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		id := ""
		if m, err := mail.Parse(raw, nil); err == nil {
			id = imapconn.MessageExternalID(m.MessageID)
		}
		uid := strconv.FormatUint(uint64(append(raw)), 10)
		out[uid] = corpusMessage{file: filepath.Base(f), uid: uid, key: id + " " + mail.Fingerprint(raw)}
	}
	return out
}

// checkCorpus checks that a pass over the corpus reported every message
// once — stored as its own mail, failed, or skipped as a second delivery
// of a stored one with the same content — and stored one mail per
// distinct message among those not failed. An attachment that failed (a
// PDF that cannot be read) belongs to a stored mail whose defects name
// it. It returns the number of distinct messages.
func checkCorpus(t *testing.T, p *connectortest.Pass, msgs map[string]corpusMessage) int {
	t.Helper()
	stored := map[string]corpusMessage{} // external id -> the message stored under it
	byUID := map[string]string{}         // uid -> external id of its stored mail
	for id, it := range p.Items() {
		if it.ItemKind != "mail" {
			continue
		}
		m, ok := msgs[it.Meta["uid"]]
		if !ok {
			t.Errorf("mail %s has uid %q of no appended file", id, it.Meta["uid"])
			continue
		}
		stored[id] = m
		byUID[m.uid] = id
	}
	dups := map[string]bool{} // external ids skipped as a duplicate delivery
	for _, s := range p.Skips() {
		if s.Reason != "duplicate delivery" {
			t.Errorf("%s skipped: %s", s.ExternalID, s.Reason)
			continue
		}
		dups[s.ExternalID] = true
	}
	distinct := map[string]bool{}
	for uid, m := range msgs {
		id, isStored := byUID[uid]
		err, failed := p.Fails()["uid:"+uid]
		switch {
		case isStored && failed:
			t.Errorf("%s (uid %s) both stored and failed", m.file, uid)
		case isStored:
			distinct[m.key] = true
			if id == "" {
				t.Errorf("%s stored without an id", m.file)
			}
		case failed:
			if !strings.Contains(err.Error(), "uid "+uid) {
				t.Errorf("%s: failure %q does not name uid %s", m.file, err, uid)
			}
		default:
			// A second delivery: a stored mail with the same key, skipped.
			var same string
			for sid, sm := range stored {
				if sm.key == m.key {
					same = sid
				}
			}
			if same == "" || !dups[same] {
				t.Errorf("%s (uid %s): neither stored, failed nor skipped as a second delivery", m.file, uid)
			}
		}
	}
	if got, want := len(stored), len(distinct); got != want {
		t.Errorf("%d mails stored for %d distinct messages", got, want)
	}
	msgFails := 0
	for id := range p.Fails() {
		if strings.HasPrefix(id, "uid:") {
			msgFails++
			continue
		}
		parent, _, ok := strings.Cut(id, "#attachment/")
		if it, stored := p.Items()[parent]; !ok || !stored || !strings.Contains(it.Meta["defects"], "attachment ") {
			t.Errorf("failed %s is no attachment of a stored mail whose defects name it", id)
		}
	}
	if got, want := len(msgs), len(stored)+msgFails+len(p.Skips()); got != want {
		t.Errorf("%d messages, but %d stored + %d failed + %d skipped", got, len(stored), msgFails, len(p.Skips()))
	}
	for id, err := range p.Fails() {
		t.Logf("failed %s (%s): %v", id, msgs[strings.TrimPrefix(id, "uid:")].file, err)
	}
	t.Logf("%d messages: %d stored as mail, %d failed, %d skipped; %d items in all",
		len(msgs), len(stored), len(p.Fails()), len(p.Skips()), len(p.Items()))
	return len(distinct)
}

// TestSync_Corpus syncs the 62 real messages, among them 16 that share
// three Message-IDs with different content. Before content identity, the
// first of each Message-ID was stored and the other 13 were lost without
// a word. (imapmemserver cannot serve 7 of them: those with an mbox
// "From " line or a broken first header line. They are reported as
// failed; TestDovecot_Corpus serves them all.)
func TestSync_Corpus(t *testing.T) {
	ts := MustServer(t)
	msgs := MustCorpusMessages(t, func(raw []byte) uint32 { return ts.MustAppend(t, "INBOX", day, raw)[0] })
	if len(msgs) != 62 {
		t.Errorf("corpus has %d messages, want 62", len(msgs))
	}
	p := newPass()
	MustSync(t, MustSource(t, ts.Addr, func(c *imapconn.Config) { c.BatchSize = 10 }), p)
	if got, want := checkCorpus(t, p, msgs), 55; got != want {
		t.Errorf("%d distinct messages stored, want %d", got, want)
	}
	shared := 0
	for _, id := range p.ItemIDs("mail") {
		if strings.Contains(id, "#sha256:") {
			shared++
		}
	}
	if shared != 12 {
		t.Errorf("%d mails stored beside another with their Message-ID, want 12 (7 + 4 + 1)", shared)
	}
}

// TestSync_CorpusSummaryAddsUp runs the corpus through the pipeline into a
// SQLite store: the summary accounts for every message and attachment,
// the connector's total matches, and a second pass adds nothing.
func TestSync_CorpusSummaryAddsUp(t *testing.T) {
	ctx := context.Background()
	ts := MustServer(t)
	msgs := MustCorpusMessages(t, func(raw []byte) uint32 { return ts.MustAppend(t, "INBOX", day, raw)[0] })
	st := sqlitetest.MustOpen(t)
	pipe, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewLexical(64)})
	if err != nil {
		t.Fatal(err)
	}
	inst := ingestd.Installation{ID: "mail", Kind: "imap", Tier: ingestd.TierUntrustedExternal}
	src := MustSource(t, ts.Addr, func(c *imapconn.Config) { c.BatchSize = 10 })
	sum, err := pipe.Sync(ctx, inst, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(sum)
	connectortest.MustAddUp(t, sum)
	refs, err := st.DocumentRefs(ctx, inst.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sum.Added, len(refs); got != want {
		t.Errorf("%d added, %d documents stored", got, want)
	}
	if got, want := sum.Added+sum.Failed, sum.Seen; got != want || sum.Expected != sum.Seen {
		t.Errorf("seen %d, expected %d; want every item added or failed (%d + %d)", sum.Seen, sum.Expected, sum.Added, sum.Failed)
	}
	if got, want := sum.Failed, 8; got != want {
		t.Errorf("%d failed, want %d (the 7 messages imapmemserver cannot serve, and test.pdf, a truncated PDF attachment)", got, want)
	}
	mails := 0
	for _, r := range refs {
		d, err := st.Document(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.ItemKind == "mail" {
			mails++
		}
	}
	if got, want := mails, len(msgs)-7; got != want {
		t.Errorf("%d mail documents, want %d", got, want)
	}

	again, err := pipe.Sync(ctx, inst, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	connectortest.MustAddUp(t, again)
	if again.Seen != 0 {
		t.Errorf("second pass: %s", again)
	}
}

// TestSync_CorpusTricky syncs tricky messages, each alone in a mailbox,
// and names the text expected from each.
func TestSync_CorpusTricky(t *testing.T) {
	MustCorpus(t)
	for _, tt := range []struct {
		name string
		file string
		text []string // fragments of the mail's text
		att  string   // a fragment of some attachment child's text
	}{
		{name: "iso-2022-jp", file: "mikel-mail__japanese_iso_2022.eml", text: []string{"すみません。"}},
		{name: "bad final boundary", file: "enmime__bad-final-boundary.eml", text: []string{"A text section"}},
		{name: "multipart without boundary", file: "enmime__multipart-wo-boundary.eml", text: []string{"multipart message without boundary"}},
		{name: "html only", file: "rspamd__mixed-related-html-only.eml", text: []string{"This is an HTML-only message body."}},
		{name: "html only, inline image", file: "enmime__html-only-inline.eml", text: []string{"Test of HTML section"}},
		{name: "message/rfc822 attachment", file: "mikel-mail__attachment_message_rfc822.eml", text: []string{"This is the first part."}, att: "Just attaching another PDF"},
		{name: "digest inside message/rfc822", file: "hunnysoft__m4007.eml", text: []string{"m1 body", "m2 body"}},
		{name: "utf-7", file: "hunnysoft__m0006.eml", text: []string{"Die Hasen klagten einst über ihre mißliche Lage"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(corpus, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			ts := MustServer(t)
			ts.MustAppend(t, "INBOX", day, raw)
			p := newPass()
			MustSync(t, MustSource(t, ts.Addr, nil), p)
			var text string
			for _, it := range p.Items() {
				if it.ItemKind == "mail" {
					text = it.Text
				}
			}
			if text == "" {
				t.Fatalf("no mail stored; failed %v", p.Fails())
			}
			for _, f := range tt.text {
				if !strings.Contains(text, f) {
					t.Errorf("text does not contain %q:\n%s", f, text)
				}
			}
			if tt.att == "" {
				return
			}
			for _, it := range p.Items() {
				if it.ItemKind == "attachment" && strings.Contains(it.Text, tt.att) {
					if p.Items()[it.ParentExternalID].ItemKind != "mail" {
						t.Errorf("attachment %s has no stored parent", it.ExternalID)
					}
					return
				}
			}
			t.Errorf("no attachment contains %q", tt.att)
		})
	}
}
