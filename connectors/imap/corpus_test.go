package imap_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/connectors/connectortest"
	imapconn "github.com/ingestd/ingestd/connectors/imap"
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

func TestSync_Corpus(t *testing.T) {
	files := MustCorpus(t)
	if len(files) != 62 {
		t.Errorf("corpus has %d messages, want 62", len(files))
	}
	ts := MustServer(t)
	byUID := map[string]string{} // uid -> file name
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		uids := ts.MustAppend(t, "INBOX", day, raw)
		byUID[strconv.FormatUint(uint64(uids[0]), 10)] = filepath.Base(f)
	}
	p := newPass()
	MustSync(t, MustSource(t, ts.Addr, func(c *imapconn.Config) { c.BatchSize = 10 }), p)

	// Every message yields a stored mail or a recorded failure with reason.
	byFile := map[string]string{} // file -> text of its mail
	for _, it := range p.Items() {
		if it.ItemKind != "mail" {
			continue
		}
		f := byUID[it.Meta["uid"]]
		if f == "" {
			t.Errorf("mail %s has uid %q of no appended file", it.ExternalID, it.Meta["uid"])
			continue
		}
		byFile[f] = it.Text
	}
	for uid, f := range byUID {
		if _, ok := byFile[f]; ok {
			continue
		}
		err := p.Fails()["uid:"+uid]
		if err == nil {
			// A message with the Message-ID of an earlier one is one
			// document: the first copy is stored.
			if !sharesMessageID(t, p, f, byUID) {
				t.Errorf("%s (uid %s): neither stored nor failed", f, uid)
			}
			continue
		}
		if !strings.Contains(err.Error(), "uid "+uid) {
			t.Errorf("%s: failure %q does not name uid %s", f, err, uid)
		}
	}
	for id, err := range p.Fails() {
		t.Logf("failed %s (%s): %v", id, byUID[strings.TrimPrefix(id, "uid:")], err)
	}
	t.Logf("%d of %d messages stored as mail, %d failed, %d items in all", len(byFile), len(files), len(p.Fails()), len(p.Items()))

}

// TestSync_CorpusTricky syncs tricky messages one per mailbox (several
// corpus files share a Message-ID, so in one mailbox only the first copy
// is stored) and names the text expected from each.
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

// sharesMessageID reports whether the stored mail for file f's
// Message-ID came from another file.
func sharesMessageID(t *testing.T, p *connectortest.Pass, f string, byUID map[string]string) bool {
	raw, err := os.ReadFile(filepath.Join(corpus, f))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), "message-id") {
			it, ok := p.Items()[imapconn.MessageExternalID(v)]
			return ok && byUID[it.Meta["uid"]] != f
		}
	}
	return false
}
