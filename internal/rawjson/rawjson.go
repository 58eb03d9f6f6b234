// Package rawjson reads JSON objects and arrays without decoding them:
// each member's value is handed on as the bytes it was written in, a
// slice of the input, so a message that is mostly forwarded is read
// once and copied never. It serves the few messages ingestd reads on a
// hot path (the gateway's stdio lane, MCP's retrieve fast path), where
// encoding/json's tokens and maps cost more than the work they feed.
//
// It is strict where two readers could disagree about one message, so
// that what it accepts every reader reads alike: exactly one value (only
// white space after it), valid UTF-8, and no object that names a member
// twice (RFC 8259 as github.com/go-json-experiment/json/jsontext reads
// it by default). A caller that gets false hands the message to a full
// decoder, which answers it as it always has.
package rawjson

import (
	"bytes"
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is how many containers may be open at once, the outermost
// counted, as jsontext allows.
const maxDepth = 10000

// Members calls fn with the name (unquoted) and the value (as written)
// of each member of the one JSON object b holds, in order, until fn
// returns false. Both slices are valid only during the call, and must
// not be changed. It reports whether b is exactly one valid object and
// fn took every member.
func Members(b []byte, fn func(name, value []byte) bool) bool {
	s := scanner{b: b}
	s.space()
	if !s.is('{') {
		return false
	}
	return s.object(1, fn) && s.end()
}

// Elements calls fn with each element of the one JSON array b holds, as
// written, until fn returns false; as Members.
func Elements(b []byte, fn func(value []byte) bool) bool {
	s := scanner{b: b}
	s.space()
	if !s.is('[') {
		return false
	}
	return s.array(1, fn) && s.end()
}

// Valid reports whether b is exactly one JSON value, as strict as
// Members, none of whose values sits inside more than depth containers
// (the outermost value sits inside none).
func Valid(b []byte, depth int) bool {
	s := scanner{b: b, limit: max(0, min(depth, maxDepth)) + 1}
	_, ok := s.value(0)
	return ok && s.end()
}

// scanner reads one JSON text in place. It is written by hand, not
// borrowed from a general decoder: the lane reads a few small messages
// per call on a cold cache, where a decoder's size (its state machine,
// its pooled buffers) is what costs. FuzzAsJsontext holds it to
// jsontext's strictness, member for member.
type scanner struct {
	b     []byte
	i     int
	limit int // one more than the containers a value may sit in; 0 for maxDepth
}

func (s *scanner) space() {
	i := s.i
	for i < len(s.b) && s.b[i] <= ' ' && (s.b[i] == ' ' || s.b[i] == '\t' || s.b[i] == '\n' || s.b[i] == '\r') {
		i++
	}
	s.i = i
}

// is consumes c when it is next.
func (s *scanner) is(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// end reports whether only white space is left.
func (s *scanner) end() bool {
	s.space()
	return s.i == len(s.b)
}

// value reads one value inside depth open containers, white space
// before it skipped; its bytes as written are s.b[start:s.i].
func (s *scanner) value(depth int) (start int, ok bool) {
	s.space()
	start = s.i
	if s.i >= len(s.b) || s.limit > 0 && depth >= s.limit {
		return start, false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		s.i++
		ok = depth < maxDepth && s.object(depth+1, nil)
	case c == '[':
		s.i++
		ok = depth < maxDepth && s.array(depth+1, nil)
	case c == '"':
		_, ok = s.str()
	case c == '-' || c >= '0' && c <= '9':
		ok = s.number()
	case c == 't':
		ok = s.literal("true")
	case c == 'f':
		ok = s.literal("false")
	case c == 'n':
		ok = s.literal("null")
	}
	return start, ok
}

// object reads an object's members after its '{' and its '}' (depth
// counting it), calling fn (when not nil) with each. No name may
// appear twice.
func (s *scanner) object(depth int, fn func(name, value []byte) bool) bool {
	var seen names
	s.space()
	if s.is('}') {
		return true
	}
	for {
		s.space()
		start := s.i
		escaped, ok := s.str()
		if !ok {
			return false
		}
		name := s.b[start+1 : s.i-1]
		if escaped {
			if name, ok = unquote(nil, s.b[start:s.i]); !ok {
				return false
			}
		}
		if !seen.add(name) {
			return false
		}
		s.space()
		if !s.is(':') {
			return false
		}
		vstart, ok := s.value(depth)
		if !ok || fn != nil && !fn(name, s.b[vstart:s.i]) {
			return false
		}
		s.space()
		if s.is('}') {
			return true
		}
		if !s.is(',') {
			return false
		}
	}
}

// array reads an array's elements after its '[' and its ']' (depth
// counting it), calling fn (when not nil) with each.
func (s *scanner) array(depth int, fn func(value []byte) bool) bool {
	s.space()
	if s.is(']') {
		return true
	}
	for {
		start, ok := s.value(depth)
		if !ok || fn != nil && !fn(s.b[start:s.i]) {
			return false
		}
		s.space()
		if s.is(']') {
			return true
		}
		if !s.is(',') {
			return false
		}
	}
}

// str reads a string at s.i, quotes and all: escaped reports whether it
// holds an escape. Its text must be valid UTF-8, its escapes JSON's,
// a surrogate escaped only as half of a pair.
func (s *scanner) str() (escaped, ok bool) {
	if !s.is('"') {
		return false, false
	}
	b, i := s.b, s.i
	for {
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return false, false
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return escaped, true
		case c == '\\':
			escaped = true
			n, ok := escape(b[i:])
			if !ok {
				return false, false
			}
			i += n
		case c < 0x20:
			return false, false
		default:
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return false, false
			}
			i += n
		}
	}
}

