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
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ingestd/ingestd/internal/rawjson"
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
// untouched, so it must decide before it does anything. start makes the
// call, in the reader's goroutine (so it must not wait on anything but a
// bounded write), and done is called once with the answer the SDK
// path's handler would have given, from whichever goroutine has it:
// res, or raw, the JSON of a result to be written as it is (one object,
// strictly valid, with its content, holding nothing the SDK would add
// or refuse); the cancel start returns abandons the call (a host's
// notifications/cancelled, the session's end).
type FastCaller interface {
	FastCall(ss *mcp.ServerSession, name string, args json.RawMessage, meta map[string]json.RawMessage) (start func(done Done) (cancel func()), ok bool)
}

// Done is how a FastCaller answers a call: a result, or the JSON of one.
type Done = func(res *mcp.CallToolResult, raw json.RawMessage)

// ServeStdio serves the server o describes on r and w (StdioTransport)
// until r ends or ctx does. When o.Extension is a FastCaller, the
// tools/call requests it takes are answered by it beside the SDK's
// session, and a host's notifications/cancelled reaches them too.
func ServeStdio(ctx context.Context, o Options, r io.Reader, w io.Writer) error {
	srv := New(o)
	t, f := stdio(r, w)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if fast, ok := o.Extension.(FastCaller); ok {
		info, _ := json.Marshal(implementation(o.Version))
		f.lane = &lane{fast: fast, info: info, inflight: map[string]*inflight{}}
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
		if f.lane != nil {
			f.lane.cancelAll()
		}
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
	fast FastCaller
	info json.RawMessage // the server's Implementation, for the per-request protocol's results
	ss   atomic.Pointer[mcp.ServerSession]

	mu       sync.Mutex
	inflight map[string]*inflight // by the request's id, as written
}

// inflight is a lane call not yet answered.
type inflight struct{ cancel func() }

// cancelAll abandons every call not yet answered.
func (l *lane) cancelAll() {
	l.mu.Lock()
	var cancels []func()
	for _, c := range l.inflight {
		if c.cancel != nil {
			cancels = append(cancels, c.cancel)
		}
	}
	l.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
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
	// A call the lane takes has been read whole by its strict parser.
	if f.lane != nil && len(trimmed) > 0 && trimmed[0] == '{' && f.lane.take(trimmed, f.w) {
		return nil, err
	}
	if !json.Valid(trimmed) {
		f.answer(nil, jsonrpc.CodeParseError, "Parse error: the line is not one JSON value")
		return nil, err
	}
	if f.lane != nil && trimmed[0] == '{' {
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
	meta, perRequest, ok := requestProtocol(c.meta)
	if !ok {
		return false
	}
	if !perRequest {
		if ip := ss.InitializeParams(); ip == nil || !fastVersions[ip.ProtocolVersion] {
			return false
		}
	}
	start, ok := l.fast.FastCall(ss, c.name, c.args, meta)
	if !ok {
		return false
	}
	key := string(c.id)
	call := &inflight{}
	l.mu.Lock()
	l.inflight[key] = call
	l.mu.Unlock()
	cancel := start(func(res *mcp.CallToolResult, raw json.RawMessage) {
		l.mu.Lock()
		if l.inflight[key] == call {
			delete(l.inflight, key)
		}
		l.mu.Unlock()
		if raw != nil {
			_, _ = w.Write(l.rawReply(c.id, raw, perRequest))
		} else {
			_, _ = w.Write(l.reply(c.id, res, perRequest))
		}
	})
	// A cancel is read on this goroutine, after this returns: it finds
	// the call's cancel set, or the call gone.
	l.mu.Lock()
	call.cancel = cancel
	l.mu.Unlock()
	return true
}

// reply is the response line to a lane call: the result with the
// members the SDK writes for it (an input request never reaches here:
// the gateway refuses an upstream's), text content written directly,
// fences' angle brackets unescaped as on the retrieve fast path; under
// the per-request protocol with the two things the SDK adds to every
// result there: resultType complete, and the server's Implementation in
// _meta.
func (l *lane) reply(id json.RawMessage, res *mcp.CallToolResult, perRequest bool) []byte {
	if b, ok := l.plainReply(id, res, perRequest); ok {
		return b
	}
	return l.encodedReply(id, res, perRequest)
}

// rawReply is the response line to a lane call answered with its
// result's JSON: the bytes as they are, and under the per-request
// protocol the two members the SDK adds there (reply) spliced in, or,
// for a result with a _meta or a resultType of its own, added by
// decoding it.
func (l *lane) rawReply(id, raw json.RawMessage, perRequest bool) []byte {
	n, plain := 0, true
	if perRequest && !rawjson.Members(raw, func(k, _ []byte) bool {
		n++
		plain = plain && string(k) != "_meta" && string(k) != "resultType"
		return plain
	}) || !plain {
		res := new(mcp.CallToolResult)
		if err := json.Unmarshal(raw, res); err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "ingestd: the result could not be read: " + err.Error()}}}
		}
		return l.reply(id, res, perRequest)
	}
	b := make([]byte, 0, len(raw)+len(id)+len(l.info)+128)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	if !perRequest {
		b = append(b, raw...)
		return append(b, "}\n"...)
	}
	b = append(b, raw[:len(raw)-1]...) // the object open
	if n > 0 {
		b = append(b, ',')
	}
	b = append(b, `"_meta":{"`+mcp.MetaKeyServerInfo+`":`...)
	b = append(b, l.info...)
	return append(b, `},"resultType":"complete"}}`+"\n"...)
}

