package mcpserver

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
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
