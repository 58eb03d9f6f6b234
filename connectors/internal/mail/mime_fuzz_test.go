package mail_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/extract"
	"github.com/ingestd/ingestd/connectors/internal/mail"
)

// mimeNode is one entity of a message FuzzMIME builds.
type mimeNode struct {
	kind     byte // one of the node* constants
	cte      string
	charset  string
	filename string
	data     []byte // a leaf's decoded body
	parts    []*mimeNode
}

const (
	nodePlain       = iota // inline text/plain
	nodeHTML               // inline text/html
	nodeMixed              // multipart/mixed
	nodeAlternative        // multipart/alternative
	nodeRelated            // multipart/related
	nodeDigest             // multipart/digest (children default to message/rfc822)
	nodeMessage            // message/rfc822 attachment holding a message
	nodeBinary             // application/octet-stream attachment
	nodeTextFile           // text/plain attachment with a file name
	nodeKinds
)

var (
	mimeEncodings = []string{"7bit", "8bit", "base64", "quoted-printable", "binary", "x-uuencode", "BASE64", ""}
	mimeCharsets  = []string{"utf-8", "iso-8859-1", "windows-1252", "us-ascii", "utf-16le", "shift_jis", "iso-2022-jp", "koi8-r", "gb2312", "utf-7", "x-unknown", ""}
)

// buildTree reads shape as a preorder description of a MIME tree: each
// byte picks a node's kind (low 4 bits mod nodeKinds), its transfer
// encoding (bits 4-6) and, for multiparts, how many children follow (1 +
// bits 4-5). data and name are the content of every leaf (each leaf gets a
// distinct prefix so they can be told apart); cs is the charset of every
// text leaf when not empty, else one picked by the shape.
func buildTree(shape *[]byte, data []byte, name, cs string, depth int, leaves *int) *mimeNode {
	var b byte
	if len(*shape) > 0 {
		b, *shape = (*shape)[0], (*shape)[1:]
	}
	n := &mimeNode{kind: (b & 0x0f) % nodeKinds, cte: mimeEncodings[b>>4&7]}
	if depth >= 6 && n.kind >= nodeMixed && n.kind <= nodeMessage {
		n.kind = nodePlain
	}
	switch n.kind {
	case nodeMixed, nodeAlternative, nodeRelated, nodeDigest:
		for range 1 + int(b>>4&3) {
			n.parts = append(n.parts, buildTree(shape, data, name, cs, depth+1, leaves))
		}
	case nodeMessage:
		n.parts = []*mimeNode{buildTree(shape, data, name, cs, depth+1, leaves)}
	default:
		*leaves++
		n.data = append([]byte(fmt.Sprintf("leaf%d ", *leaves)), data...)
		n.charset = cs
		if cs == "" {
			n.charset = mimeCharsets[int(b)%len(mimeCharsets)]
		}
		if n.kind == nodeBinary || n.kind == nodeTextFile {
			n.filename = name
		}
	}
	return n
}

// write appends the entity's header and body to w; boundary names are
// unique per depth and carry "=_ingestd", which FuzzMIME keeps out of
// the data whose round trip it checks.
func (n *mimeNode) write(w *bytes.Buffer, depth int) {
	boundary := fmt.Sprintf("=_ingestd_%d_%p", depth, n)
	switch n.kind {
	case nodeMixed, nodeAlternative, nodeRelated, nodeDigest:
		sub := map[byte]string{nodeMixed: "mixed", nodeAlternative: "alternative", nodeRelated: "related", nodeDigest: "digest"}[n.kind]
		fmt.Fprintf(w, "Content-Type: multipart/%s; boundary=\"%s\"\r\n\r\npreamble\r\n", sub, boundary)
		for _, p := range n.parts {
			fmt.Fprintf(w, "--%s\r\n", boundary)
			p.write(w, depth+1)
			w.WriteString("\r\n")
		}
		fmt.Fprintf(w, "--%s--\r\nepilogue\r\n", boundary)
		return
	case nodeMessage:
		w.WriteString("Content-Type: message/rfc822\r\nContent-Disposition: attachment\r\n\r\n")
		fmt.Fprintf(w, "From: inner@example.com\r\nSubject: inner %d\r\nMIME-Version: 1.0\r\n", depth)
		n.parts[0].write(w, depth+1)
		return
	}
	ct := map[byte]string{nodePlain: "text/plain", nodeHTML: "text/html", nodeBinary: "application/octet-stream", nodeTextFile: "text/plain"}[n.kind]
	params := map[string]string{}
	if n.charset != "" && n.kind != nodeBinary {
		params["charset"] = n.charset
	}
	fmt.Fprintf(w, "Content-Type: %s\r\n", formatMediaType(ct, params))
	if n.filename != "" {
		d := mime.FormatMediaType("attachment", map[string]string{"filename": n.filename})
		if d == "" { // a name mime cannot write: the part has none
			d, n.filename = "attachment", ""
		}
		fmt.Fprintf(w, "Content-Disposition: %s\r\n", d)
	}
	if n.cte != "" {
		fmt.Fprintf(w, "Content-Transfer-Encoding: %s\r\n", n.cte)
	}
	w.WriteString("\r\n")
	switch strings.ToLower(n.cte) {
	case "base64":
		enc := base64.StdEncoding.EncodeToString(n.data)
		for len(enc) > 76 {
			w.WriteString(enc[:76] + "\r\n")
			enc = enc[76:]
		}
		w.WriteString(enc)
	case "quoted-printable":
		qw := quotedprintable.NewWriter(w)
		qw.Binary = n.kind == nodeBinary // line breaks of binary data are bytes
		qw.Write(n.data)
		qw.Close()
	default:
		w.Write(n.data)
	}
}

