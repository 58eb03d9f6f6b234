package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// plainResult reads the common result as the SDK's decoder does, and
// leaves that decoder everything else; asked only whether it would (a
// nil result), it says the same.
func TestPlainResultAsTheSDK(t *testing.T) {
	for _, in := range []string{
		`{"content":[{"type":"text","text":"a\n\u00e9 <b>"}]}`,
		`{"content":[],"isError":true}`,
		`{"content":[{"text":"x","type":"text"},{"type":"text","text":""}],"structuredContent":{"a":[1,{"b":null}]}}`,
		`{"content":[{"type":"text","text":"m"}],"_meta":{"k":"v","n":1},"structuredContent":null,"isError":false}`,
	} {
		got := new(mcp.CallToolResult)
		if !plainResult(json.RawMessage(in), got) || !plainResult(json.RawMessage(in), nil) {
			t.Fatalf("%s: not read as plain", in)
		}
		want := new(mcp.CallToolResult)
		if err := json.Unmarshal([]byte(in), want); err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		var gv, wv any
		_ = json.Unmarshal(g, &gv)
		_ = json.Unmarshal(w, &wv)
		if !reflect.DeepEqual(gv, wv) {
			t.Errorf("%s:\nplain %s\nSDK   %s", in, g, w)
		}
	}
	for _, in := range []string{
		`{}`, // no content
		`{"content":null}`,
		`{"content":[{"type":"image","data":"eA==","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"a","annotations":{}}]}`,
		`{"content":[{"type":"text"}]}`,
		`{"content":[{"type":"text","text":"a","type":"text"}]}`,
		`{"Content":[{"type":"text","text":"a"}]}`, // the SDK matches a name in any case
		`{"content":[{"type":"text","text":"a"}],"resultType":"input_required"}`,
		`{"content":[{"type":"text","text":"a"}],"isError":"yes"}`,
		"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}",
		`{"content":[],"_meta":[1]}`,
		`{"content":[{"type":"text","text":1}]}`,
	} {
		if res := new(mcp.CallToolResult); plainResult(json.RawMessage(in), res) || plainResult(json.RawMessage(in), nil) {
			t.Errorf("%s read as plain: %+v", in, res)
		}
	}
}

// A lane call's response that is not strict JSON is still answered: a
// member twice, or invalid UTF-8, is read as the SDK's decoder reads it.
func TestRouteReadsWhatTheSDKReads(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":"ingestd-1","result":{"content":[{"type":"text","text":"ok"}]}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"ingestd-1\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}}",
		`{"jsonrpc":"2.0","id":"ingestd-1","id":"ingestd-1","result":{"content":[]}}`,
		`{"jsonrpc":"2.0","id":"ingestd-1","error":{"code":-32602,"message":"no such tool"}}`,
	} {
		p := newPipe(nil, 1<<20, 0)
		var got *mcp.CallToolResult
		var gotErr error
		answered := false
		p.waiting["ingestd-1"] = &waiter{deadline: time.Now().Add(time.Hour),
			done: func(raw json.RawMessage, err error) {
				answered, gotErr = true, err
				if err == nil {
					got, gotErr = decodeResult(raw)
				}
			}}
		if !p.route([]byte(line)) || !answered {
			t.Errorf("%q: not answered", line)
			continue
		}
		if got == nil && gotErr == nil {
			t.Errorf("%q: answered with nothing", line)
		}
	}
	p := newPipe(nil, 1<<20, 0)
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`,                                     // the SDK's
		`{"jsonrpc":"2.0","id":"ingestd-2","method":"ping"}`,                                   // a request, not a response
		`{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"ingestd-1"}]}}`, // the prefix elsewhere
		`not json "ingestd-1`,
	} {
		if p.route([]byte(line)) {
			t.Errorf("%q taken by the lane", line)
		}
	}
}

// One timer ends a pipe's late calls: when it fires it abandons those
// past their deadline and is armed again for the earliest of the rest;
// with none left it is not.
func TestExpiryEndsOnlyLateCalls(t *testing.T) {
	p := newPipe(nil, 1<<20, 0)
	ended := map[string]error{}
	now := time.Now()
	for id, due := range map[string]time.Duration{"late": -time.Second, "later": -time.Millisecond, "soon": time.Hour, "sooner": time.Minute} {
		p.waiting[id] = &waiter{deadline: now.Add(due), abandon: func(err error) {
			if p.take(id) != nil {
				ended[id] = err
			}
		}}
	}
	p.expiry = time.AfterFunc(time.Hour, func() {})
	p.expire()
	if len(ended) != 2 || !errors.Is(ended["late"], context.DeadlineExceeded) || !errors.Is(ended["later"], context.DeadlineExceeded) {
		t.Fatalf("ended %v, want late and later", ended)
	}
	if len(p.waiting) != 2 || !p.fires.Equal(p.waiting["sooner"].deadline) {
		t.Fatalf("waiting %d, armed for %v", len(p.waiting), p.fires.Sub(now))
	}
	p.waiting = map[string]*waiter{}
	p.expire()
	if !p.fires.IsZero() {
		t.Fatal("armed with nothing waiting")
	}
}
