package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestServeRefusesWeakOrSharedTokens: a bearer token too short to be a
// secret, one of too few different characters, or one whose value another
// token has too (the first listed would win, so the second's scopes and
// installations would never apply) stops serve at start with file:line
// of the token's entry. The message never carries the value.
func TestServeRefusesWeakOrSharedTokens(t *testing.T) {
	const strong = "3f9c2a71d04be85a6c1f7e290b3d48a5"
	const other = "b81e4d07c2a95f3e60d1a7c84b29e5f0"
	auth := func(entries ...string) string {
		return "listen: 127.0.0.1:0\nauth:\n  tokens:\n" + strings.Join(entries, "")
	}
	for _, tt := range []struct {
		name   string
		env    map[string]string
		body   string
		line   string
		want   string
		secret string // must not appear in the output
	}{
		{name: "one character", env: map[string]string{"TOK_A": "x"},
			body: auth("    - {name: chat, token_env: TOK_A, scopes: [retrieve]}\n"),
			line: "ingestd.yaml:6:", want: `auth: token "chat": the value of TOK_A is 1 byte long; a bearer token needs at least 32`},
		{name: "31 bytes", env: map[string]string{"TOK_A": strong[:31]},
			body: auth("    - {name: chat, token_env: TOK_A, scopes: [retrieve]}\n"),
			line: "ingestd.yaml:6:", want: "31 bytes long; a bearer token needs at least 32", secret: strong[:31]},
		{name: "few different characters", env: map[string]string{"TOK_A": strings.Repeat("changeme", 5)},
			body: auth("    - {name: chat, token_env: TOK_A, scopes: [retrieve]}\n"),
			line: "ingestd.yaml:6:", want: "7 different characters", secret: strings.Repeat("changeme", 5)},
		{name: "second of two short", env: map[string]string{"TOK_A": strong, "TOK_B": "admin"},
			body: auth("    - {name: chat, token_env: TOK_A, scopes: [retrieve]}\n", "    - name: ops\n      token_env: TOK_B\n      scopes: [admin]\n"),
			line: "ingestd.yaml:7:", want: `auth: token "ops": the value of TOK_B is 5 bytes long`, secret: strong},
		{name: "same value, two variables", env: map[string]string{"TOK_A": strong, "TOK_B": strong},
			body: auth("    - {name: desk, token_env: TOK_A, scopes: [retrieve], installations: [h]}\n", "    - {name: ops, token_env: TOK_B, scopes: [admin]}\n"),
			line: "ingestd.yaml:7:", want: `auth: token "ops" has the same value as token "desk" (line 6)`, secret: strong},
		{name: "same value, surrounding space", env: map[string]string{"TOK_A": strong, "TOK_B": " " + strong + "\n"},
			body: auth("    - {name: desk, token_env: TOK_A, scopes: [retrieve]}\n", "    - {name: ops, token_env: TOK_B, scopes: [admin]}\n"),
			line: "ingestd.yaml:7:", want: `has the same value as token "desk"`, secret: strong},
		{name: "same variable twice", env: map[string]string{"TOK_A": strong},
			body: auth("    - {name: desk, token_env: TOK_A, scopes: [retrieve]}\n", "    - {name: ops, token_env: TOK_A, scopes: [admin]}\n"),
			line: "ingestd.yaml:7:", want: `auth: token "ops" reads TOK_A, as token "desk" (line 6) does`, secret: strong},
		{name: "assertion key unset", env: map[string]string{"TOK_A": strong},
			body: auth("    - {name: chat, token_env: TOK_A, scopes: [retrieve], assertion_key_env: CHAT_KEY}\n"),
			line: "ingestd.yaml:6:", want: `auth: token "chat": environment variable CHAT_KEY (assertion_key_env) is not set`, secret: strong},
		{name: "assertion key short", env: map[string]string{"TOK_A": strong, "CHAT_KEY": "short-key-value"},
			body: auth("    - {name: chat, token_env: TOK_A, scopes: [retrieve], assertion_key_env: CHAT_KEY}\n"),
			line: "ingestd.yaml:6:", want: "CHAT_KEY (assertion_key_env) is 15 bytes; an assertion key needs at least 32", secret: "short-key-value"},
		{name: "same name twice", env: map[string]string{"TOK_A": strong, "TOK_B": other},
			body: auth("    - {name: chat, token_env: TOK_A, scopes: [retrieve]}\n", "    - {name: chat, token_env: TOK_B, scopes: [admin]}\n"),
			line: "ingestd.yaml:7:", want: `auth: token name "chat" is given twice (first at line 6)`, secret: strong},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg := writeConfig(t, "installations:\n  - {id: h, kind: files, tier: trusted-internal, files: {root: ./docs}}\n"+tt.body)
			// A serve that accepted the tokens would run until stopped: the
			// deadline only ends such a run, it decides nothing.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := run(ctx, []string{"serve", "--config", cfg}, &stdout, &stderr)
			out, errs := stdout.String(), stderr.String()
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s\n%s", code, out, errs)
			}
			msg := strings.TrimPrefix(errs, "ingestd serve: "+cfg[:len(cfg)-len("ingestd.yaml")])
			if !strings.HasPrefix(msg, tt.line) || !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q\nwant %s ... %s", errs, tt.line, tt.want)
			}
			if tt.secret != "" && strings.Contains(out+errs, tt.secret) {
				t.Errorf("the output shows the token's value:\n%s", errs)
			}
		})
	}
}
