package mail

import (
	"bytes"
	"io"
	"mime"
	netmail "net/mail"
	"regexp"
	"strings"
	"time"
)

// field is one header field; key is lower-case, value unfolded and not yet
// decoded.
type field struct{ key, value string }

type header []field

// get returns the first value of the key, "" when absent.
func (h header) get(key string) string {
	key = strings.ToLower(key)
	for _, f := range h {
		if f.key == key {
			return f.value
		}
	}
	return ""
}

// all returns every value of the key joined with ", " (a message with two
// To: fields means both).
func (h header) all(key string) string {
	key = strings.ToLower(key)
	var vs []string
	for _, f := range h {
		if f.key == key && strings.TrimSpace(f.value) != "" {
			vs = append(vs, f.value)
		}
	}
	return strings.Join(vs, ", ")
}

// cutLine returns the line at the start of b without its "\n" or "\r\n",
// the rest after it, and whether a newline ended the line.
func cutLine(b []byte) (line, rest []byte, nl bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil, false
	}
	line, rest = b[:i], b[i+1:]
	return bytes.TrimSuffix(line, []byte{'\r'}), rest, true
}

// readHeader splits raw into its header fields and body. It accepts what
// mailers actually send: a first line that is a continuation, a missing
// blank line before the body, and (when top) a leading mbox "From " line.
// ok is false when raw does not start with a header block at all (its first
// line is neither a field nor blank); then body is raw.
func (p *parser) readHeader(raw []byte, top bool) (h header, body []byte, ok bool) {
	rest := raw
	first := true
	for len(rest) > 0 {
		line, next, _ := cutLine(rest)
		if len(line) == 0 {
			return h, next, true
		}
		if first && top && bytes.HasPrefix(line, []byte("From ")) {
			first = false
			rest = next
			continue
		}
		first = false
		if line[0] == ' ' || line[0] == '\t' {
			if len(h) > 0 {
				h[len(h)-1].value += string(line)
				rest = next
				continue
			}
			if len(bytes.TrimSpace(line)) == 0 {
				return h, next, true
			}
			p.defect("header begins with a continuation line")
			line = bytes.TrimLeft(line, " \t")
		}
		key, value, isField := splitField(line)
		if !isField {
			if len(h) == 0 {
				return nil, raw, false
			}
			p.defect("no blank line between header and body")
			return h, rest, true
		}
		h = append(h, field{key: key, value: value})
		rest = next
	}
	return h, nil, len(h) > 0
}

// splitField splits "Key: value". Keys are printable ASCII without spaces;
// "Key :" is accepted.
func splitField(line []byte) (key, value string, ok bool) {
	i := bytes.IndexByte(line, ':')
	if i <= 0 {
		return "", "", false
	}
	k := bytes.TrimRight(line[:i], " \t")
	if len(k) == 0 {
		return "", "", false
	}
	for _, c := range k {
		if c <= ' ' || c > '~' {
			return "", "", false
		}
	}
	return strings.ToLower(string(k)), string(line[i+1:]), true
}

// utf8Header returns s as UTF-8: raw UTF-8 (RFC 6532) is kept, other 8-bit
// bytes are read as windows-1252 with a defect.
func (p *parser) utf8Header(name, s string) string {
	if isUTF8(s) {
		return s
	}
	p.defect("8-bit bytes in %s header; read as windows-1252", name)
	return windows1252([]byte(s))
}

// decodeHeader decodes an unstructured header field: RFC 2047 encoded
// words in any charset x/text knows, whitespace collapsed.
func (p *parser) decodeHeader(name, v string) string {
	v = strings.Join(strings.Fields(p.utf8Header(name, v)), " ")
	if !strings.Contains(v, "=?") {
		return cleanHeader(v)
	}
	dec := mime.WordDecoder{CharsetReader: p.wordCharsetReader(name)}
	s, err := dec.DecodeHeader(v)
	if err != nil {
		s = v
	}
	// DecodeHeader keeps a word it cannot decode (bad padding, an
	// unknown encoding) as literal text; decode what is left leniently.
	if err != nil || encodedWord.MatchString(s) {
		p.defect("malformed encoded word in %s header", name)
		s = p.decodeWordsLeniently(name, s)
	}
	return cleanHeader(s)
}

// wordCharsetReader is a mime.WordDecoder CharsetReader that never fails:
// an unknown charset is read as UTF-8 or windows-1252, with a defect.
func (p *parser) wordCharsetReader(name string) func(string, io.Reader) (io.Reader, error) {
	return func(cs string, r io.Reader) (io.Reader, error) {
		b, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		return strings.NewReader(p.charset(b, cs, name+" header")), nil
	}
}

var encodedWord = regexp.MustCompile(`=\?([^?\s]+)\?([bBqQ])\?([^?\s]*)\?=`)

// decodeWordsLeniently decodes encoded words one by one, accepting bad
// padding and stray characters, and keeping a word it cannot read as is.
// Whitespace between two adjacent encoded words is dropped (RFC 2047 6.2).
func (p *parser) decodeWordsLeniently(name, v string) string {
	var b strings.Builder
	last := 0
	prevWord := false
	for _, m := range encodedWord.FindAllStringSubmatchIndex(v, -1) {
		gap := v[last:m[0]]
		if !prevWord || strings.TrimSpace(gap) != "" {
			b.WriteString(gap)
		}
		cs, enc, text := v[m[2]:m[3]], v[m[4]:m[5]], v[m[6]:m[7]]
		if i := strings.IndexByte(cs, '*'); i >= 0 { // RFC 2231 language suffix
			cs = cs[:i]
		}
		var raw []byte
		if enc == "b" || enc == "B" {
			raw, _ = decodeBase64([]byte(text))
		} else {
			raw, _ = decodeQP([]byte(strings.ReplaceAll(text, "_", " ")))
		}
		b.WriteString(p.charset(raw, cs, name+" header"))
		last = m[1]
		prevWord = true
	}
	b.WriteString(v[last:])
	return b.String()
}

