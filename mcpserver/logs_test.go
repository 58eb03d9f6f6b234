package mcpserver

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestHTTPRequestsLogAtDebug: an MCP request over HTTP, the SDK's path,
// writes nothing at INFO (the SDK's per-request session lines, whose
// session id is empty when stateless, are DEBUG).
func TestHTTPRequestsLogAtDebug(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))
		o, ho := fastPathServer(t)
		o.Logger, ho.Logger = log, log
		w := post(handler(o, ho, false), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, nil)
		if w.Code != 200 {
			t.Fatalf("tools/list: %d %s", w.Code, w.Body)
		}
		logs := buf.String()
		switch level {
		case slog.LevelInfo:
			if strings.Contains(logs, "level=INFO") {
				t.Errorf("at INFO a request logged:\n%s", logs)
			}
		case slog.LevelDebug:
			if !strings.Contains(logs, "level=DEBUG") {
				t.Errorf("at DEBUG a request logged nothing: want the SDK's lines there")
			}
		}
	}
}
