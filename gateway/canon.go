package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// Canonical returns the canonical JSON of a call's arguments: objects
// with their keys sorted, no insignificant space, numbers as written,
// every character outside printable ASCII escaped (\uXXXX), so the text
// a person is asked about shows no invisible or reordering character.
// Absent arguments are {}. It refuses what two parsers could read as two
// different calls: a repeated key in any object, invalid UTF-8, data
// after the value. The confirmation of a call is bound to this form.
func Canonical(raw json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return []byte("{}"), nil
	}
	if !utf8.Valid(raw) {
		return nil, errors.New("arguments are not valid UTF-8")
	}
	// Names are checked here, to say which one repeats; a lone surrogate
	// (\ud800), which readers decode differently, is refused by jsontext.
	c := canons.Get().(*canon)
	defer c.put()
	c.in = *bytes.NewBuffer(raw)
	c.d.Reset(&c.in, jsontext.AllowDuplicateNames(true))
	var b bytes.Buffer
	if err := canonValue(&c.d, &b, 0); err != nil {
		return nil, err
	}
	if _, err := c.d.ReadToken(); err != io.EOF {
		return nil, errors.New("arguments have data after the JSON value")
	}
	return b.Bytes(), nil
}

// canon is a decoder for Canonical, kept between calls.
type canon struct {
	in bytes.Buffer
	d  jsontext.Decoder
}

var canons = sync.Pool{New: func() any { return new(canon) }}

func (c *canon) put() {
	c.in = bytes.Buffer{}
	c.d.Reset(&c.in)
	canons.Put(c)
}

const maxDepth = 64

func canonValue(d *jsontext.Decoder, b *bytes.Buffer, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("arguments nest deeper than %d", maxDepth)
	}
	tok, err := d.ReadToken()
	if err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	switch tok.Kind() {
	case '[':
		b.WriteByte('[')
		for i := 0; d.PeekKind() != ']'; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := canonValue(d, b, depth+1); err != nil {
				return err
			}
		}
		_, _ = d.ReadToken()
		b.WriteByte(']')
	case '{':
		return canonObject(d, b, depth)
	case '"':
		writeString(b, tok.String())
	default: // a number as written, true, false, null
		b.WriteString(tok.String())
	}
	return nil
}

func canonObject(d *jsontext.Decoder, b *bytes.Buffer, depth int) error {
	type member struct {
		key string
		val []byte
	}
	var ms []member
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return fmt.Errorf("arguments: %w", err)
		}
		k := tok.String()
		if slices.ContainsFunc(ms, func(m member) bool { return m.key == k }) {
			return fmt.Errorf("arguments repeat the key %q", k)
		}
		var v bytes.Buffer
		if err := canonValue(d, &v, depth+1); err != nil {
			return err
		}
		ms = append(ms, member{k, v.Bytes()})
	}
	_, _ = d.ReadToken()
	slices.SortFunc(ms, func(a, c member) int { return strings.Compare(a.key, c.key) })
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, m.key)
		b.WriteByte(':')
		b.Write(m.val)
	}
	b.WriteByte('}')
	return nil
}

// writeString writes s as a JSON string in printable ASCII.
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r > 0xffff:
			r -= 0x10000
			fmt.Fprintf(b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			fmt.Fprintf(b, `\u%04x`, r)
		}
	}
	b.WriteByte('"')
}

// CallHash is the identity a confirmation is bound to: SHA-256 over the
// upstream, the tool, the canonical arguments and the turn, each
// length-prefixed so no two different calls share an encoding.
func CallHash(upstream, tool string, canonical []byte, turn string) string {
	h := sha256.New()
	for _, p := range [][]byte{[]byte(upstream), []byte(tool), canonical, []byte(turn)} {
		fmt.Fprintf(h, "%d:", len(p))
		h.Write(p)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// schemaHash is what a tool is pinned to at start: its description,
// input and output schemas. A change to any of them withholds the tool.
func schemaHash(desc string, in, out any) string {
	h := sha256.New()
	for _, v := range []any{desc, in, out} {
		b, _ := json.Marshal(v)
		c, err := Canonical(b)
		if err != nil {
			c = b
		}
		fmt.Fprintf(h, "%d:", len(c))
		h.Write(c)
	}
	return hex.EncodeToString(h.Sum(nil))
}