// addresses parses an address list into "Name <addr>" strings. A list
// net/mail cannot parse is split on commas after decoding, with a defect.
func (p *parser) addresses(name, v string) []string {
	if strings.TrimSpace(v) == "" {
		return nil
	}
	v = p.utf8Header(name, v)
	ap := netmail.AddressParser{WordDecoder: &mime.WordDecoder{CharsetReader: p.wordCharsetReader(name)}}
	list, err := ap.ParseList(v)
	if err == nil {
		out := make([]string, 0, len(list))
		for _, a := range list {
			if strings.Contains(a.Name, "=?") {
				// An encoded word inside quotes: not allowed, often sent.
				a.Name = p.decodeHeader(name, a.Name)
			}
			out = append(out, formatAddress(cleanHeader(a.Name), cleanHeader(a.Address)))
		}
		return out
	}
	p.defect("malformed %s header; split on commas", name)
	var out []string
	for _, s := range strings.Split(p.decodeHeader(name, v), ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// cleanHeader makes a decoded header value safe to store and show: valid
// UTF-8 (mime.WordDecoder passes "utf-8" words through unchecked), no NUL,
// no line breaks.
func cleanHeader(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if strings.ContainsAny(s, "\x00\r\n") {
		s = strings.NewReplacer("\x00", "", "\r", " ", "\n", " ").Replace(s)
	}
	return s
}

func formatAddress(name, addr string) string {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return addr
	case addr == "":
		return name
	}
	return name + " <" + addr + ">"
}

// dateLayouts are tried after net/mail.ParseDate, for dates mailers write
// although RFC 5322 does not allow them.
var dateLayouts = []string{
	"Mon, 2 Jan 2006 15:04:05 -0700 (MST)",
	"Mon, 2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 06 15:04:05 -0700",
	"Mon Jan 2 15:04:05 2006",
	"2 Jan 2006 15:04 -0700",
	time.RFC3339,
}

func (p *parser) date(v string) time.Time {
	v = strings.Join(strings.Fields(p.utf8Header("Date", v)), " ")
	if t, err := netmail.ParseDate(v); err == nil {
		return t
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return t
		}
	}
	p.defect("unparseable Date header %q", truncate(v, 64))
	return time.Time{}
}

// firstID returns the first <id> of a Message-ID or In-Reply-To field
// without its brackets; a bare id is taken as is.
func firstID(v string) string {
	if ids := allIDs(v); len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// allIDs returns the <id>s of a References field, in order, without
// brackets; a field with no brackets is split on whitespace. Each id is
// valid UTF-8 without NUL or line breaks (an id that is nothing else is
// dropped): ids become external ids, which PostgreSQL stores as text.
func allIDs(v string) []string {
	var ids []string
	rest := v
	for {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '>')
		if j < 0 {
			break
		}
		if id := strings.TrimSpace(rest[i+1 : i+j]); id != "" {
			ids = append(ids, id)
		}
		rest = rest[i+j+1:]
	}
	if len(ids) == 0 {
		ids = strings.Fields(v)
	}
	out := ids[:0]
	for _, id := range ids {
		if id = strings.TrimSpace(cleanHeader(id)); id != "" {
			out = append(out, id)
		}
	}
	return out
}

// mediaType parses a Content-Type or Content-Disposition value. What
// mime.ParseMediaType refuses (unquoted specials in a boundary, stray
// semicolons) is split by hand, with a defect.
func (p *parser) mediaType(name, v string) (string, map[string]string) {
	if strings.TrimSpace(v) == "" {
		return "", nil
	}
	mt, params, err := mime.ParseMediaType(v)
	if err == nil {
		return strings.ToLower(mt), params
	}
	p.defect("malformed %s header", name)
	parts := strings.Split(v, ";")
	mt = strings.ToLower(mediaToken(strings.TrimSpace(parts[0])))
	params = map[string]string{}
	for _, part := range parts[1:] {
		k, val, ok := strings.Cut(part, "=")
		if !ok {
			continue
		}
		k = strings.ToLower(strings.TrimSpace(k))
		val = strings.TrimSpace(val)
		if len(val) >= 2 && val[0] == '"' && val[len(val)-1] == '"' {
			val = val[1 : len(val)-1]
		}
		if _, dup := params[k]; !dup && k != "" {
			params[k] = val
		}
	}
	return mt, params
}

// mediaToken is the media type at the start of s, up to the first byte
// that may not stand in one (RFC 2045's token characters and the '/'):
// what a malformed header holds past it (a NUL, a space, a stray quote)
// is no part of the type and would reach a document's text in its label.
func mediaToken(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"[]?=`, c) >= 0 {
			return s[:i]
		}
	}
	return s
}

// filename decodes an attachment's file name (RFC 2231 is handled by
// mime.ParseMediaType; RFC 2047 words in a quoted name are decoded here).
func (p *parser) filename(names ...string) string {
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			return p.decodeHeader("filename", n)
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
