package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestArgumentMessagesMatchREST: a retrieve call's bad top_k is refused in
// REST's words, on the fast path and through the SDK alike: the range a
// whole number must be in, never a Go or JSON Schema type name.
func TestArgumentMessagesMatchREST(t *testing.T) {
	o, ho := fastPathServer(t)
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"retrieve","arguments":` + args + `}}`
	}
	for _, tt := range []struct{ name, args, want string }{
		{"a string", `{"query":"orders","top_k":"8"}`, "top_k must be a whole number from 1 to 100"},
		{"a fraction", `{"query":"orders","top_k":2.5}`, "top_k must be a whole number from 1 to 100"},
		{"too large", `{"query":"orders","top_k":101}`, "top_k must be a whole number from 1 to 100"},
	} {
		for _, fast := range []bool{true, false} {
			w := post(handler(o, ho, fast), call(tt.args), nil)
			body := w.Body.String()
			if i := strings.Index(body, "{"); i > 0 {
				body = body[i:] // an event stream's data line
			}
			var resp struct {
				Result struct {
					IsError bool `json:"isError"`
					Content []struct{ Text string }
				}
				Error struct{ Message string }
			}
			_ = json.NewDecoder(strings.NewReader(body)).Decode(&resp)
			msg := resp.Error.Message
			if len(resp.Result.Content) > 0 {
				msg = resp.Result.Content[0].Text
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("%s (fast path %v): %q, want it to say %q", tt.name, fast, msg, tt.want)
			}
			for _, goish := range []string{" int", "integer", "float64", "json:"} {
				if strings.Contains(msg, goish) {
					t.Errorf("%s (fast path %v): %q names %q", tt.name, fast, msg, goish)
				}
			}
		}
	}
}
