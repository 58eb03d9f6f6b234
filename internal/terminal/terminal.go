// Package terminal is the one writer of a command's words for a
// person: everything written through a Terminal reaches the stream with
// the controls a terminal would obey escaped. It imports the standard
// library and golang.org/x/term only.
package terminal

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"sync"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"golang.org/x/term"
)

// Terminal is where a command's words for a person go: in cmd/ingestd
// env.stdout and env.stderr are terminals, the logger writes to one, and
// nothing else writes to the process's streams (cmd/ingestd's
// TestOutputGoesThroughTheTerminal).
// Much of what a command shows was written by outsiders — a file name
// in a stranger's mail, a title, an external id, a server's error — and
// a terminal obeys what it reads: ESC and OSC sequences erase lines,
// retitle the window or write the clipboard, BEL rings, bidi overrides
// reorder a line, tag and zero-width characters hide text.
//
// So every byte written passes Write, which escapes all of those (see
// escaped) and keeps only line feed and tab: a command cannot forget it,
// whether it prints with Printf, fmt.Fprintf, a table or an encoder.
// JSON passes unchanged in meaning: an encoder writes control characters
// escaped already, and what Write escapes in it stands inside strings,
// where \u escapes mean the same character. Printf and Table go further
// for the values they print: each on one line, its own line breaks and
// tabs escaped too, so a value cannot forge a line or a column.
//
// Only Raw reaches the stream itself, for output that is not text for a
// person (an archive, the MCP protocol) or whose every byte is ours (the
// progress bar); TestOutputGoesThroughTheTerminal names who may call it.
type Terminal struct {
	mu   sync.Mutex
	w    io.Writer
	part []byte // the first bytes of a character the last Write ended in
}

// New is a Terminal writing to w.
func New(w io.Writer) *Terminal { return &Terminal{w: w} }

// The ANSI styles Paint takes, and Reset, which ends one.
const (
	Reset  = "\x1b[0m"
	Bold   = "\x1b[1m"
	Dim    = "\x1b[2m"
	Red    = "\x1b[31m"
	Green  = "\x1b[32m"
	Yellow = "\x1b[33m"
)

// Write writes p with what escaped says escaped, line feeds and tabs
// kept. A character a Write cuts is completed by the next one; invalid
// UTF-8 is written as U+FFFD. It returns len(p) unless the stream fails.
func (t *Terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if len(t.part) > 0 {
		p = append(t.part, p...)
		t.part = nil
	}
	// Keep an incomplete last character for the next Write.
	if i := lastRuneStart(p); i >= 0 && !utf8.FullRune(p[i:]) {
		t.part = append([]byte(nil), p[i:]...)
		p = p[:i]
	}
	if _, err := t.w.Write(escapeStream(p)); err != nil {
		return 0, err
	}
	return n, nil
}

// escapeStream is p escaped as Write escapes it: p itself when it is
// plain ASCII text (the usual case: a log line, a table of counts).
func escapeStream(p []byte) []byte {
	for _, c := range p {
		if c < 0x20 && c != '\n' && c != '\t' || c >= 0x7f {
			return appendEscaped(make([]byte, 0, len(p)+16), p, false)
		}
	}
	return p
}

// lastRuneStart is the index of the byte that starts p's last character
// (at most utf8.UTFMax back), -1 when p is empty.
func lastRuneStart(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			return i
		}
	}
	return len(p) - 1
}

// Flush writes what a Write left incomplete, as U+FFFD: the end of a
// command's output.
func (t *Terminal) Flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.part) > 0 {
		_, _ = t.w.Write(escapeStream(t.part))
		t.part = nil
	}
}

// Printf formats as fmt.Printf does, every argument that is text (a
// string, an error, a fmt.Stringer, a []string) on one line: escaped as
// Write escapes, and its line breaks and tabs too. The format is ours
// and keeps its own. Write errors are ignored, as for fmt.Printf.
func (t *Terminal) Printf(format string, args ...any) {
	fmt.Fprintf(t, format, oneLineArgs(args)...)
}

// Println prints its arguments as Printf's %v would, separated by
// spaces, and a line feed.
func (t *Terminal) Println(args ...any) {
	fmt.Fprintln(t, oneLineArgs(args)...)
}

