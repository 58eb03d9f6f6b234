package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdioAnswersParseErrorsAndGoesOn: a line that is not JSON, or not a
// JSON-RPC message, is answered with JSON-RPC's error for it (-32700,
// -32600) and the session serves the lines after it.
func TestStdioAnswersParseErrorsAndGoesOn(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := New(Options{Retriever: canned{}, Version: "test"})
	done := make(chan error, 1)
	go func() {
		// A session that ends closes both pipes, so the test fails
		// instead of waiting on a server that has gone.
		err := srv.Run(t.Context(), StdioTransport(inR, outW))
		inR.Close()
		outW.Close()
		done <- err
	}()
	out := bufio.NewScanner(outR)
	out.Buffer(nil, 1<<20)
	answer := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("write %q: %v (the session ended)", line, err)
		}
		if !out.Scan() {
			t.Fatalf("no answer to %q: %v", line, out.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("answer %q: %v", out.Bytes(), err)
		}
		return m
	}
	code := func(m map[string]any) float64 {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c
	}
	if m := answer(`{"jsonrpc":"2.0","id":1,"method":`); code(m) != -32700 || m["id"] != nil {
		t.Errorf("a cut-off line: %v, want -32700 with a null id", m)
	}
	if m := answer(`not json at all`); code(m) != -32700 {
		t.Errorf("not JSON: %v, want -32700", m)
	}
	if m := answer(`{"jsonrpc":"2.0","id":7,"params":{}}`); code(m) != -32600 || m["id"] != float64(7) {
		t.Errorf("no method: %v, want -32600 with id 7", m)
	}
	init := `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	if m := answer(init); m["result"] == nil {
		t.Fatalf("initialize after the bad lines: %v, want a result", m)
	}
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if m := answer(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); !strings.Contains(jsonString(t, m), `"retrieve"`) {
		t.Errorf("tools/list: %v, want the retrieve tool", m)
	}
	inW.Close()
	if err := <-done; err != nil && err != io.EOF {
		t.Logf("run ended: %v", err)
	}
}

func jsonString(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRequestProtocol: the lane takes a call whose _meta holds nothing
// the SDK acts on beyond the per-request protocol's own keys, and leaves
// every other call to the SDK.
func TestRequestProtocol(t *testing.T) {
	const caps = `"io.modelcontextprotocol/clientCapabilities":{}`
	const v = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
	for _, tc := range []struct {
		meta           string
		perRequest, ok bool
	}{
		{"", false, true},
		{`{"io.ingestd/turn":"t1","traceparent":"00-x"}`, false, true},
		{`{` + v + `,` + caps + `}`, true, true},
		{`{` + v + `,` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"h","version":"1"}}`, true, true},
		{`{` + v + `}`, false, false},                                                           // no capabilities
		{`{` + caps + `}`, false, false},                                                        // capabilities without a version
		{`{"io.modelcontextprotocol/protocolVersion":"2099-01-01",` + caps + `}`, false, false}, // a version the lane does not know
		{`{` + v + `,` + caps + `,"io.modelcontextprotocol/logLevel":"debug"}`, false, false},
		{`{"progressToken":7}`, false, false},
		{`{` + v + `,"io.modelcontextprotocol/clientCapabilities":{"roots":5}}`, false, false},
		{`[1]`, false, false},
	} {
		var meta json.RawMessage
		if tc.meta != "" {
			meta = json.RawMessage(tc.meta)
		}
		_, perRequest, ok := requestProtocol(meta)
		if perRequest != tc.perRequest || ok != tc.ok {
			t.Errorf("%s: perRequest %v ok %v, want %v %v", tc.meta, perRequest, ok, tc.perRequest, tc.ok)
		}
	}
}

// The lane's reply written by hand says what the encoder's says, and is
// left to the encoder for what it does not write.
func TestPlainReplyAsEncoded(t *testing.T) {
	l := &lane{info: json.RawMessage(`{"name":"ingestd","version":"dev"}`)}
	text := func(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }
	for i, res := range []*mcp.CallToolResult{
		{Content: text("plain")},
		{Content: []mcp.Content{}},
		{},
		{Content: text("<fence> & \"quotes\"\n\u2028 é \x01"), IsError: true},
		{Content: append(text("one"), text("two")...), StructuredContent: json.RawMessage(`{"a": [1, 2], "b":"<x>"}`)},
		{Content: text("m"), Meta: mcp.Meta{"io.ingestd/turn_scope": "session", "n": 3.5, "nested": map[string]any{"x": []any{true, nil}}, "raw": json.RawMessage(`{"k":1}`)}},
		{Content: text("s"), Meta: mcp.Meta{mcp.MetaKeyServerInfo: map[string]any{"name": "upstream"}}},
	} {
		for _, perRequest := range []bool{false, true} {
			hand, ok := l.plainReply(json.RawMessage(`7`), res, perRequest)
			if !ok {
				t.Fatalf("%d: a plain result not written by hand", i)
			}
			if !sameJSON(t, hand, l.encodedReply(json.RawMessage(`7`), res, perRequest)) {
				t.Errorf("%d (per-request %v):\nhand    %s\nencoded %s", i, perRequest, hand, l.encodedReply(json.RawMessage(`7`), res, perRequest))
			}
		}
	}
	for i, res := range []*mcp.CallToolResult{
		{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("x"), MIMEType: "image/png"}}},
		{Content: []mcp.Content{&mcp.TextContent{Text: "a", Meta: mcp.Meta{"k": "v"}}}},
		{Content: text("a"), StructuredContent: map[string]any{"a": 1}},
		{Content: text("bad \xff")},
	} {
		if b, ok := l.plainReply(json.RawMessage(`7`), res, false); ok {
			t.Errorf("%d: written by hand: %s", i, b)
		}
	}
}

