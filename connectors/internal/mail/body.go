package mail

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/emersion/go-message/charset"
	"golang.org/x/text/encoding/charmap"

	"github.com/ingestd/ingestd/connectors/internal/extract"
)

// textExts are the file name extensions of attachments read as text
// whatever their declared type (mailers often send them as
// application/octet-stream).
var textExts = map[string]bool{".txt": true, ".md": true, ".csv": true, ".html": true, ".htm": true}

// content is what an entity contributes to the message's text.
type content struct {
	text string
	// raw is true while text is HTML not yet converted: HTML is converted
	// only once chosen, as most HTML parts are the unread branch of a
	// multipart/alternative.
	raw bool
	// html is true when text is (or will be, once converted) from HTML;
	// multipart/alternative prefers a branch where it is false.
	html bool
}

// readable returns the content as text, converting HTML.
func (c content) readable() string {
	if !c.raw || c.text == "" {
		return c.text
	}
	_, t, _ := HTMLToText(strings.NewReader(c.text)) // a strings.Reader cannot fail
	return strings.TrimSpace(t)
}

// entity returns the content of one entity (a message body or a part).
// Attachments met on the way are appended to the message. root is true for
// the message's own body.
func (p *parser) entity(h header, body []byte, defType string, depth int, root bool) content {
	if depth > maxDepth {
		p.defect("parts nested deeper than %d levels skipped", maxDepth)
		return content{}
	}
	ct, params := p.mediaType("Content-Type", h.get("Content-Type"))
	if ct != "" && !strings.Contains(ct, "/") {
		p.defect("Content-Type %q has no subtype; read as %s", truncate(ct, 64), defType)
		ct = ""
	}
	if ct == "" {
		ct = defType
	}
	disp, dparams := p.mediaType("Content-Disposition", h.get("Content-Disposition"))
	filename := p.filename(dparams["filename"], params["name"])

	switch {
	case strings.HasPrefix(ct, "multipart/"):
		return p.multipart(ct, params["boundary"], body, depth)
	case ct == "message/rfc822" || ct == "message/global":
		a := p.attachment(h, ct, params, filename, body, depth)
		if root {
			return content{text: a.Text}
		}
		return content{}
	case (ct == "text/plain" || ct == "text/html") && disp != "attachment" && (filename == "" || disp == "inline"):
		html := ct == "text/html"
		text := strings.TrimSpace(p.charset(p.transfer(h, body), params["charset"], ct+" part"))
		return content{text: text, raw: html, html: html}
	default:
		p.attachment(h, ct, params, filename, body, depth)
		return content{}
	}
}

// multipart returns the content of a multipart entity: for
// multipart/alternative the first non-empty branch not from HTML, else the
// last non-empty one; for any other the non-empty parts joined.
func (p *parser) multipart(ct, boundary string, body []byte, depth int) content {
	if boundary == "" {
		p.defect("%s without boundary; body read as plain text", ct)
		return content{text: strings.TrimSpace(p.charset(body, "", ct+" body"))}
	}
	parts, found, closed := splitMultipart(body, boundary)
	if !found {
		p.defect("%s boundary not found; body read as plain text", ct)
		return content{text: strings.TrimSpace(p.charset(body, "", ct+" body"))}
	}
	if !closed {
		p.defect("%s closing boundary not found", ct)
	}
	childType := "text/plain"
	if ct == "multipart/digest" {
		childType = "message/rfc822"
	}
	results := make([]content, 0, len(parts))
	for _, raw := range parts {
		h, b, ok := p.readHeader(raw, false)
		if !ok {
			p.defect("%s part without header", ct)
		}
		results = append(results, p.entity(h, b, childType, depth+1, false))
	}
	if ct == "multipart/alternative" {
		for _, r := range results {
			if !r.html && r.text != "" {
				return r
			}
		}
		for i := len(results) - 1; i >= 0; i-- {
			if t := results[i].readable(); t != "" {
				return content{text: t, html: results[i].html}
			}
		}
		return content{}
	}
	var texts []string
	fromHTML := false
	for _, r := range results {
		if t := r.readable(); t != "" {
			texts = append(texts, t)
			fromHTML = fromHTML || r.html
		}
	}
	return content{text: strings.Join(texts, "\n\n"), html: fromHTML}
}

// splitMultipart cuts body at the delimiter lines of boundary. A delimiter
// line is "--boundary" with optional trailing whitespace; "--boundary--"
// closes. found is false when no delimiter line is there; closed is false
// when the closing one is missing (the last part then runs to the end).
func splitMultipart(body []byte, boundary string) (parts [][]byte, found, closed bool) {
	delim := []byte("--" + boundary)
	start := -1
	pos := 0
	for pos < len(body) {
		end := bytes.IndexByte(body[pos:], '\n')
		var line []byte
		next := len(body)
		if end < 0 {
			line = body[pos:]
		} else {
			line = body[pos : pos+end]
			next = pos + end + 1
		}
		if bytes.HasPrefix(line, delim) {
			tail := bytes.TrimRight(line[len(delim):], " \t\r")
			final := string(tail) == "--"
			if len(tail) == 0 || final {
				if start >= 0 {
					parts = append(parts, trimDelimiterNewline(body[start:pos]))
				}
				found = true
				if final {
					return parts, true, true
				}
				start = next
			}
		}
		pos = next
	}
	if start >= 0 {
		parts = append(parts, body[start:])
	}
	return parts, found, false
}

