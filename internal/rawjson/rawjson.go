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
	"io"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// reader is a decoder reading straight from the caller's bytes: jsontext
// parses a bytes.Buffer in place, so every value it returns is a slice
// of the input.
type reader struct {
	buf  bytes.Buffer
	dec  jsontext.Decoder
	name []byte // a name with escapes, unquoted
}

var readers = sync.Pool{New: func() any { return new(reader) }}

func get(b []byte) *reader {
	r := readers.Get().(*reader)
	r.buf = *bytes.NewBuffer(b)
	r.dec.Reset(&r.buf)
	return r
}

func (r *reader) put() {
	r.buf = bytes.Buffer{}
	r.dec.Reset(&r.buf) // drop the reference to the caller's bytes
	r.name = r.name[:0]
	readers.Put(r)
}

// Members calls fn with the name (unquoted) and the value (as written)
// of each member of the one JSON object b holds, in order, until fn
// returns false. Both slices are valid only during the call, and must
// not be changed. It reports whether b is exactly one valid object and
// fn took every member.
func Members(b []byte, fn func(name, value []byte) bool) bool {
	r := get(b)
	defer r.put()
	d := &r.dec
	if t, err := d.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for d.PeekKind() != '}' {
		raw, err := d.ReadValue() // the name, quoted
		if err != nil {
			return false
		}
		name := raw[1 : len(raw)-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			if r.name, err = jsontext.AppendUnquote(r.name[:0], raw); err != nil {
				return false
			}
			name = r.name
		}
		v, err := d.ReadValue()
		if err != nil || !fn(name, v) {
			return false
		}
	}
	return end(d)
}

// Elements calls fn with each element of the one JSON array b holds, as
// written, until fn returns false; as Members.
func Elements(b []byte, fn func(value []byte) bool) bool {
	r := get(b)
	defer r.put()
	d := &r.dec
	if t, err := d.ReadToken(); err != nil || t.Kind() != '[' {
		return false
	}
	for d.PeekKind() != ']' {
		v, err := d.ReadValue()
		if err != nil || !fn(v) {
			return false
		}
	}
	return end(d)
}

// end reads the closing delimiter and checks that nothing follows it.
func end(d *jsontext.Decoder) bool {
	if _, err := d.ReadToken(); err != nil {
		return false
	}
	_, err := d.ReadToken()
	return err == io.EOF
}

// String is the text of a JSON string value as written (one Members or
// Elements handed on), false when v is no string.
func String(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	s, err := jsontext.AppendUnquote(nil, v)
	return string(s), err == nil
}

// IsString reports whether v, a value as written, is the JSON string s.
func IsString(v []byte, s string) bool {
	if len(v) == len(s)+2 && v[0] == '"' && string(v[1:len(v)-1]) == s {
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
// escaped (no HTML escaping), invalid UTF-8 refused.
func AppendString(dst []byte, s string) ([]byte, error) {
	return jsontext.AppendQuote(dst, s)
}
