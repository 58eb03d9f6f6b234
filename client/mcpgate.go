package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ingestd/ingestd"
)

// VerdictFromMCP extracts the verdict from the result of an MCP call of
// ingestd's retrieve tool. result is the raw JSON of the result object
// ([]byte or json.RawMessage, the "result" member of the JSON-RPC
// response), or any value that marshals to it, such as the go-sdk's
// *mcp.CallToolResult.
//
// The verdict is carried twice, and both must be there and agree:
// structuredContent.verdict (read as strictly as VerdictFromJSON reads a
// REST body) and _meta["io.ingestd/verdict"] (ingestd.MCPVerdictKey, read
// with the same rules). It fails on a result that is an error (isError),
// lacks either verdict, carries a key twice in any object or a key that
// another parser could read as one of those, or whose two verdicts differ
// in any field. It does not judge the values: Validate does, and
// AllowedToolsMCP calls both.
//
// A result the go-sdk has already decoded has lost duplicate keys (its
// decoder keeps the last); pass the raw bytes where a host has them.
func VerdictFromMCP(result any) (*ingestd.Verdict, error) {
	var body []byte
	switch r := result.(type) {
	case nil:
		return nil, errors.New("no result")
	case []byte:
		body = r
	case json.RawMessage:
		body = r
	default:
		b, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("result: %w", err)
		}
		body = b
	}
	if !utf8.Valid(body) {
		return nil, errors.New("result is not valid UTF-8")
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("result is not a JSON object")
	}
	var structured, meta *ingestd.Verdict
	seen := map[string]bool{}
	for d.More() {
		key, err := readKey(d, seen)
		if err != nil {
			return nil, fmt.Errorf("result: %w", err)
		}
		switch key {
		case "structuredContent":
			var raw json.RawMessage
			if err := d.Decode(&raw); err != nil {
				return nil, fmt.Errorf("structuredContent: %w", err)
			}
			if structured, err = VerdictFromJSON(raw); err != nil {
				return nil, fmt.Errorf("structuredContent: %w", err)
			}
		case "_meta":
			if meta, err = readMetaVerdict(d); err != nil {
				return nil, fmt.Errorf("_meta: %w", err)
			}
		case "isError":
			tok, err := d.Token()
			if err != nil {
				return nil, fmt.Errorf("result: %w", err)
			}
			if tok != false {
				return nil, errors.New("the tool call failed (isError)")
			}
		default:
			if near(key, "structuredContent", "_meta", "isError") {
				return nil, fmt.Errorf("result has a key %q that another parser could read as a key ingestd sets", key)
			}
			if err := skipValue(d, 1); err != nil {
				return nil, fmt.Errorf("result: %w", err)
			}
		}
	}
	if err := closeDelim(d, '}'); err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("result has data after the JSON object")
	}
	switch {
	case structured == nil:
		return nil, errors.New("result has no structuredContent verdict")
	case meta == nil:
		return nil, fmt.Errorf("result has no verdict in _meta[%q]", ingestd.MCPVerdictKey)
	case !sameVerdict(structured, meta):
		return nil, errors.New("the verdicts in structuredContent and _meta differ")
	}
	return structured, nil
}

// readMetaVerdict reads the _meta object and the verdict under
// ingestd.MCPVerdictKey in it, nil when it has none.
func readMetaVerdict(d *json.Decoder) (*ingestd.Verdict, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, errors.New("is not an object")
	}
	var v *ingestd.Verdict
	seen := map[string]bool{}
	for d.More() {
		key, err := readKey(d, seen)
		if err != nil {
			return nil, err
		}
		switch {
		case key == ingestd.MCPVerdictKey:
			if v, err = readVerdict(d); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		case near(key, ingestd.MCPVerdictKey):
			return nil, fmt.Errorf("has a key %q that another parser could read as %q", key, ingestd.MCPVerdictKey)
		default:
			if err := skipValue(d, 1); err != nil {
				return nil, err
			}
		}
	}
	return v, closeDelim(d, '}')
}

// near reports whether key, without control characters, surrounding
// space and case, is one of names.
func near(key string, names ...string) bool {
	k := strings.TrimSpace(stripControls(key))
	for _, n := range names {
		if strings.EqualFold(k, n) {
			return true
		}
	}
	return false
}

func sameVerdict(a, b *ingestd.Verdict) bool {
	return a.ToolsAllowed == b.ToolsAllowed && a.Mode == b.Mode && a.Reason == b.Reason &&
		a.WouldBlock == b.WouldBlock && slices.Equal(a.UntrustedDocumentIDs, b.UntrustedDocumentIDs) &&
		(a.AllowedToolClasses == nil) == (b.AllowedToolClasses == nil) && slices.Equal(a.AllowedToolClasses, b.AllowedToolClasses)
}

// AllowedToolsMCP is AllowedTools over the result of an MCP retrieve call
// (see VerdictFromMCP): a result it cannot read with certainty, or a
// verdict Validate refuses, allows nothing (unless FailOpen).
func AllowedToolsMCP[T any](result any, tools []T, opts ...GateOption) []T {
	v, err := VerdictFromMCP(result)
	if err != nil {
		v = nil
	}
	return AllowedTools(v, tools, opts...)
}
