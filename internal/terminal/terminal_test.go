package terminal

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/internal/terminal/terminaltest"
)

// TestTerminalEscapes: what Write lets through and what it escapes, one
// case per class, written apart from the rule (terminaltest.RawControl) so the two
// check each other; Printf and table also keep each value on one line.
func TestTerminalEscapes(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"plain text", "café 日本 😀 a\tb\n", "café 日本 😀 a\tb\n"},
		{"ESC and CSI", "a\x1b[2Jb", `a\u001b[2Jb`},
		{"OSC 0 with BEL", "\x1b]0;pwned\a", `\u001b]0;pwned\u0007`},
		{"OSC 52 with ST", "\x1b]52;c;eA==\x1b\\", `\u001b]52;c;eA==\u001b\`},
		{"carriage return", "ok\rFAILED", `ok\rFAILED`},
		{"backspace and NUL", "a\bb\x00", `a\u0008b\u0000`},
		{"DEL", "a\x7fb", `a\u007fb`},
		{"C1 CSI", "a\u009b2Jb", `a\u009b2Jb`},
		{"C1 OSC", "a\u009d0;x\u009cb", `a\u009d0;x\u009cb`},
		{"bidi override", "abc\u202egpj.exe", `abc\u202egpj.exe`},
		{"bidi isolate", "a\u2066b\u2069", `a\u2066b\u2069`},
		{"marks", "a\u200e\u200f\u061cb", `a\u200e\u200f\u061cb`},
		{"zero-width", "a\u200b\u200c\u200d\u2060b", `a\u200b\u200c\u200d\u2060b`},
		{"byte-order mark", "\ufeffa", `\ufeffa`},
		{"soft hyphen", "a\u00adb", `a\u00adb`},
		{"tag characters", "a\U000E0041\U000E007Fb", `a\udb40\udc41\udb40\udc7fb`},
		{"line separator", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"invalid UTF-8", "a\xffb\xc3", "a\uFFFDb\uFFFD"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			term := New(&buf)
			// One byte a Write: a character cut between Writes is whole.
			for i := 0; i < len(tt.in); i++ {
				if _, err := term.Write([]byte{tt.in[i]}); err != nil {
					t.Fatal(err)
				}
			}
			term.Flush()
			if got := buf.String(); got != tt.want {
				t.Errorf("Write(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if r, ok := terminaltest.RawControl(buf.String()); ok {
				t.Errorf("U+%04X passed", r)
			}
			buf.Reset()
			term.Printf("[%s] [%v] [%s]\n", tt.in, []string{tt.in}, errors.New(tt.in))
			if got := buf.String(); strings.Count(got, "\n") != 1 || strings.Contains(got, "\t") {
				t.Errorf("Printf put a value on more than one line or column: %q", got)
			}
			if r, ok := terminaltest.RawControl(buf.String()); ok {
				t.Errorf("Printf: U+%04X passed", r)
			}
		})
	}

	var buf bytes.Buffer
	tb := New(&buf).Table("  ", "A", "B")
	tb.Row("x\ty\nFORGED", 1)
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := buf.String(), "  A             B\n  x\\ty\\nFORGED  1\n"; got != want {
		t.Errorf("table = %q, want %q", got, want)
	}

	buf.Reset()
	New(&buf).Paint(true, Red, "BLOCKED\x1b[0m\x1b[32m allowed")
	if got, want := buf.String(), Red+`BLOCKED\u001b[0m\u001b[32m allowed`+Reset; got != want {
		t.Errorf("paint = %q, want %q: a value ended our style early", got, want)
	}
}

// hostileValue holds every class a terminal must not get raw.
const hostileValue = "a\x1b]0;pwned\a\x1b[2J\u009b2J\x7f\r\nFORGED\u202egpj.exe\u2066\u200b\ufeff\U000E0041\u2028z"

// TestJSONThroughTheTerminalIsTheSameJSON: an encoder writing through a
// terminal gives JSON that decodes to the exact values, with nothing raw.
func TestJSONThroughTheTerminalIsTheSameJSON(t *testing.T) {
	in := map[string]any{hostileValue: []string{hostileValue, "plain"}, "n": 1.5}
	var buf bytes.Buffer
	enc := json.NewEncoder(New(&buf))
	enc.SetIndent("", "  ")
	if err := enc.Encode(in); err != nil {
		t.Fatal(err)
	}
	if r, ok := terminaltest.RawControl(buf.String()); ok {
		t.Errorf("U+%04X passed: %q", r, buf.String())
	}
	var out map[string]any
	if err := json.Unmarshal(buf.Bytes(), &out); err != nil {
		t.Fatalf("%v: %q", err, buf.String())
	}
	if got := out[hostileValue].([]any)[0]; got != hostileValue {
		t.Errorf("decoded %q, want %q", got, hostileValue)
	}
}