// plain is the bytes a string holds as they are: printable ASCII but the
// quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// escape is the length of the escape b starts with (a surrogate pair's
// two), ok false for none JSON has.
func escape(b []byte) (n int, ok bool) {
	if len(b) < 2 {
		return 0, false
	}
	switch b[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
		r, ok := hex4(b[2:])
		switch {
		case !ok:
			return 0, false
		case utf16.IsSurrogate(r):
			if r >= 0xdc00 || len(b) < 12 || b[6] != '\\' || b[7] != 'u' {
				return 0, false
			}
			lo, ok := hex4(b[8:])
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return 0, false
			}
			return 12, true
		}
		return 6, true
	}
	return 0, false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unquote appends the text of the string q (quotes and all, read by
// str) to dst.
func unquote(dst, q []byte) ([]byte, bool) {
	q = q[1 : len(q)-1]
	for len(q) > 0 {
		i := bytes.IndexByte(q, '\\')
		if i < 0 {
			return append(dst, q...), true
		}
		dst = append(dst, q[:i]...)
		q = q[i:]
		n, ok := escape(q)
		if !ok {
			return nil, false
		}
		switch q[1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, _ := hex4(q[2:])
			if n == 12 {
				lo, _ := hex4(q[8:])
				r = utf16.DecodeRune(r, lo)
			}
			dst = utf8.AppendRune(dst, r)
		default: // " \ /
			dst = append(dst, q[1])
		}
		q = q[n:]
	}
	return dst, true
}

// number reads a number as RFC 8259 writes one.
func (s *scanner) number() bool {
	s.is('-')
	switch {
	case s.is('0'):
	case s.digits() == 0:
		return false
	}
	if s.is('.') && s.digits() == 0 {
		return false
	}
	if s.is('e') || s.is('E') {
		if !s.is('+') {
			s.is('-')
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

func (s *scanner) digits() int {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// names is the names an object has had: a few compared in place, many
// in a map, so that an object of a million members costs no more than
// reading it.
type names struct {
	few  [8][]byte
	n    int
	many map[string]struct{}
}

// add reports whether name is new, and remembers it.
func (ns *names) add(name []byte) bool {
	if ns.many != nil {
		if _, ok := ns.many[string(name)]; ok {
			return false
		}
		ns.many[string(name)] = struct{}{}
		return true
	}
	for _, s := range ns.few[:ns.n] {
		if bytes.Equal(s, name) {
			return false
		}
	}
	if ns.n < len(ns.few) {
		ns.few[ns.n] = name
		ns.n++
		return true
	}
	ns.many = make(map[string]struct{}, 2*len(ns.few))
	for _, s := range ns.few {
		ns.many[string(s)] = struct{}{}
	}
	ns.many[string(name)] = struct{}{}
	return true
}

// String is the text of a JSON string value as written (one Members or
// Elements handed on), false when v is no string.
func String(v []byte) (string, bool) {
	sc := scanner{b: v}
	escaped, ok := sc.str()
	if !ok || sc.i != len(v) {
		return "", false
	}
	if !escaped {
		return string(v[1 : len(v)-1]), true
	}
	t, ok := unquote(nil, v)
	return string(t), ok
}

// IsString reports whether v, a value as written, is the JSON string s.
func IsString(v []byte, s string) bool {
	if len(v) == len(s)+2 && v[0] == '"' && v[len(v)-1] == '"' && string(v[1:len(v)-1]) == s {
		return true
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return false
	}
	t, ok := String(v)
	return ok && t == s
}

// Bool is a JSON true or false as written; ok false for anything else.
func Bool(v []byte) (b, ok bool) {
	switch string(v) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// AppendString appends s as a JSON string: only what JSON requires is
// escaped (no HTML escaping), invalid UTF-8 refused; the same bytes as
// jsontext.AppendQuote (FuzzAppendString).
func AppendString(dst []byte, s string) ([]byte, error) {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				return dst, errInvalidUTF8
			}
			i += n
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}

var errInvalidUTF8 = errors.New("rawjson: invalid UTF-8 in a string")