// formatMediaType is mime.FormatMediaType, falling back to the bare type
// when a parameter cannot be written (FormatMediaType then returns "").
func formatMediaType(t string, params map[string]string) string {
	if s := mime.FormatMediaType(t, params); s != "" {
		return s
	}
	return t
}

// FuzzMIME builds messages with a MIME structure the fuzzer chooses
// (multipart nesting of every kind, attached messages, every transfer
// encoding, charsets known and unknown, attachments with file names) and
// parses them. Beyond FuzzParse's properties it checks round trips: the
// body of every inline UTF-8 text/plain leaf whose ancestors are all
// multipart/mixed (so no alternative or attached message hides it) comes
// back in Text, and every binary attachment comes back with its decoded
// size and, when the name is plain text, its file name.
func FuzzMIME(f *testing.F) {
	f.Add([]byte{nodePlain}, []byte("hello world"), "", "")
	f.Add([]byte{nodeMixed | 0x30, nodePlain | 0x20, nodeBinary | 0x20, nodeTextFile | 0x30, nodeHTML}, []byte("caf\xc3\xa9 \xe2\x82\xac"), "utf-8", "report.pdf")
	f.Add([]byte{nodeAlternative | 0x10, nodePlain | 0x30, nodeHTML | 0x20}, []byte("<p>a &amp; b</p>"), "", "")
	f.Add([]byte{nodeMixed | 0x10, nodeMessage, nodeAlternative | 0x10, nodePlain, nodeHTML, nodeDigest}, []byte("=E9t=E9 =\r\nsoft"), "iso-8859-1", "")
	f.Add([]byte{nodeRelated | 0x10, nodeHTML | 0x20, nodeBinary | 0x20}, []byte{0, 1, 2, 0xff, '\r', '\n'}, "", "Grüße 2024.txt")
	f.Add([]byte{nodeMixed, nodeMixed, nodeMixed, nodeMixed, nodeMixed, nodeMixed, nodeMixed, nodePlain}, []byte("+AGEAYgBj-"), "utf-7", "")
	f.Add([]byte{nodeMixed | 0x10, nodePlain | 0x60, nodeTextFile | 0x70}, []byte("\x1b$B$3$s$K$A$O\x1b(B"), "iso-2022-jp", "=?utf-8?q?a?=")
	f.Add([]byte{nodeMixed | 0x10, nodePlain | 0x30, nodeMessage, nodeMixed | 0x10, nodeBinary | 0x20, nodePlain}, []byte("a \nb\t\n\tc  "), "utf-8", "inner.bin")
	f.Add([]byte{nodeMixed | 0x10, nodeBinary | 0x30, nodePlain | 0x30}, []byte("x =\n==41 \n"), "", "a\"b;c=d\\e")
	f.Add([]byte{nodeMixed | 0x10, nodeBinary | 0x20, nodePlain}, []byte("%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>"), "", "scan.pdf")
	f.Add([]byte{nodeMixed | 0x10, nodeBinary | 0x20, nodePlain}, []byte("PK\x03\x04word/document.xml"), "", "letter.docx")
	f.Fuzz(func(t *testing.T, shape, data []byte, cs, name string) {
		if len(shape) > 64 || len(data) > 4096 || len(cs) > 64 || len(name) > 256 {
			return
		}
		leaves := 0
		root := buildTree(&shape, data, name, cs, 0, &leaves)
		var raw bytes.Buffer
		raw.WriteString("From: Ann <ann@example.com>\r\nTo: b@example.com\r\nSubject: fuzz\r\nMessage-ID: <m@example.com>\r\nMIME-Version: 1.0\r\n")
		root.write(&raw, 0)

		const maxAttachment = 1 << 12
		m, err := mail.Parse(raw.Bytes(), &mail.Options{MaxAttachmentBytes: maxAttachment})
		if err != nil {
			t.Fatalf("Parse: %v\n%s", err, raw.Bytes())
		}
		checkMessage(t, m, maxAttachment)
		checkAttachmentItems(t, m)

		// Round trips, when the data cannot be mistaken for structure.
		clean := !bytes.Contains(data, []byte("=_ingestd")) && !bytes.ContainsAny(data, "\r\x00")
		// mixedOnly: every ancestor is multipart/mixed; outer: no ancestor
		// is an attached message (whose parts are its own message's).
		var walk func(n *mimeNode, mixedOnly, outer bool)
		walk = func(n *mimeNode, mixedOnly, outer bool) {
			switch n.kind {
			case nodeMixed:
				for _, p := range n.parts {
					walk(p, mixedOnly, outer)
				}
			case nodeAlternative, nodeRelated, nodeDigest:
				for _, p := range n.parts {
					walk(p, false, outer)
				}
			case nodeMessage:
				walk(n.parts[0], false, false)
			case nodePlain:
				cte := strings.ToLower(n.cte)
				if !mixedOnly || !clean || !utf8.Valid(n.data) || cte == "binary" || cte == "x-uuencode" ||
					n.charset != "utf-8" && n.charset != "" && !(n.charset == "us-ascii" && isASCII(n.data)) {
					return
				}
				if want := strings.TrimSpace(string(n.data)); !strings.Contains(m.Text, want) {
					t.Fatalf("text/plain leaf (%s, %s) %q is not in Text %q\n%s", n.cte, n.charset, want, m.Text, raw.Bytes())
				}
			case nodeBinary:
				cte := strings.ToLower(n.cte)
				if !outer || cte != "base64" && cte != "quoted-printable" {
					return
				}
				for _, a := range m.Attachments {
					if a.ContentType == "application/octet-stream" && a.Size == len(n.data) && (a.Filename == n.filename || !plainName(n.filename)) {
						return
					}
				}
				t.Fatalf("attachment %q of %d bytes (%s) not found in %+v\n%s", n.filename, len(n.data), n.cte, m.Attachments, raw.Bytes())
			}
		}
		walk(root, true, true)
	})
}

