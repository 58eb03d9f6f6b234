package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

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
	t, _ := stdio(r, w)
	return t
}

func stdio(r io.Reader, w io.Writer) (mcp.Transport, *lineFilter) {
	lw := &lineWriter{w: w}
	f := &lineFilter{r: bufio.NewReaderSize(r, 64<<10), w: lw}
	return &mcp.IOTransport{Reader: f, Writer: lw}, f
}

// FastCaller is an Extension that answers some tools/call requests on
// stdio itself, before the SDK reads them: the gateway's forwarded
// reads, which through the SDK would cost a second JSON-RPC stack on
// every hop (docs/BENCHMARKS.md). It is asked about each tools/call of
// the session whose _meta holds nothing the SDK acts on beyond the
// protocol's own request keys; false hands the call to the SDK
// untouched, so it must decide before it does anything. run answers the
// call as the SDK path's handler would have.
type FastCaller interface {
	FastCall(ss *mcp.ServerSession, name string, args, meta json.RawMessage) (run func(context.Context) *mcp.CallToolResult, ok bool)
}

// ServeStdio serves the server o describes on r and w (StdioTransport)
// until r ends or ctx does. When o.Extension is a FastCaller, the
// tools/call requests it takes are answered by it beside the SDK's
// session, each in its own goroutine, and a host's
// notifications/cancelled reaches them too.
func ServeStdio(ctx context.Context, o Options, r io.Reader, w io.Writer) error {
	srv := New(o)
	t, f := stdio(r, w)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if fast, ok := o.Extension.(FastCaller); ok {
		info, _ := json.Marshal(implementation(o.Version))
		f.lane = &lane{ctx: ctx, fast: fast, info: info, inflight: map[string]context.CancelFunc{}}
	}
	ss, err := srv.Connect(ctx, t, nil)
	if err != nil {
		return err
	}
	if f.lane != nil {
		f.lane.ss.Store(ss) // until now every line was the SDK's
	}
	go func() {
		<-ctx.Done()
		_ = ss.Close()
	}()
	return ss.Wait()
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
	lane    *lane  // nil without a FastCaller
}

// lane is the calls a FastCaller answers beside the SDK.
type lane struct {
	ctx  context.Context
	fast FastCaller
	info json.RawMessage // the server's Implementation, for the per-request protocol's results
	ss   atomic.Pointer[mcp.ServerSession]

	mu       sync.Mutex
	inflight map[string]context.CancelFunc // by the request's id, as written
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
	if f.lane != nil && trimmed[0] == '{' {
		if f.lane.take(trimmed, f.w) {
			return nil, err
		}
		f.lane.cancelled(trimmed)
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

// take answers line through the FastCaller when the line is a tools/call
// it takes; false leaves the line to the SDK.
func (l *lane) take(line []byte, w io.Writer) bool {
	ss := l.ss.Load()
	if ss == nil || !bytes.Contains(line, []byte(`"tools/call"`)) {
		return false
	}
	c, ok := parseToolCall(line)
	if !ok {
		return false
	}
	perRequest, ok := requestProtocol(c.meta)
	if !ok {
		return false
	}
	if !perRequest {
		if ip := ss.InitializeParams(); ip == nil || !fastVersions[ip.ProtocolVersion] {
			return false
		}
	}
	run, ok := l.fast.FastCall(ss, c.name, c.args, c.meta)
	if !ok {
		return false
	}
	key := string(c.id)
	ctx, cancel := context.WithCancel(l.ctx)
	l.mu.Lock()
	l.inflight[key] = cancel
	l.mu.Unlock()
	go func() {
		defer func() {
			l.mu.Lock()
			delete(l.inflight, key)
			l.mu.Unlock()
			cancel()
		}()
		_, _ = w.Write(l.reply(c.id, run(ctx), perRequest))
	}()
	return true
}

// reply is the response line to a lane call, encoded as the SDK encodes
// its result; under the per-request protocol with the two things the SDK
// adds to every result there: resultType complete, and the server's
// Implementation in _meta.
func (l *lane) reply(id json.RawMessage, res *mcp.CallToolResult, perRequest bool) []byte {
	if perRequest {
		if _, ok := res.Meta[mcp.MetaKeyServerInfo]; !ok {
			m := make(mcp.Meta, len(res.Meta)+1)
			maps.Copy(m, res.Meta)
			m[mcp.MetaKeyServerInfo] = l.info
			res.Meta = m
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		b, _ = json.Marshal(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "ingestd: the result could not be encoded: " + err.Error()}}})
	}
	const complete = `"resultType":"complete"`
	out := make([]byte, 0, len(b)+len(id)+64)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":`...)
	if perRequest && !bytes.HasSuffix(b, []byte(complete+"}")) {
		out = append(out, '{')
		out = append(out, complete...)
		if len(b) > 2 {
			out = append(out, ',')
		}
		b = b[1:]
	}
	out = append(out, b...)
	return append(out, "}\n"...)
}

// requestProtocol reads a request's _meta for the lane: perRequest when
// it carries the per-request protocol's keys (2026-07-28: a protocol
// version, the client's capabilities, optionally its info), ok false
// when it holds anything else the SDK acts on (a progress token, a log
// level, another version, a key of MCP's namespace the lane does not
// know) or keys it cannot read.
func requestProtocol(meta json.RawMessage) (perRequest, ok bool) {
	if meta == nil {
		return false, true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return false, false
	}
	for k, v := range m {
		switch {
		case k == mcp.MetaKeyProtocolVersion:
			var version string
			if json.Unmarshal(v, &version) != nil || version != "2026-07-28" {
				return false, false
			}
			perRequest = true
		case k == mcp.MetaKeyClientCapabilities:
			var caps mcp.ClientCapabilities
			if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &caps) != nil {
				return false, false
			}
		case k == mcp.MetaKeyClientInfo:
			var info mcp.Implementation
			if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &info) != nil {
				return false, false
			}
		case k == "progressToken", strings.HasPrefix(k, "io.modelcontextprotocol/"), strings.HasPrefix(k, "modelcontextprotocol.io/"):
			return false, false
		}
	}
	_, caps := m[mcp.MetaKeyClientCapabilities]
	_, info := m[mcp.MetaKeyClientInfo]
	if !perRequest && (caps || info) || perRequest && !caps {
		return false, false
	}
	return perRequest, true
}

// cancelled cancels the lane's call a notifications/cancelled names; the
// notification goes on to the SDK, which ignores an id it does not know.
func (l *lane) cancelled(line []byte) {
	l.mu.Lock()
	n := len(l.inflight)
	l.mu.Unlock()
	if n == 0 || !bytes.Contains(line, []byte(`"notifications/cancelled"`)) {
		return
	}
	var v struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &v) != nil || v.Method != "notifications/cancelled" {
		return
	}
	l.mu.Lock()
	cancel := l.inflight[string(v.Params.RequestID)]
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
