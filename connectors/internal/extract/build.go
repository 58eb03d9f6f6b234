package extract

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// builder collects blocks of text into sections, keeps the heading path,
// and holds the whole text under a byte budget. Every string it stores is
// valid UTF-8 without control characters other than tab and newline.
type builder struct {
	d       Doc
	maxText int64
	used    int64
	full    bool     // the budget is spent: further text is dropped
	path    []string // heading texts by level (index 0 = level 1)
	cur     *strings.Builder
	curSec  Section
	started bool
	inTable bool
	rows    int
	tight   bool // the last block was a list item: the next one follows on the next line
}

func newBuilder(f Format, maxText int64) *builder {
	return &builder{d: Doc{Format: f}, maxText: maxText, cur: new(strings.Builder)}
}

// defect records a partial problem once (the same message twice is kept
// once, so a broken element repeated a million times costs one line).
func (b *builder) defect(format string, args ...any) {
	msg := safeMessage(fmt.Sprintf(format, args...))
	for _, d := range b.d.Defects {
		if d == msg {
			return
		}
	}
	if len(b.d.Defects) < maxDefects {
		b.d.Defects = append(b.d.Defects, msg)
	}
}

// maxDefects bounds Doc.Defects; a hostile file cannot grow it further.
const maxDefects = 100

// maxMessage bounds one defect or error message, which may quote input.
const maxMessage = 500

// safeMessage makes a message that may quote the input fit to store and
// show: valid UTF-8, one line, at most maxMessage bytes.
func safeMessage(s string) string {
	s = oneLine(clean(s))
	if len(s) > maxMessage {
		s = cutUTF8(s, maxMessage-len("…")) + "…"
	}
	return s
}

// newSection closes the current section and opens one with loc.
func (b *builder) newSection(s Section) {
	b.endTable()
	b.flushSection()
	b.curSec = s
	b.started = true
}

func (b *builder) flushSection() {
	if !b.started && b.cur.Len() == 0 {
		return
	}
	s := b.curSec
	s.Text = strings.TrimRight(b.cur.String(), "\n ")
	b.cur.Reset()
	if s.Text != "" || s.Page > 0 {
		b.d.Sections = append(b.d.Sections, s)
	}
	b.curSec = Section{}
	b.started = false
}

// write appends s to the current section within the text budget.
func (b *builder) write(s string) bool {
	if b.full {
		return false
	}
	if rest := b.maxText - b.used; int64(len(s)) > rest {
		s = cutUTF8(s, int(rest))
		b.full = true
		b.d.Truncated = true
		b.defect("text cut at %d bytes: over the MaxTextBytes limit of %d", b.used+int64(len(s)), b.maxText)
	}
	b.cur.WriteString(s)
	b.used += int64(len(s))
	return !b.full
}

// block appends one block (a paragraph, a heading line, a list item)
// followed by a blank line, or by a single newline when tight.
func (b *builder) block(text string, tight bool) {
	if text == "" {
		return
	}
	if b.cur.Len() > 0 && (!tight || !b.tight) {
		b.blankLine()
	}
	b.tight = tight
	b.write(text + "\n")
}

// blankLine ends the text so far with a blank line.
func (b *builder) blankLine() {
	s := b.cur.String()
	switch {
	case s == "" || strings.HasSuffix(s, "\n\n"):
	case strings.HasSuffix(s, "\n"):
		b.write("\n")
	default:
		b.write("\n\n")
	}
}

// heading starts a section named by text at level (1 = "#").
func (b *builder) heading(level int, text string) {
	text = oneLine(clean(text))
	if text == "" {
		return
	}
	level = max(1, min(level, 6))
	if len(b.path) >= level {
		b.path = b.path[:level-1]
	}
	for len(b.path) < level-1 {
		b.path = append(b.path, "")
	}
	b.path = append(b.path, text)
	var hs []string
	for _, h := range b.path {
		if h != "" {
			hs = append(hs, h)
		}
	}
	b.newSection(Section{Locator: strings.Join(hs, " > "), Headings: hs})
	b.block(strings.Repeat("#", level)+" "+text, false)
}

