package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ingestd/ingestd"
)

// maxDepth bounds nesting in a response, as encoding/json does.
const maxDepth = 10000

// VerdictFromJSON extracts the verdict from a raw POST /v1/retrieve (or
// Connect JSON) response body. It reads strictly, because JSON leaves
// duplicate keys undefined and parsers disagree on them (encoding/json
// keeps the last and matches keys case-insensitively): a proxy, a log or
// another client could read a different verdict than this gate. It fails
// on a body that is not valid UTF-8, not one JSON object, or followed by
// anything but whitespace; a key that appears twice in any object of the
// body; a top-level key that is "verdict" in another case (or with a
// control character); an absent or null verdict, one that is not an
// object, lacks a field, has a field it does not know, or a field of the
// wrong type (tools_allowed and would_block booleans, mode and reason
// strings, untrusted_document_ids and allowed_tool_classes arrays of
// strings). allowed_tool_classes alone may be absent (a server older than
// the graded verdict): Validate then judges by tools_allowed. It does not judge
// the values: Validate does, and AllowedToolsJSON calls both.
func VerdictFromJSON(body []byte) (*ingestd.Verdict, error) {
	if !utf8.Valid(body) {
		return nil, errors.New("response is not valid UTF-8")
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("response is not a JSON object")
	}
	var v *ingestd.Verdict
	seen := map[string]bool{}
	for d.More() {
		key, err := readKey(d, seen)
		if err != nil {
			return nil, fmt.Errorf("response: %w", err)
		}
		switch {
		case key == "verdict":
			if v, err = readVerdict(d); err != nil {
				return nil, fmt.Errorf("verdict: %w", err)
			}
		case strings.EqualFold(strings.TrimSpace(stripControls(key)), "verdict"):
			return nil, fmt.Errorf("response has a key %q that another parser could read as \"verdict\"", key)
		default:
			if err := skipValue(d, 1); err != nil {
				return nil, fmt.Errorf("response: %w", err)
			}
		}
	}
	if err := closeDelim(d, '}'); err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("response has data after the JSON object")
	}
	if v == nil {
		return nil, errors.New("response has no verdict")
	}
	return v, nil
}

// readVerdict reads the verdict object: exactly its five fields and
// allowed_tool_classes when present, each once, each of its type.
func readVerdict(d *json.Decoder) (*ingestd.Verdict, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, errors.New("is null")
	}
	if tok != json.Delim('{') {
		return nil, errors.New("is not an object")
	}
	var v ingestd.Verdict
	seen := map[string]bool{}
	for d.More() {
		key, err := readKey(d, seen)
		if err != nil {
			return nil, err
		}
		switch key {
		case "tools_allowed":
			v.ToolsAllowed, err = readBool(d, key)
		case "would_block":
			v.WouldBlock, err = readBool(d, key)
		case "mode":
			v.Mode, err = readString(d, key)
		case "reason":
			v.Reason, err = readString(d, key)
		case "untrusted_document_ids":
			v.UntrustedDocumentIDs, err = readStrings(d, key)
		case "allowed_tool_classes":
			var cs []string
			cs, err = readStrings(d, key)
			v.AllowedToolClasses = ingestd.ToolClasses{}
			for _, c := range cs {
				v.AllowedToolClasses = append(v.AllowedToolClasses, ingestd.ToolClass(c))
			}
		default:
			return nil, fmt.Errorf("unknown field %q", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := closeDelim(d, '}'); err != nil {
		return nil, err
	}
	for _, f := range []string{"tools_allowed", "mode", "reason", "untrusted_document_ids", "would_block"} {
		if !seen[f] {
			return nil, fmt.Errorf("field %q is missing", f)
		}
	}
	return &v, nil
}

// readKey reads an object key and refuses one seen before in the object.
func readKey(d *json.Decoder, seen map[string]bool) (string, error) {
	tok, err := d.Token()
	if err != nil {
		return "", err
	}
	key, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("expected an object key, got %v", tok)
	}
	if seen[key] {
		return "", fmt.Errorf("key %q appears twice in one object", key)
	}
	seen[key] = true
	return key, nil
}

func readBool(d *json.Decoder, field string) (bool, error) {
	tok, err := d.Token()
	if err != nil {
		return false, err
	}
	b, ok := tok.(bool)
	if !ok {
		return false, fmt.Errorf("field %q is not a boolean", field)
	}
	return b, nil
}

func readString(d *json.Decoder, field string) (string, error) {
	tok, err := d.Token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("field %q is not a string", field)
	}
	return s, nil
}

func readStrings(d *json.Decoder, field string) ([]string, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("field %q is not an array", field)
	}
	out := []string{}
	for d.More() {
		s, err := readString(d, field+" element")
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, closeDelim(d, ']')
}

// skipValue reads one value of any shape, refusing duplicate keys in
// every object inside it.
func skipValue(d *json.Decoder, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("nested deeper than %d", maxDepth)
	}
	tok, err := d.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for d.More() {
			if _, err := readKey(d, seen); err != nil {
				return err
			}
			if err := skipValue(d, depth+1); err != nil {
				return err
			}
		}
		return closeDelim(d, '}')
	case json.Delim('['):
		for d.More() {
			if err := skipValue(d, depth+1); err != nil {
				return err
			}
		}
		return closeDelim(d, ']')
	}
	return nil
}

// closeDelim reads the delimiter that closes the current object or array.
func closeDelim(d *json.Decoder, want json.Delim) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("expected %v, got %v", want, tok)
	}
	return nil
}

// stripControls drops C0 and C1 control characters and DEL.
func stripControls(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f && r < 0xa0 {
			return -1
		}
		return r
	}, s)
}
