package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/rawjson"
)

// The retrieve fast path. A tools/call of retrieve is nearly every request
// an agent host sends to /mcp, and answering it through the SDK costs more
// than the retrieval's own encoding: the SDK encodes the result, then
// validates and compacts it again on its way to the wire, so every fenced
// chunk is encoded about four times where REST encodes it once. The fast
// path answers exactly that one request shape itself, encoding the result
// once, and hands every other request to the SDK untouched.
//
// It is a subset, never a variant: a request takes it only when the SDK
// would read it as the same call, so the answer is the SDK's answer, byte
// for byte in meaning (TestFastPathAnswersAsTheSDK compares them). Anything
// unusual — another method or tool, a batch, a notification, unknown or
// repeated members, a protocol version past the ones whose exchange is
// fixed, a _meta the SDK would act on — goes to the SDK, which answers or
// refuses it as it always has. Authentication, scopes and the Host/Origin
// guard sit in front of Handler and see both paths alike; the verdict and
// scopes are the Retriever's, as on the SDK path.

// fastVersions are the protocol versions whose tools/call exchange is
// fixed (the header absent means 2025-03-26 to the SDK). Later versions
// change the exchange and go to the SDK.
var fastVersions = map[string]bool{"": true, "2024-11-05": true, "2025-03-26": true, "2025-06-18": true, "2025-11-25": true}

// buffers holds reply buffers between calls, so a reply is not grown
// from nothing each time.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

type fastPath struct {
	s    *server
	sdk  http.Handler
	max  int64
	fast bool
}

func (f *fastPath) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !f.fast || !f.eligible(r) {
		f.sdk.ServeHTTP(w, r)
		return
	}
	body, err := readBody(w, r, f.max)
	if err != nil {
		// The SDK's own answer to a body it cannot read.
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "failed to read body: "+err.Error(), http.StatusBadRequest)
		return
	}
	id, args, ok := parseRetrieveCall(body)
	if !ok {
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.sdk.ServeHTTP(w, r)
		return
	}
	var in ingestd.RetrieveRequest
	var res fastResult
	if err := decodeArgs(args, &in); err != nil {
		res.fail(f.s.describe(err))
	} else {
		if in.RequestID == "" {
			in.RequestID = r.Header.Get("X-Request-Id")
		}
		resp, err := f.s.r.Retrieve(r.Context(), in)
		if err != nil {
			res.fail(f.s.describe(err))
		} else {
			res.answer(resp)
		}
	}
	// One encoding of the result, straight into the reply. HTML is not
	// escaped: the reply is JSON read by a program, and the fences' angle
	// brackets would otherwise take six bytes each.
	buf := buffers.Get().(*bytes.Buffer)
	defer func() { buf.Reset(); buffers.Put(buf) }()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fastResponse{JSONRPC: "2.0", ID: id, Result: &res}); err != nil {
		f.s.log.Error("mcp: encode retrieve result", "err", err)
		buf.Reset()
		_ = enc.Encode(fastResponse{JSONRPC: "2.0", ID: id, Error: &fastError{Code: -32603, Message: "internal error"}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}

// eligible holds the request to the SDK's checks before it reads a body
// (method, media types, protocol version), conservatively: what it does
// not recognise goes to the SDK, which answers it as it would anyway.
func (f *fastPath) eligible(r *http.Request) bool {
	if r.Method != http.MethodPost || !fastVersions[r.Header.Get("Mcp-Protocol-Version")] {
		return false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	var jsonOK, streamOK bool
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			base, _, _ := strings.Cut(part, ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json":
				jsonOK = true
			case "text/event-stream":
				streamOK = true
			}
		}
	}
	return jsonOK && streamOK
}

func readBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	body := r.Body
	if max > 0 {
		body = http.MaxBytesReader(w, body, max)
	}
	b, err := io.ReadAll(body)
	r.Body.Close()
	return b, err
}

// parseRetrieveCall reads body as exactly one JSON-RPC request
// {"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"retrieve","arguments":ARGS}}
// — members in any order, each once, no other member; ID a string or an
// integer; params holding only name and, optionally, arguments. It
// returns the id and the arguments as they were written; ok is false for
// anything else, which the SDK is then given.
func parseRetrieveCall(body []byte) (id, args json.RawMessage, ok bool) {
	c, ok := parseToolCall(body)
	if !ok || c.name != "retrieve" || c.meta != nil {
		return nil, nil, false
	}
	return c.id, c.args, true
}

// toolCall is one tools/call request as parseToolCall read it.
type toolCall struct {
	id, args, meta json.RawMessage
	name           string
}

// parseToolCall reads body as exactly one JSON-RPC request
// {"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":NAME,"arguments":ARGS,"_meta":META}}
// — members in any order, each once, no other member; ID a string or an
// integer; params holding name and, optionally, arguments and _meta. The
// id, arguments and _meta are returned as they were written.
func parseToolCall(body []byte) (c toolCall, ok bool) {
	var params []byte
	seen := 0
	if !rawjson.Members(body, func(key, v []byte) bool {
		var bit int
		switch string(key) {
		case "jsonrpc":
			bit, ok = 1, rawjson.IsString(v, "2.0")
		case "id":
			bit, ok, c.id = 2, plainID(v), v
		case "method":
			bit, ok = 4, rawjson.IsString(v, "tools/call")
		case "params":
			bit, ok, params = 8, len(v) > 0 && v[0] == '{', v
		default:
			return false
		}
		seen |= bit
		return ok
	}) || seen != 15 {
		return toolCall{}, false
	}
	named := false
	if !rawjson.Members(params, func(key, v []byte) bool {
		switch string(key) {
		case "name":
			c.name, named = rawjson.String(v)
			return named
		case "arguments":
			c.args = v
		case "_meta":
			c.meta = v
			return v[0] == '{'
		default:
			return false
		}
		return true
	}) || !named {
		return toolCall{}, false
	}
	return c, true
}

// plainID is a JSON-RPC id the SDK keeps as it is: a string, or an
// integer of at most 15 digits (exact in any reader).
func plainID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		return true
	}
	digits := id
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

type fastResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *fastResult     `json:"result,omitempty"`
	Error   *fastError      `json:"error,omitempty"`
}

type fastError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// fastResult is a CallToolResult of retrieve, shaped as the SDK writes
// one: the same members RetrieveResult and toolError fill.
type fastResult struct {
	Meta              map[string]any            `json:"_meta,omitempty"`
	Content           []fastText                `json:"content"`
	StructuredContent *ingestd.RetrieveResponse `json:"structuredContent,omitempty"`
	IsError           bool                      `json:"isError,omitempty"`
}

type fastText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (r *fastResult) answer(resp *ingestd.RetrieveResponse) {
	out, texts := resultParts(resp)
	r.Content = make([]fastText, len(texts))
	for i, t := range texts {
		r.Content[i] = fastText{Type: "text", Text: t}
	}
	r.StructuredContent = out
	if out.Verdict != nil {
		r.Meta = map[string]any{VerdictMetaKey: out.Verdict}
	}
}

func (r *fastResult) fail(code, msg string) {
	r.IsError = true
	r.Content = []fastText{{Type: "text", Text: code + ": " + msg}}
}