// page starts the section of PDF page n.
func (b *builder) page(n int) {
	b.newSection(Section{Locator: fmt.Sprintf("p. %d", n), Page: n})
}

// paragraph appends a paragraph of running text.
func (b *builder) paragraph(text string) {
	b.endTable()
	text = strings.TrimSpace(clean(text))
	if text == "" {
		return
	}
	b.block(escapeMarkdown(text), false)
}

// headingLine appends a heading line without starting a section (PDF
// pages keep their page locator).
func (b *builder) headingLine(level int, text string) {
	b.endTable()
	text = oneLine(clean(text))
	if text == "" {
		return
	}
	b.block(strings.Repeat("#", max(1, min(level, 6)))+" "+text, false)
}

// listItem appends one list item; consecutive items stay on adjacent lines.
func (b *builder) listItem(depth int, marker, text string) {
	b.endTable()
	text = strings.TrimSpace(clean(text))
	if text == "" {
		return
	}
	text = strings.ReplaceAll(text, "\n", "\n"+strings.Repeat("  ", depth+1))
	b.block(strings.Repeat("  ", min(depth, 8))+marker+" "+text, true)
}

// tableRow appends one table row as "| a | b |"; the first row of a table
// is followed by a Markdown header rule.
func (b *builder) tableRow(cells []string) {
	if len(cells) == 0 {
		return
	}
	empty := true
	for i, c := range cells {
		c = oneLine(clean(c))
		c = strings.ReplaceAll(c, "|", `\|`)
		cells[i] = c
		if c != "" {
			empty = false
		}
	}
	if empty {
		return
	}
	if !b.inTable {
		b.blankLine()
		b.inTable, b.rows, b.tight = true, 0, false
	}
	b.write("| " + strings.Join(cells, " | ") + " |\n")
	if b.rows == 0 {
		b.write(strings.Repeat("|---", len(cells)) + "|\n")
	}
	b.rows++
}

// endTable ends a table with a blank line.
func (b *builder) endTable() {
	if b.inTable {
		b.inTable = false
		b.blankLine()
	}
}

// endList ends a run of list items: the next item starts a new list.
func (b *builder) endList() {
	if b.tight {
		b.tight = false
		b.blankLine()
	}
}

func (b *builder) doc() *Doc {
	b.endTable()
	b.flushSection()
	b.d.Title = oneLine(clean(b.d.Title))
	b.d.Author = oneLine(clean(b.d.Author))
	return &b.d
}

// clean makes s valid UTF-8 and drops control characters other than tab
// and newline (a NUL or an escape sequence has no place in stored text),
// and the byte-order mark.
func clean(s string) string {
	ok := utf8.ValidString(s)
	if ok {
		for i := 0; i < len(s); i++ {
			if c := s[i]; c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
				ok = false
				break
			}
		}
		if ok && !strings.ContainsRune(s, '\ufeff') && !strings.ContainsRune(s, '\r') {
			return s
		}
	}
	var sb strings.Builder
	sb.Grow(len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == utf8.RuneError && n == 1:
			sb.WriteRune(utf8.RuneError)
		case r == '\r':
			if i < len(s) && s[i] == '\n' {
				continue
			}
			sb.WriteByte('\n')
		case r == '\t' || r == '\n':
			sb.WriteRune(r)
		case r == '\ufeff' || unicode.IsControl(r):
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// oneLine folds whitespace runs, newlines included, into single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cutUTF8 returns the longest prefix of s of at most n bytes that ends on
// a character boundary.
func cutUTF8(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// escapeMarkdown keeps a line of running text from reading as structure
// to a Markdown reader (the chunker): a leading "#", a rule of "-", "="
// or "*", or a code fence is escaped with a backslash.
func escapeMarkdown(text string) string {
	if !strings.ContainsAny(text, "#-=*`~") {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		switch {
		case t == "":
		case t[0] == '#', strings.HasPrefix(t, "```"), strings.HasPrefix(t, "~~~"):
			lines[i] = `\` + t
		case strings.Trim(t, "-= *") == "" && len(strings.Trim(t, " ")) >= 2:
			lines[i] = `\` + t
		}
	}
	return strings.Join(lines, "\n")
}