// fastCaller takes every call of "slow" and answers it only when it is
// cancelled, saying which calls were.
type fastCaller struct{ cancelled chan string }

func (fastCaller) Install(*mcp.Server) {}

func (f fastCaller) FastCall(_ *mcp.ServerSession, name string, args json.RawMessage, _ map[string]json.RawMessage) (func(Done) func(), bool) {
	if name != "slow" {
		return nil, false
	}
	return func(done Done) func() {
		var once sync.Once
		return func() {
			once.Do(func() {
				f.cancelled <- string(args)
				done(&mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the lane's call, cancelled"}}}, nil)
			})
		}
	}, true
}

// A lane call not yet answered is abandoned by the host's
// notifications/cancelled naming its id, and by the session's end.
func TestLaneCallsAreCancelled(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	f := fastCaller{cancelled: make(chan string, 4)}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- ServeStdio(ctx, Options{Retriever: canned{}, Version: "test", Extension: f}, inR, outW)
		outW.Close()
	}()
	// The ids answered, the lane's answers marked.
	answered := make(chan string, 16)
	go func() {
		out := bufio.NewScanner(outR)
		for out.Scan() {
			var m struct{ ID json.RawMessage }
			_ = json.Unmarshal(out.Bytes(), &m)
			if strings.Contains(out.Text(), "the lane's call") {
				answered <- "lane " + string(m.ID)
			} else {
				answered <- string(m.ID)
			}
		}
	}()
	write := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if id := <-answered; id != "1" {
		t.Fatalf("answered %s, want the initialize", id)
	}
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// The lane takes calls once ServeStdio holds the session, which can
	// be a moment after the initialize is answered: until a probe call
	// is the lane's, the SDK answers it.
	for probe := 0; ; probe++ {
		write(fmt.Sprintf(`{"jsonrpc":"2.0","id":"probe%d","method":"tools/call","params":{"name":"slow","arguments":{"p":%d}}}`, probe, probe))
		write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"probe%d"}}`, probe))
		if got := <-answered; got == fmt.Sprintf(`lane "probe%d"`, probe) {
			if c := <-f.cancelled; c != fmt.Sprintf(`{"p":%d}`, probe) {
				t.Fatalf("cancelled %s", c)
			}
			break
		}
	}
	write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"n":2}}}`)
	write(`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"slow","arguments":{"n":3}}}`)
	write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"three"}}`)
	wait := func(want string) {
		t.Helper()
		select {
		case got := <-f.cancelled:
			if got != want {
				t.Fatalf("cancelled %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never cancelled", want)
		}
	}
	wait(`{"n":3}`) // the host's cancel
	cancel()
	wait(`{"n":2}`) // the session's end
	inW.Close()
	<-done
}

// A result answered as its JSON is written as the decoded result would
// be, under either protocol.
func TestRawReplyAsDecoded(t *testing.T) {
	l := &lane{info: json.RawMessage(`{"name":"ingestd","version":"dev"}`)}
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"a\n\u00e9 <b>"}]}`,
		`{"content":[]}`,
		`{"content":[],"isError":true,"structuredContent":{"a":[1,{"b":null}]}}`,
		`{"content":[{"type":"text","text":"m"}],"_meta":{"k":"v"}}`,
		`{"content":[{"type":"text","text":"m"}],"_meta":{"` + mcp.MetaKeyServerInfo + `":{"name":"upstream"}}}`,
	} {
		for _, perRequest := range []bool{false, true} {
			res := new(mcp.CallToolResult)
			if err := json.Unmarshal([]byte(raw), res); err != nil {
				t.Fatal(err)
			}
			b := l.rawReply(json.RawMessage(`7`), json.RawMessage(raw), perRequest)
			if !sameJSON(t, b, l.reply(json.RawMessage(`7`), res, perRequest)) {
				t.Errorf("%s (per-request %v):\nraw     %s\ndecoded %s", raw, perRequest, b, l.reply(json.RawMessage(`7`), res, perRequest))
			}
		}
	}
}

// sameJSON reports whether two replies say the same; the first must be
// JSON.
func sameJSON(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("no JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("no JSON: %v\n%s", err, want)
	}
	return reflect.DeepEqual(g, w)
}