// checkMessage asserts what holds for any parsed message: every text is
// valid UTF-8 without NUL or CR, a binary attachment has no text, one over
// the limit has no text, and attached messages hold the same.
func checkMessage(tb testing.TB, m *mail.Message, maxAttachment int) {
	tb.Helper()
	for _, s := range append([]string{m.Text, m.Subject, m.From, m.MessageID, m.InReplyTo}, append(m.To, m.Cc...)...) {
		if !isClean(s) {
			tb.Fatalf("text not clean UTF-8 without NUL or CR: %q", s)
		}
	}
	for _, a := range m.Attachments {
		if !isClean(a.Text) || !isClean(a.Filename) {
			tb.Fatalf("attachment %q: text not clean UTF-8: %q", a.Filename, a.Text)
		}
		if !a.TextLike && a.Text != "" {
			tb.Fatalf("binary attachment %q (%s) has text", a.Filename, a.ContentType)
		}
		if a.Size > maxAttachment && a.Text != "" {
			tb.Fatalf("attachment %q of %d bytes over the %d-byte limit has text", a.Filename, a.Size, maxAttachment)
		}
		if (a.Rich != extract.Unknown) != (a.Data != nil) || a.Rich != extract.Unknown && (a.TextLike || a.Size > maxAttachment) {
			tb.Fatalf("attachment %q (%s, %d bytes, text-like %v): format %q with %d bytes kept", a.Filename, a.ContentType, a.Size, a.TextLike, a.Rich, len(a.Data))
		}
		if a.Message != nil {
			checkMessage(tb, a.Message, maxAttachment)
		}
	}
}