// trimDelimiterNewline drops the line break before a delimiter line: it
// belongs to the delimiter (RFC 2046 5.1.1).
func trimDelimiterNewline(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// attachment records a non-body part and returns it.
func (p *parser) attachment(h header, ct string, params map[string]string, filename string, body []byte, depth int) Attachment {
	data := p.transfer(h, body)
	a := Attachment{Filename: filename, ContentType: ct, Size: len(data)}
	ext := strings.ToLower(path.Ext(filename))
	rfc822 := ct == "message/rfc822" || ct == "message/global"
	a.TextLike = rfc822 || strings.HasPrefix(ct, "text/") || ct == "message/delivery-status" || textExts[ext]
	if !a.TextLike && len(data) > 0 { // an empty part is no document, whatever its name says
		a.Rich = extract.Detect(filename, ct, data)
	}
	switch {
	case !a.TextLike && a.Rich == extract.Unknown:
	case int64(len(data)) > p.opts.MaxAttachmentBytes:
		a.Rich = extract.Unknown
		p.defect("attachment %q is %d bytes, over the %d-byte limit; text not extracted", truncate(filename, 64), len(data), p.opts.MaxAttachmentBytes)
	case rfc822 && p.nest >= maxMessageDepth:
		p.outer().defect("attached messages nested deeper than %d levels; text not extracted", maxMessageDepth)
	case rfc822:
		sub := &parser{opts: p.opts, nest: p.nest + 1, top: p.outer()}
		m, err := sub.message(data, depth+1)
		if err != nil {
			p.defect("attached message unreadable (%v); read as text", err)
			a.Text = strings.TrimSpace(p.charset(data, "", ct+" attachment"))
			break
		}
		a.Message = m
		a.Text = render(m)
	case a.Rich != extract.Unknown:
		a.Data = data // read by AttachmentItems, under the installation's limits
	default:
		s := p.charset(data, params["charset"], "attachment")
		if ct == "text/html" || ext == ".html" || ext == ".htm" {
			_, s, _ = HTMLToText(strings.NewReader(s))
		}
		a.Text = strings.TrimSpace(s)
	}
	p.msg.Attachments = append(p.msg.Attachments, a)
	return a
}

// render is the readable text of an attached message: its main header
// fields, its body and the text of its own text-like attachments.
func render(m *Message) string {
	var b strings.Builder
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, v)
		}
	}
	line("From", m.From)
	line("To", strings.Join(m.To, ", "))
	line("Cc", strings.Join(m.Cc, ", "))
	line("Subject", m.Subject)
	if !m.Date.IsZero() {
		line("Date", m.Date.Format(time.RFC1123Z))
	}
	if m.Text != "" {
		b.WriteString("\n" + m.Text + "\n")
	}
	for _, a := range m.Attachments {
		if a.Text == "" {
			continue
		}
		name := a.Filename
		if name == "" {
			name = a.ContentType
		}
		fmt.Fprintf(&b, "\n[attachment: %s]\n%s\n", name, a.Text)
	}
	return strings.TrimSpace(b.String())
}

// transfer undoes the Content-Transfer-Encoding, leniently.
func (p *parser) transfer(h header, body []byte) []byte {
	cte := strings.ToLower(strings.TrimSpace(h.get("Content-Transfer-Encoding")))
	if i := strings.IndexAny(cte, " \t;("); i >= 0 {
		cte = cte[:i]
	}
	switch cte {
	case "", "7bit", "8bit", "binary":
		return body
	case "base64":
		if !looksBase64(body) {
			p.defect("part declared base64 is not; read as is")
			return body
		}
		out, ok := decodeBase64(body)
		if !ok {
			p.defect("malformed base64; undecodable characters skipped")
		}
		return out
	case "quoted-printable":
		out, ok := decodeQP(body)
		if !ok {
			p.defect("malformed quoted-printable; bad escapes kept as is")
		}
		return out
	default:
		p.defect("unknown transfer encoding %q; part read as is", truncate(cte, 32))
		return body
	}
}

// looksBase64 reports whether b could be base64: no line has whitespace
// inside it (indented lines are seen and accepted). Plain text mislabelled
// base64 would otherwise decode to garbage.
func looksBase64(b []byte) bool {
	for len(b) > 0 {
		var line []byte
		line, b, _ = cutLine(b)
		if bytes.ContainsAny(bytes.TrimSpace(line), " \t") {
			return false
		}
	}
	return true
}

