package mail_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/mail"
)

// corpus is the shared collection of real-world messages.
const corpus = "testdata/eml"

// MustCorpus returns the paths of the .eml corpus (testdata/NOTICE.md
// names each file's source and licence).
func MustCorpus(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(corpus, "*.eml"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		tb.Fatalf("no .eml files in %s", corpus)
	}
	return files
}

// MustRead reads a file or fails the test.
func MustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestParse_Corpus(t *testing.T) {
	files := MustCorpus(t)
	if got, want := len(files), 62; got != want {
		t.Errorf("corpus has %d messages, want %d", got, want)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m, err := mail.Parse(MustRead(t, f), nil)
			if err != nil {
				if code := ingestd.ErrorCode(err); code != ingestd.EINVALID {
					t.Fatalf("error code %q (%v), want %q", code, err, ingestd.EINVALID)
				}
				if ingestd.ErrorMessage(err) == "" {
					t.Fatal("error without a reason")
				}
				return
			}
			if m.Format != ingestd.FormatMail {
				t.Errorf("Format = %q", m.Format)
			}
			for _, s := range append([]string{m.Text, m.Subject, m.From}, m.To...) {
				if !isClean(s) {
					t.Errorf("text not clean UTF-8 without NUL or CR: %q", s)
				}
			}
			for _, a := range m.Attachments {
				if !a.TextLike && a.Text != "" {
					t.Errorf("binary attachment %q has text", a.Filename)
				}
			}
		})
	}
}

func isClean(s string) bool {
	return strings.ToValidUTF8(s, "") == s && !strings.ContainsAny(s, "\x00\r")
}