// resultMeta is the _meta of a lane call's result: under the per-request
// protocol with the server's Implementation.
func (l *lane) resultMeta(res *mcp.CallToolResult, perRequest bool) mcp.Meta {
	if !perRequest {
		return res.Meta
	}
	if _, ok := res.Meta[mcp.MetaKeyServerInfo]; ok {
		return res.Meta
	}
	m := make(mcp.Meta, len(res.Meta)+1)
	maps.Copy(m, res.Meta)
	m[mcp.MetaKeyServerInfo] = l.info
	return m
}

// encodedReply is reply written by encoding/json, for any result.
func (l *lane) encodedReply(id json.RawMessage, res *mcp.CallToolResult, perRequest bool) []byte {
	w := laneResult{Meta: l.resultMeta(res, perRequest), StructuredContent: res.StructuredContent, IsError: res.IsError}
	if perRequest {
		w.ResultType = "complete"
	}
	if res.Content != nil {
		w.Content = make([]any, len(res.Content))
		for i, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok && t.Meta == nil && t.Annotations == nil {
				w.Content[i] = fastText{Type: "text", Text: t.Text}
			} else {
				w.Content[i] = c
			}
		}
	}
	buf := buffers.Get().(*bytes.Buffer)
	defer func() { buf.Reset(); buffers.Put(buf) }()
	buf.WriteString(`{"jsonrpc":"2.0","id":`)
	buf.Write(id)
	buf.WriteString(`,"result":`)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&w); err != nil {
		buf.Reset()
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": jsonrpc.CodeInternalError, "message": "ingestd: the result could not be encoded: " + err.Error()}})
		return append(b, '\n')
	}
	buf.Truncate(buf.Len() - 1) // the encoder's newline
	buf.WriteString("}\n")
	return bytes.Clone(buf.Bytes())
}

