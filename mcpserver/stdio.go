package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxStdioLineBytes bounds one message on stdio, as MaxBodyBytes bounds
// one over HTTP in cmd's wiring.
const MaxStdioLineBytes = 4 << 20

// StdioTransport is MCP's stdio transport over r and w (stdin, stdout)
// that survives a bad line. The SDK's own reads one JSON stream and ends
// the session at the first line that is not a JSON-RPC message; this one
// reads line by line, as the stdio transport frames messages, answers a
// line that is not JSON (or is longer than MaxStdioLineBytes) with
// JSON-RPC's parse error (-32700) and one that is JSON but no JSON-RPC
// message with invalid request (-32600), both with the request's id when
// one can be read and null otherwise, and hands every other line to the
// SDK unchanged. Closing it closes neither r nor w.
func StdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	lw := &lineWriter{w: w}
	return &mcp.IOTransport{Reader: &lineFilter{r: bufio.NewReaderSize(r, 64<<10), w: lw}, Writer: lw}
}

// lineWriter serialises the SDK's messages and the filter's answers, so
// no two lines interleave.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lineWriter) Close() error { return nil }

// lineFilter passes the SDK the lines that are JSON-RPC messages and
// answers the others itself.
type lineFilter struct {
	r       *bufio.Reader
	w       *lineWriter
	pending []byte // the rest of a good line, for the SDK
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, err := f.line()
		if len(line) > 0 {
			f.pending = line
		}
		if err != nil && len(f.pending) == 0 {
			return 0, err
		}
		if err != nil {
			break
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

func (f *lineFilter) Close() error { return nil }

// errLineTooLong marks a line past MaxStdioLineBytes, discarded to its end.
var errLineTooLong = errors.New("line too long")

// line reads the next line and returns it with its newline when it is a
// message for the SDK, nil when it answered it itself (or it was blank).
func (f *lineFilter) line() ([]byte, error) {
	raw, err := f.readLine()
	if errors.Is(err, errLineTooLong) {
		f.answer(nil, jsonrpc.CodeParseError, fmt.Sprintf("Parse error: a message is longer than %d bytes", MaxStdioLineBytes))
		return nil, nil
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, err
	}
	trimmed := bytes.TrimRight(raw, "\r\n")
	if !json.Valid(trimmed) {
		f.answer(nil, jsonrpc.CodeParseError, "Parse error: the line is not one JSON value")
		return nil, err
	}
	if trimmed[0] != '[' { // a batch is the SDK's to refuse or serve
		if _, derr := jsonrpc.DecodeMessage(trimmed); derr != nil || !isMessage(trimmed) {
			f.answer(idOf(trimmed), jsonrpc.CodeInvalidRequest, "Invalid Request: the line is not a JSON-RPC 2.0 request, notification or response")
			return nil, err
		}
	}
	return append(trimmed, '\n'), err
}

// readLine reads up to and including the next newline, at most
// MaxStdioLineBytes of it.
func (f *lineFilter) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := f.r.ReadSlice('\n')
		if len(line)+len(chunk) > MaxStdioLineBytes {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = f.r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// isMessage reports whether msg has what JSON-RPC 2.0 asks of a request
// or notification (a method) or of a response (an id, and a result or an
// error), which the SDK's decoder does not check: it would take the rest
// for a response to nothing and leave the sender waiting.
func isMessage(msg []byte) bool {
	var v struct {
		Method *string          `json:"method"`
		ID     json.RawMessage  `json:"id"`
		Result json.RawMessage  `json:"result"`
		Error  *json.RawMessage `json:"error"`
	}
	if json.Unmarshal(msg, &v) != nil {
		return false
	}
	return v.Method != nil || len(v.ID) > 0 && (len(v.Result) > 0 || v.Error != nil)
}

// idOf is the id of a JSON object that has a string or number one, nil
// otherwise (answered as null).
func idOf(msg []byte) any {
	var v struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &v) != nil || len(v.ID) == 0 {
		return nil
	}
	var id any
	dec := json.NewDecoder(bytes.NewReader(v.ID))
	dec.UseNumber()
	if dec.Decode(&id) != nil {
		return nil
	}
	switch id.(type) {
	case string, json.Number:
		return id
	}
	return nil
}

// answer writes a JSON-RPC error response.
func (f *lineFilter) answer(id any, code int64, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	_, _ = f.w.Write(append(b, '\n'))
}