// decodeBase64 decodes base64 skipping whitespace, dropping characters
// outside the alphabet and a dangling final character, and restarting
// after padding (concatenated encodings). ok is false if it had to drop
// anything.
func decodeBase64(b []byte) ([]byte, bool) {
	out := make([]byte, 0, len(b)*3/4+3)
	seg := make([]byte, 0, 64)
	ok := true
	flush := func() {
		if len(seg)%4 == 1 {
			seg = seg[:len(seg)-1]
			ok = false
		}
		dst := make([]byte, base64.RawStdEncoding.DecodedLen(len(seg)))
		n, err := base64.RawStdEncoding.Decode(dst, seg)
		if err != nil {
			ok = false
		}
		out = append(out, dst[:n]...)
		seg = seg[:0]
	}
	for _, c := range b {
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '+', c == '/':
			seg = append(seg, c)
		case c == '=':
			if len(seg) > 0 {
				flush()
			}
		case c == ' ', c == '\t', c == '\r', c == '\n':
		default:
			ok = false
		}
	}
	flush()
	return out, ok
}

// decodeQP decodes quoted-printable: soft line breaks joined, "=XX" in
// either case decoded, a bad escape kept literally (ok false), trailing
// whitespace dropped and line ends normalised to "\n".
func decodeQP(b []byte) ([]byte, bool) {
	out := make([]byte, 0, len(b))
	ok := true
	for len(b) > 0 {
		line, rest, nl := cutLine(b)
		line = bytes.TrimRight(line, " \t\r")
		soft := false
		if n := len(line); n > 0 && line[n-1] == '=' {
			soft = true
			line = line[:n-1]
		}
		for i := 0; i < len(line); i++ {
			c := line[i]
			if c == '=' {
				if i+2 < len(line) && isHex(line[i+1]) && isHex(line[i+2]) {
					out = append(out, unhex(line[i+1])<<4|unhex(line[i+2]))
					i += 2
					continue
				}
				ok = false
			}
			out = append(out, c)
		}
		if nl && !soft {
			out = append(out, '\n')
		}
		b = rest
	}
	return out, ok
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// charset converts b from the named charset to UTF-8 with "\n" line ends
// and no NUL bytes. A missing or ASCII/UTF-8 label on bytes that are not
// UTF-8, and an unknown label, fall back to windows-1252 with a defect;
// where names the part for the defect.
func (p *parser) charset(b []byte, cs, where string) string {
	cs = strings.ToLower(strings.Trim(strings.TrimSpace(cs), `"'`))
	var s string
	switch cs {
	case "", "us-ascii", "ascii", "utf-8", "utf8":
		if utf8.Valid(b) {
			s = string(b)
			break
		}
		if cs == "" {
			p.defect("%s has 8-bit bytes and no charset; read as windows-1252", where)
		} else {
			p.defect("%s declared %s holds bytes that are not; read as windows-1252", where, cs)
		}
		s = windows1252(b)
	case "utf-7", "unicode-1-1-utf-7", "csunicode11utf7":
		s = decodeUTF7(b)
	default:
		r, err := charset.Reader(cs, bytes.NewReader(b))
		if err != nil {
			if utf8.Valid(b) {
				p.defect("unknown charset %q in %s; read as utf-8", truncate(cs, 32), where)
				s = string(b)
			} else {
				p.defect("unknown charset %q in %s; read as windows-1252", truncate(cs, 32), where)
				s = windows1252(b)
			}
			break
		}
		out, err := io.ReadAll(r)
		if err != nil {
			p.defect("charset %q in %s: %v", truncate(cs, 32), where, err)
		}
		s = strings.ToValidUTF8(string(out), "\uFFFD")
	}
	return normalize(s)
}

func normalize(s string) string {
	if strings.ContainsAny(s, "\r\x00") {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
		s = strings.ReplaceAll(s, "\x00", "")
	}
	return s
}

func isUTF8(s string) bool { return utf8.ValidString(s) }

func windows1252(b []byte) string {
	s, err := charmap.Windows1252.NewDecoder().Bytes(b)
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return string(s)
}

// decodeUTF7 decodes RFC 2152 UTF-7, which x/text does not know but
// Outlook sent for years. Malformed input yields U+FFFD, never an error.
func decodeUTF7(b []byte) string {
	var out strings.Builder
	for i := 0; i < len(b); {
		c := b[i]
		if c != '+' {
			out.WriteByte(c)
			i++
			continue
		}
		i++
		if i < len(b) && b[i] == '-' {
			out.WriteByte('+')
			i++
			continue
		}
		var bits uint32
		nbits := 0
		var units []uint16
		for i < len(b) {
			v, ok := b64val(b[i])
			if !ok {
				break
			}
			bits = bits<<6 | uint32(v)
			nbits += 6
			if nbits >= 16 {
				nbits -= 16
				units = append(units, uint16(bits>>nbits))
				bits &= 1<<nbits - 1
			}
			i++
		}
		if i < len(b) && b[i] == '-' {
			i++
		}
		out.WriteString(string(utf16.Decode(units)))
	}
	return strings.ToValidUTF8(out.String(), "\uFFFD")
}

func b64val(c byte) (byte, bool) {
	switch {
	case 'A' <= c && c <= 'Z':
		return c - 'A', true
	case 'a' <= c && c <= 'z':
		return c - 'a' + 26, true
	case '0' <= c && c <= '9':
		return c - '0' + 52, true
	case c == '+':
		return 62, true
	case c == '/':
		return 63, true
	}
	return 0, false
}