// Paint prints s on one line, in the ANSI style code when color is set:
// the style's own escape sequence is the only one that reaches the
// stream, and s cannot end it early (its own ESC is escaped).
func (t *Terminal) Paint(color bool, code, s string) {
	if !color {
		t.Printf("%s", s)
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = io.WriteString(t.w, code)
	_, _ = t.w.Write(appendEscaped(nil, []byte(s), true))
	_, _ = io.WriteString(t.w, Reset)
}

// IsTTY reports whether the stream is a terminal (for colour and
// progress bars).
func (t *Terminal) IsTTY() bool {
	f, ok := t.w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Raw is the stream itself, escaping nothing: for an archive written to
// stdout, the MCP protocol on stdio, and the progress bar, which draws
// with control sequences and shows only our own words (the installation
// id, counts). Nothing an outsider wrote may be written to it.
func (t *Terminal) Raw() io.Writer { return t.w }

// Table is rows of columns aligned with spaces, each cell on one line.
type Table struct {
	tw     *tabwriter.Writer
	indent string
}

// Table starts a table under header; indent goes before every row.
func (t *Terminal) Table(indent string, header ...string) *Table {
	tb := &Table{tw: tabwriter.NewWriter(t, 0, 4, 2, ' ', 0), indent: indent}
	cells := make([]any, len(header))
	for i, h := range header {
		cells[i] = h
	}
	tb.Row(cells...)
	return tb
}

// Row adds a row: each cell printed as Printf's %v prints it, on one
// line, so no cell can start a row or a column of its own.
func (tb *Table) Row(cells ...any) {
	_, _ = io.WriteString(tb.tw, tb.indent)
	for i, c := range oneLineArgs(cells) {
		if i > 0 {
			_, _ = io.WriteString(tb.tw, "\t")
		}
		fmt.Fprint(tb.tw, c)
	}
	_, _ = io.WriteString(tb.tw, "\n")
}

// Flush writes the table.
func (tb *Table) Flush() error { return tb.tw.Flush() }

// oneLineArgs returns args with every text argument escaped onto one
// line (see Printf): an error, a fmt.Stringer, a string or a slice of
// strings of any named type; numbers and the rest are left to fmt (and
// Write escapes what they print).
func oneLineArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		if v := reflect.ValueOf(a); v.Kind() == reflect.Pointer && v.IsNil() {
			out[i] = a // fmt prints <nil>
			continue
		}
		switch v := a.(type) {
		case error:
			out[i] = oneLine(v.Error())
			continue
		case fmt.Stringer:
			out[i] = oneLine(v.String())
			continue
		}
		out[i] = a
		switch v := reflect.ValueOf(a); {
		case v.Kind() == reflect.String:
			out[i] = oneLine(v.String())
		case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
			s := make([]string, v.Len())
			for j := range s {
				s[j] = oneLine(v.Index(j).String())
			}
			out[i] = s
		}
	}
	return out
}

// oneLine is s escaped for a terminal, its line breaks and tabs too.
func oneLine(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return string(appendEscaped(nil, []byte(s), true))
		}
	}
	return s
}

// escaped reports whether r must not reach a terminal as itself: C0
// controls (line feed and tab only in a value, see oneLine), DEL, C1
// controls, format characters (bidi overrides and isolates, zero-width
// characters, the byte-order mark, soft hyphen, tag characters), the
// rest of the tag block, and the line and paragraph separators.
func escaped(r rune, oneLine bool) bool {
	switch {
	case r == '\n' || r == '\t':
		return oneLine
	case r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0:
		return true
	case r == '\u2028' || r == '\u2029' || r >= 0xe0000 && r <= 0xe007f:
		return true
	}
	return r >= 0xa0 && unicode.Is(unicode.Cf, r)
}

// appendEscaped appends p to b, each character escaped says escaped as a
// JSON escape (\n, \t, \r, \u001b, a surrogate pair beyond U+FFFF), so
// escaped text inside a JSON string means what it meant. Invalid UTF-8
// is appended as U+FFFD.
func appendEscaped(b, p []byte, oneLine bool) []byte {
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && size <= 1:
			b = append(b, "\uFFFD"...)
		case !escaped(r, oneLine):
			b = append(b, p[:size]...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r > 0xffff:
			r1, r2 := utf16Pair(r)
			b = appendU(appendU(b, r1), r2)
		default:
			b = appendU(b, r)
		}
		p = p[size:]
	}
	return b
}

func appendU(b []byte, r rune) []byte {
	b = append(b, `\u`...)
	h := strconv.FormatInt(int64(r), 16)
	for i := len(h); i < 4; i++ {
		b = append(b, '0')
	}
	return append(b, h...)
}

// utf16Pair is r (beyond U+FFFF) as a UTF-16 surrogate pair.
func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + (r>>10)&0x3ff, 0xdc00 + r&0x3ff
}