// plainReply is reply written by hand for the common result, text
// content and a structuredContent as the upstream wrote it, in the
// members and order the encoder would write; ok false for anything
// else, which the encoder then writes.
func (l *lane) plainReply(id json.RawMessage, res *mcp.CallToolResult, perRequest bool) (b []byte, ok bool) {
	var structured json.RawMessage
	switch v := res.StructuredContent.(type) {
	case nil:
	case json.RawMessage:
		if structured = v; len(v) == 0 {
			return nil, false
		}
	default:
		return nil, false
	}
	b = make([]byte, 0, 256+len(structured)+textBytes(res.Content))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{`...)
	meta := l.resultMeta(res, perRequest)
	var err error
	if len(meta) > 0 {
		b = append(b, `"_meta":{`...)
		for i, k := range slices.Sorted(maps.Keys(meta)) {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = rawjson.AppendString(b, k); err != nil {
				return nil, false
			}
			b = append(b, ':')
			switch v := meta[k].(type) {
			case string:
				b, err = rawjson.AppendString(b, v)
			case json.RawMessage:
				b = append(b, v...)
			default:
				var vb []byte
				vb, err = json.Marshal(v)
				b = append(b, vb...)
			}
			if err != nil {
				return nil, false
			}
		}
		b = append(b, "},"...)
	}
	if res.Content == nil {
		b = append(b, `"content":null`...)
	} else {
		b = append(b, `"content":[`...)
		for i, c := range res.Content {
			t, ok := c.(*mcp.TextContent)
			if !ok || t.Meta != nil || t.Annotations != nil {
				return nil, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"text","text":`...)
			if b, err = rawjson.AppendString(b, t.Text); err != nil {
				return nil, false
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if structured != nil {
		b = append(b, `,"structuredContent":`...)
		b = append(b, structured...)
	}
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	if perRequest {
		b = append(b, `,"resultType":"complete"`...)
	}
	return append(b, "}}\n"...), true
}

func textBytes(cs []mcp.Content) (n int) {
	for _, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok {
			n += len(t.Text) + len(t.Text)/8 + 32
		}
	}
	return n
}

// laneResult is a CallToolResult as the lane writes it.
type laneResult struct {
	Meta              mcp.Meta `json:"_meta,omitempty"`
	Content           []any    `json:"content"`
	StructuredContent any      `json:"structuredContent,omitempty"`
	IsError           bool     `json:"isError,omitempty"`
	ResultType        string   `json:"resultType,omitempty"`
}

// requestProtocol reads a request's _meta for the lane, its members
// returned as written: perRequest when it carries the per-request
// protocol's keys (2026-07-28: a protocol version, the client's
// capabilities, optionally its info), ok false when it holds anything
// else the SDK acts on (a progress token, a log level, another version,
// a key of MCP's namespace the lane does not know) or keys it cannot
// read.
func requestProtocol(meta json.RawMessage) (m map[string]json.RawMessage, perRequest, ok bool) {
	if meta == nil {
		return nil, false, true
	}
	var caps, info bool
	m = map[string]json.RawMessage{}
	if !rawjson.Members(meta, func(k, v []byte) bool {
		key := string(k)
		switch {
		case key == mcp.MetaKeyProtocolVersion:
			perRequest = rawjson.IsString(v, "2026-07-28")
			if !perRequest {
				return false
			}
		case key == mcp.MetaKeyClientCapabilities:
			caps = true
			if !sdkReads[mcp.ClientCapabilities](capsDecoded, v) {
				return false
			}
		case key == mcp.MetaKeyClientInfo:
			info = true
			if !sdkReads[mcp.Implementation](infoDecoded, v) {
				return false
			}
		case key == "progressToken", strings.HasPrefix(key, "io.modelcontextprotocol/"), strings.HasPrefix(key, "modelcontextprotocol.io/"):
			return false
		}
		m[key] = v
		return true
	}) {
		return nil, false, false
	}
	if !perRequest && (caps || info) || perRequest && !caps {
		return nil, false, false
	}
	return m, perRequest, true
}

// sdkReads reports whether v is an object the SDK decodes as a T. A
// host sends the same capabilities and info with every request, so the
// last few objects that decoded are remembered in seen.
func sdkReads[T any](seen *decoded, v []byte) bool {
	if len(v) == 0 || v[0] != '{' {
		return false
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for _, s := range seen.ok {
		if bytes.Equal(s, v) {
			return true
		}
	}
	var t T
	if json.Unmarshal(v, &t) != nil {
		return false
	}
	seen.ok[seen.next%len(seen.ok)] = bytes.Clone(v)
	seen.next++
	return true
}

// decoded is objects that decoded as one type, the last few.
type decoded struct {
	mu   sync.Mutex
	ok   [8][]byte
	next int
}

var capsDecoded, infoDecoded = new(decoded), new(decoded)

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
	var cancel func()
	if c := l.inflight[string(v.Params.RequestID)]; c != nil {
		cancel = c.cancel
	}
	l.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