// checkAttachmentItems asserts what holds for the children of any parsed
// message: each has text or sections, never both; every attachment read
// is a child, a failure or over the cap, once; a failure names a
// document; only the context can make it return an error.
func checkAttachmentItems(tb testing.TB, m *mail.Message) {
	tb.Helper()
	parent := ingestd.Item{ExternalID: "<m@example.com>", URI: "imap://i/INBOX;uidvalidity=1/;uid=1"}
	att, err := mail.AttachmentItems(context.Background(), parent, m, mail.AttachmentOptions{Max: 3, Extract: extract.Config{Timeout: time.Minute}})
	if err != nil {
		tb.Fatalf("AttachmentItems: %v", err)
	}
	readable := 0
	for _, a := range m.Attachments {
		if a.Rich != extract.Unknown || a.TextLike && a.Text != "" {
			readable++
		}
	}
	if got := len(att.Children) + len(att.Failed) + len(att.Over); got > readable || len(att.Children)+len(att.Failed) > 3 {
		tb.Fatalf("%d children + %d failed + %d over for %d readable attachments, cap 3", len(att.Children), len(att.Failed), len(att.Over), readable)
	}
	seen := map[string]bool{}
	for _, c := range att.Children {
		if c.Text != "" && len(c.Sections) > 0 {
			tb.Fatalf("child %s has text and sections", c.ExternalID)
		}
		if seen[c.ExternalID] || c.ParentExternalID != parent.ExternalID {
			tb.Fatalf("child %s twice or of another parent %q", c.ExternalID, c.ParentExternalID)
		}
		seen[c.ExternalID] = true
	}
	for _, f := range att.Failed {
		if seen[f.ExternalID] || f.Err == nil || !strings.Contains(att.Defect, "attachment ") {
			tb.Fatalf("failure %s: %v; defect %q", f.ExternalID, f.Err, att.Defect)
		}
		seen[f.ExternalID] = true
	}
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// plainName reports a file name that should come back as written: valid
// UTF-8 without control characters, encoded words or runs of spaces.
func plainName(s string) bool {
	if !utf8.ValidString(s) || strings.Contains(s, "=?") || strings.Join(strings.Fields(s), " ") != s {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return false
		}
	}
	return true
}

// FuzzHTMLToText converts arbitrary markup. Properties: no error (the
// reader cannot fail); from valid UTF-8, valid UTF-8 without NUL; text
// without markup or entities comes back word for word; and the text is
// not much larger than the markup (hostile HTML must not amplify).
func FuzzHTMLToText(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(corpus, "*.eml"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		// The HTML parts of the corpus, as they are in the file.
		if i := bytes.Index(bytes.ToLower(b), []byte("<html")); i >= 0 {
			f.Add(b[i:])
		}
	}
	for _, s := range []string{
		"", "plain words only", "<p>One\n two</p><p>Three</p>", "<ul><li>a<ul><li>b</li></ul></li></ul>",
		"<table><tr><td>a</td><td>b</td></tr></table>", "<pre>  keep\r\n  this </pre>", "<script>x</script>y",
		"<title>T</title><br><br><br>", "&amp;&lt;&#0;&#x110000;", strings.Repeat("<div>", 600) + "deep",
		"<svg><p>in svg</p></svg><math><mi>x</mi></math>", "<textarea><b>x</b></textarea>",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		title, text, err := mail.HTMLToText(bytes.NewReader(in))
		if err != nil {
			t.Fatalf("HTMLToText: %v", err)
		}
		if utf8.Valid(in) && (!utf8.ValidString(text) || !utf8.ValidString(title)) {
			t.Fatalf("valid UTF-8 in, invalid out: title %q, text %q", title, text)
		}
		if strings.ContainsRune(text, 0) || strings.ContainsRune(title, 0) {
			t.Fatalf("NUL in the output: %q / %q", title, text)
		}
		if limit := 4*len(in) + 64; len(text) > limit {
			t.Fatalf("%d bytes of markup gave %d bytes of text (limit %d)", len(in), len(text), limit)
		}
		if utf8.Valid(in) && !bytes.ContainsAny(in, "<&\x00\r") {
			if got, want := strings.Fields(text), strings.Fields(string(in)); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("plain text %q came back as %q", in, text)
			}
		}
	})
}