func TestParse_Tricky(t *testing.T) {
	MustCorpus(t)
	for _, tt := range []struct {
		name        string
		file        string
		subject     string
		from        string
		to          string   // a fragment of one To address
		text        []string // fragments of Text
		attachments []string // Filename or ContentType of each, in order
		attText     []string // fragments of the attachments' text
		defects     []string // fragments of Defects
		wantErr     string   // error code
	}{
		{
			name:    "iso-2022-jp japanese",
			file:    "mikel-mail__japanese_iso_2022.eml",
			subject: "まみむめも",
			to:      "みける <raasdnil@gmail.com>",
			text:    []string{"すみません。"},
		},
		{
			name:    "iso-2022-jp folded subject after mbox From line",
			file:    "mikel-mail__example14.eml",
			subject: "Re: TEST テストテスト",
			from:    "Atsushi Yoshida <atsushi@example.com>",
			text:    []string{"Hello"},
		},
		{
			name:        "bad final boundary",
			file:        "enmime__bad-final-boundary.eml",
			text:        []string{"A text section"},
			attachments: []string{"foo_9E5D72.zip"},
			defects:     []string{"closing boundary not found"},
		},
		{
			name:    "unquoted illegal boundary",
			file:    "mikel-mail__raw_email_with_illegal_boundary.eml",
			text:    []string{"This is an outlook test"},
			defects: []string{"malformed Content-Type header"},
		},
		{
			name:    "multipart without boundary",
			file:    "enmime__multipart-wo-boundary.eml",
			text:    []string{"multipart message without boundary"},
			defects: []string{"without boundary"},
		},
		{
			name:        "html only, inline image",
			file:        "enmime__html-only-inline.eml",
			text:        []string{"Test of HTML section"},
			attachments: []string{"favicon.png"},
		},
		{
			name: "html only in mixed/related",
			file: "rspamd__mixed-related-html-only.eml",
			text: []string{"This is an HTML-only message body."},
		},
		{
			name:        "message/rfc822 attachment",
			file:        "mikel-mail__attachment_message_rfc822.eml",
			text:        []string{"This is the first part."},
			attachments: []string{"ForwardedMessage.eml"},
			attText:     []string{"Subject: Another PDF", "Just attaching another PDF"},
		},
		{
			name:    "digest inside a message/rfc822 body",
			file:    "hunnysoft__m4007.eml",
			subject: "Test multipart-digest",
			text:    []string{"Subject: submsg", "m1 body", "m2 body"},
		},
		{
			name:    "quoted-printable utf8 header",
			file:    "enmime__qp-utf8-header.eml",
			subject: "MIME UTF8 Test ¢ More Text",
			from:    "James Hillyerd <jamehi03@jamehi03lx.noa.com>, André Pirard <PIRARD@vm1.ulg.ac.be>",
			to:      "Mirosław Marczak <marczak@inbucket.com>",
			text:    []string{"Lorem ipsum dolor sit amet"},
		},
		{
			name:        "unknown charset part",
			file:        "enmime__unk-charset-part.eml",
			text:        []string{"A text section"},
			attachments: []string{"foo_9E5D72.zip"},
			defects:     []string{`unknown charset "fakescii"`},
		},
		{
			name:    "invalid charset label, 8-bit header",
			file:    "hunnysoft__invalid-charset.eml",
			to:      "Jürgen Schmürgen",
			text:    []string{"The Hare and the Tortoise", "Slow but steady wins the race."},
			defects: []string{`unknown charset "invalid-charset"`, "8-bit bytes in To header"},
		},
		{
			name:    "utf-7",
			file:    "hunnysoft__m0006.eml",
			subject: "Die Hasen und die Frösche (Microsoft Outlook 00)",
			to:      "Jürgen Schmürgen",
			text:    []string{"Die Hasen klagten einst über ihre mißliche Lage"},
		},
		{
			name:        "malformed base64 attachment",
			file:        "enmime__malformed-base64-attach.eml",
			text:        []string{"A text section"},
			attachments: []string{"some.doc"},
			defects:     []string{"malformed base64"},
		},
		{
			name:    "plain text labelled base64",
			file:    "enmime__mime-bad-content-transfer-encoding.eml",
			text:    []string{"ploozdect  nispplul"},
			defects: []string{"declared base64 is not"},
		},
		{
			name:    "encoded subject with bad padding and charset NONE",
			file:    "mikel-mail__bad_encoded_subject.eml",
			subject: "TEST",
			defects: []string{"malformed encoded word"},
		},
		{
			name:        "non-ascii attachment file name",
			file:        "mikel-mail__attachment_nonascii_filename.eml",
			attachments: []string{"ciële.txt"},
			attText:     []string{"Hi there."},
			defects:     []string{"malformed Content-Disposition header"},
		},
		{
			name:    "not a message",
			file:    "enmime__erroneous.eml",
			wantErr: ingestd.EINVALID,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := mail.Parse(MustRead(t, filepath.Join(corpus, tt.file)), nil)
			if got := ingestd.ErrorCode(err); got != tt.wantErr {
				t.Fatalf("error code %q (%v), want %q", got, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if tt.subject != "" && m.Subject != tt.subject {
				t.Errorf("Subject = %q, want %q", m.Subject, tt.subject)
			}
			if tt.from != "" && m.From != tt.from {
				t.Errorf("From = %q, want %q", m.From, tt.from)
			}
			if tt.to != "" && !containsFragment(m.To, tt.to) {
				t.Errorf("To = %q, want one containing %q", m.To, tt.to)
			}
			for _, f := range tt.text {
				if !strings.Contains(m.Text, f) {
					t.Errorf("Text does not contain %q:\n%s", f, m.Text)
				}
			}
			var names, texts []string
			for _, a := range m.Attachments {
				n := a.Filename
				if n == "" {
					n = a.ContentType
				}
				names = append(names, n)
				texts = append(texts, a.Text)
			}
			if tt.attachments != nil && strings.Join(names, ",") != strings.Join(tt.attachments, ",") {
				t.Errorf("attachments = %q, want %q", names, tt.attachments)
			}
			for _, f := range tt.attText {
				if !containsFragment(texts, f) {
					t.Errorf("no attachment text contains %q: %q", f, texts)
				}
			}
			for _, f := range tt.defects {
				if !containsFragment(m.Defects, f) {
					t.Errorf("Defects = %q, want one containing %q", m.Defects, f)
				}
			}
			if tt.defects == nil && len(m.Defects) > 0 {
				t.Errorf("unexpected Defects %q", m.Defects)
			}
		})
	}
}

func containsFragment(list []string, frag string) bool {
	for _, s := range list {
		if strings.Contains(s, frag) {
			return true
		}
	}
	return false
}

func TestParse_Fields(t *testing.T) {
	raw := "From: \"Doe, Jane\" <jane@example.com>\r\n" +
		"To: a@example.com, B <b@example.com>\r\n" +
		"To: c@example.com\r\n" +
		"Cc: =?utf-8?q?Z=C3=BCri?= <z@example.com>\r\n" +
		"Subject: =?utf-8?b?SGVsbG8gd29ybGQ=?=\r\n" +
		"Date: Tue, 1 Jul 2025 10:00:00 +0200\r\n" +
		"Message-ID: <m3@example.com>\r\n" +
		"In-Reply-To: <m2@example.com> (comment)\r\n" +
		"References: <m1@example.com>\r\n <m2@example.com>\r\n" +
		"\r\n" +
		"Body line\r\n"
	m, err := mail.Parse([]byte(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"From", m.From, "Doe, Jane <jane@example.com>"},
		{"To", strings.Join(m.To, "|"), "a@example.com|B <b@example.com>|c@example.com"},
		{"Cc", strings.Join(m.Cc, "|"), "Züri <z@example.com>"},
		{"Subject", m.Subject, "Hello world"},
		{"Date", m.Date.UTC().Format("2006-01-02T15:04"), "2025-07-01T08:00"},
		{"MessageID", m.MessageID, "m3@example.com"},
		{"InReplyTo", m.InReplyTo, "m2@example.com"},
		{"References", strings.Join(m.References, "|"), "m1@example.com|m2@example.com"},
		{"Text", m.Text, "Body line"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	if len(m.Defects) > 0 {
		t.Errorf("Defects = %q, want none", m.Defects)
	}
}

func TestParse_Errors(t *testing.T) {
	for _, tt := range []struct {
		name    string
		raw     string
		opts    *mail.Options
		wantErr string
	}{
		{name: "empty", raw: "", wantErr: ingestd.EINVALID},
		{name: "blank", raw: "\r\n\r\n", wantErr: ingestd.EINVALID},
		{name: "no header", raw: "just some text\nmore\n", wantErr: ingestd.EINVALID},
		{name: "too large", raw: "Subject: x\n\n" + strings.Repeat("a", 100), opts: &mail.Options{MaxMessageBytes: 50}, wantErr: ingestd.ETOOLARGE},
		{name: "header only", raw: "Subject: x"},
		{name: "ok", raw: "Subject: x\n\nbody"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mail.Parse([]byte(tt.raw), tt.opts)
			if got := ingestd.ErrorCode(err); got != tt.wantErr {
				t.Fatalf("error code %q (%v), want %q", got, err, tt.wantErr)
			}
		})
	}
}

func TestParse_AttachmentLimit(t *testing.T) {
	raw := "Subject: big\nContent-Type: multipart/mixed; boundary=b\n\n--b\n\nbody\n--b\n" +
		"Content-Type: text/plain\nContent-Disposition: attachment; filename=big.txt\n\n" +
		strings.Repeat("x", 200) + "\n--b\n" +
		"Content-Type: text/plain\nContent-Disposition: attachment; filename=small.txt\n\nsmall\n--b--\n"
	m, err := mail.Parse([]byte(raw), &mail.Options{MaxAttachmentBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(m.Attachments), 2; got != want {
		t.Fatalf("%d attachments, want %d", got, want)
	}
	big, small := m.Attachments[0], m.Attachments[1]
	if big.Text != "" || big.Size != 200 || !big.TextLike {
		t.Errorf("big attachment = %+v, want size 200, text-like, no text", big)
	}
	if small.Text != "small" {
		t.Errorf("small attachment text = %q", small.Text)
	}
	if !containsFragment(m.Defects, "over the 100-byte limit") {
		t.Errorf("Defects = %q, want the limit named", m.Defects)
	}
}

func TestParse_AlternativePrefersPlain(t *testing.T) {
	for _, tt := range []struct {
		name, raw, want string
	}{
		{
			name: "plain first",
			raw:  "Subject: a\nContent-Type: multipart/alternative; boundary=x\n\n--x\nContent-Type: text/plain\n\nplain\n--x\nContent-Type: text/html\n\n<p>html</p>\n--x--\n",
			want: "plain",
		},
		{
			name: "plain last",
			raw:  "Subject: a\nContent-Type: multipart/alternative; boundary=x\n\n--x\nContent-Type: text/html\n\n<p>html</p>\n--x\nContent-Type: text/plain\n\nplain\n--x--\n",
			want: "plain",
		},
		{
			name: "empty plain falls back to html",
			raw:  "Subject: a\nContent-Type: multipart/alternative; boundary=x\n\n--x\nContent-Type: text/plain\n\n \n--x\nContent-Type: text/html\n\n<p>html &amp; more</p>\n--x--\n",
			want: "html & more",
		},
		{
			name: "plain after related html",
			raw:  "Subject: a\nContent-Type: multipart/alternative; boundary=x\n\n--x\nContent-Type: multipart/related; boundary=y\n\n--y\nContent-Type: text/html\n\n<p>html</p>\n--y--\n--x\nContent-Type: text/plain\n\nplain\n--x--\n",
			want: "plain",
		},
		{
			name: "nested boundary sharing a prefix",
			raw:  "Subject: a\nContent-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: multipart/alternative; boundary=x-1\n\n--x-1\nContent-Type: text/plain\n\ninner\n--x-1--\n--x\nContent-Type: text/plain\n\nouter\n--x--\n",
			want: "inner\n\nouter",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, err := mail.Parse([]byte(tt.raw), nil)
			if err != nil {
				t.Fatal(err)
			}
			if m.Text != tt.want {
				t.Errorf("Text = %q, want %q", m.Text, tt.want)
			}
		})
	}
}

func TestParse_TransferEncodings(t *testing.T) {
	for _, tt := range []struct {
		name, cte, body, want, defect string
	}{
		{name: "qp soft breaks", cte: "quoted-printable", body: "caf=C3=A9 au =\nlait=20\nnext", want: "café au lait \nnext"},
		{name: "qp lower-case hex", cte: "quoted-printable", body: "caf=c3=a9", want: "café"},
		{name: "qp bad escape kept", cte: "quoted-printable", body: "100=% sure", want: "100=% sure", defect: "malformed quoted-printable"},
		{name: "base64 folded", cte: "base64", body: "aGVs\nbG8g\nd29y\nbGQ=", want: "hello world"},
		{name: "base64 concatenated", cte: "base64", body: "aGk=\naGk=", want: "hihi"},
		{name: "base64 junk", cte: "base64", body: "aGVs*bG8=", want: "hello", defect: "malformed base64"},
		{name: "unknown encoding", cte: "x-rot13", body: "uryyb", want: "uryyb", defect: "unknown transfer encoding"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw := "Subject: t\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: " + tt.cte + "\n\n" + tt.body
			m, err := mail.Parse([]byte(raw), nil)
			if err != nil {
				t.Fatal(err)
			}
			if m.Text != tt.want {
				t.Errorf("Text = %q, want %q", m.Text, tt.want)
			}
			if tt.defect != "" && !containsFragment(m.Defects, tt.defect) {
				t.Errorf("Defects = %q, want %q", m.Defects, tt.defect)
			}
			if tt.defect == "" && len(m.Defects) > 0 {
				t.Errorf("unexpected Defects %q", m.Defects)
			}
		})
	}
}

func TestParse_DepthBounded(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("Subject: deep\n")
	const n = 200
	for i := 0; i < n; i++ {
		b.WriteString("Content-Type: multipart/mixed; boundary=b" + strings.Repeat("x", i) + "\n\n--b" + strings.Repeat("x", i) + "\n")
	}
	b.WriteString("\ndeepest\n")
	m, err := mail.Parse(b.Bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !containsFragment(m.Defects, "nested deeper") {
		t.Errorf("Defects = %q, want the depth limit", m.Defects)
	}
}

func FuzzParse(f *testing.F) {
	for _, p := range MustCorpus(f) { // every real message is a seed
		f.Add(MustRead(f, p))
	}
	f.Add([]byte("Subject: =?utf-8?q?x?=\nContent-Type: multipart/mixed; boundary=a\n\n--a\nContent-Transfer-Encoding: base64\n\n=\n--a--"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := mail.Parse(raw, &mail.Options{MaxAttachmentBytes: 1 << 16})
		if err != nil {
			if code := ingestd.ErrorCode(err); code == ingestd.EINTERNAL {
				t.Fatalf("parser panicked: %v", err)
			}
			return
		}
		if m == nil {
			t.Fatal("nil message without error")
		}
		checkMessage(t, m, 1<<16)
	})
}
