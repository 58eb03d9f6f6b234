package chunker

import (
	"strings"
)

// markdown adds the source as markdown: front matter, ATX and setext
// headings, fenced code, lists and paragraphs, in one pass over its lines.
// Anything else (block quotes, HTML, indented code, tables) is paragraphs.
func (p *packer) markdown() {
	src := p.src
	end := len(src)
	pos := 0
	if fm := frontMatterEnd(src); fm > 0 {
		p.block(0, fm, kindCode)
		pos = fm
	}

	cur, curStart, curEnd := kindHeading, -1, 0 // open paragraph or list; curStart < 0: none
	listBlank := false                          // a blank line followed the open list
	fence, fenceStart := "", 0                  // the open fence's marker run

	closeCur := func() {
		if curStart >= 0 {
			p.block(curStart, curEnd, cur)
			curStart = -1
		}
		listBlank = false
	}
	for le := 0; pos < end; pos = le + 1 {
		le = lineEnd(src, pos, end)
		line := src[pos:le]
		if fence != "" {
			if closesFence(line, fence) {
				p.block(fenceStart, le, kindCode)
				fence = ""
			}
			continue
		}
		if isBlank(line, false) {
			if curStart >= 0 && cur == kindList {
				listBlank = true
			} else {
				closeCur()
			}
			continue
		}
		indent, rest := splitIndent(line)
		if listBlank {
			listBlank = false
			if indent < 2 && listMarker(rest) == 0 {
				closeCur()
			}
		}
		if indent < 4 {
			if m := fenceMarker(rest); m != "" {
				closeCur()
				fence, fenceStart = m, pos
				continue
			}
			if lvl, text := atxHeading(rest); lvl > 0 {
				closeCur()
				p.heading(lvl, text, pos, le)
				continue
			}
			if lvl := setextUnderline(rest); lvl > 0 && curStart >= 0 && cur == kindPara {
				text := src[curStart:curEnd]
				if strings.IndexByte(strings.TrimSpace(text), '\n') >= 0 {
					text = strings.Join(strings.Fields(text), " ")
				}
				p.heading(lvl, text, curStart, le)
				curStart = -1
				continue
			}
			if thematicBreak(rest) {
				closeCur()
				p.block(pos, le, kindPara)
				continue
			}
			if listMarker(rest) > 0 {
				if curStart < 0 || cur != kindList {
					closeCur()
					cur, curStart = kindList, pos
				}
				curEnd = le
				continue
			}
		}
		if curStart < 0 {
			cur, curStart = kindPara, pos
		}
		curEnd = le // a paragraph line, or a list's continuation
	}
	closeCur()
	if fence != "" { // unclosed: runs to the end
		p.block(fenceStart, end, kindCode)
	}
}

// frontMatterEnd returns the end of a leading YAML front matter block
// ("---" ... "---" or "..."), or 0 when there is none.
func frontMatterEnd(s string) int {
	if !strings.HasPrefix(s, "---\n") && !strings.HasPrefix(s, "---\r\n") {
		return 0
	}
	for pos := strings.IndexByte(s, '\n') + 1; pos < len(s); {
		le := lineEnd(s, pos, len(s))
		if l := strings.TrimRight(s[pos:le], " \t\r"); l == "---" || l == "..." {
			return le
		}
		pos = le + 1
	}
	return 0
}

// splitIndent returns a line's indentation width (a tab counts to the next
// multiple of 4) and the rest of the line.
func splitIndent(line string) (int, string) {
	w := 0
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ':
			w++
		case '\t':
			w += 4 - w%4
		default:
			return w, line[i:]
		}
	}
	return w, ""
}

func indentWidth(s string) int {
	w, _ := splitIndent(s)
	return w
}

// listMarker returns the width of a bullet ("-", "*", "+") or ordered
// ("1.", "1)") list marker followed by a space at the start of rest, or 0.
func listMarker(rest string) int {
	n := 0
	if rest == "" {
		return 0
	}
	switch c := rest[0]; {
	case c == '-' || c == '*' || c == '+':
		n = 1
	case c >= '0' && c <= '9':
		for n < len(rest) && n < 9 && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n == len(rest) || rest[n] != '.' && rest[n] != ')' {
			return 0
		}
		n++
	default:
		return 0
	}
	if n < len(rest) && rest[n] != ' ' && rest[n] != '\t' && rest[n] != '\r' {
		return 0
	}
	return n
}

// fenceMarker returns the run of 3 or more backticks or tildes that opens a
// fenced code block, or "". A backtick fence's info string has no backtick.
func fenceMarker(rest string) string {
	if len(rest) < 3 || rest[0] != '`' && rest[0] != '~' {
		return ""
	}
	n := 0
	for n < len(rest) && rest[n] == rest[0] {
		n++
	}
	if n < 3 || rest[0] == '`' && strings.IndexByte(rest[n:], '`') >= 0 {
		return ""
	}
	return rest[:n]
}

// closesFence reports whether line closes a fence opened with marker: the
// same character, at least as many, nothing else but spaces.
func closesFence(line, marker string) bool {
	indent, rest := splitIndent(line)
	if indent >= 4 {
		return false
	}
	rest = strings.TrimRight(rest, " \t\r")
	if len(rest) < len(marker) {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if rest[i] != marker[0] {
			return false
		}
	}
	return true
}

// atxHeading returns the level and text of an ATX heading ("## Text ##"),
// or 0.
func atxHeading(rest string) (int, string) {
	n := 0
	for n < len(rest) && rest[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n < len(rest) && rest[n] != ' ' && rest[n] != '\t' && rest[n] != '\r' {
		return 0, ""
	}
	text := strings.TrimSpace(rest[n:])
	// A closing run of '#' preceded by a space (or alone) is not text.
	t := strings.TrimRight(text, "#")
	if t == "" || t[len(t)-1] == ' ' || t[len(t)-1] == '\t' {
		text = strings.TrimSpace(t)
	}
	return n, text
}

// setextUnderline returns 1 for a "===" line, 2 for a "---" line, else 0.
func setextUnderline(rest string) int {
	if rest == "" || rest[0] != '=' && rest[0] != '-' {
		return 0
	}
	rest = strings.TrimRight(rest, " \t\r")
	for i := 1; i < len(rest); i++ {
		if rest[i] != rest[0] {
			return 0
		}
	}
	if rest[0] == '=' {
		return 1
	}
	return 2
}

// thematicBreak reports a line of three or more '-', '*' or '_' (spaces
// between allowed).
func thematicBreak(rest string) bool {
	var ch byte
	n := 0
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; c {
		case ' ', '\t', '\r':
		case '-', '*', '_':
			if ch != 0 && c != ch {
				return false
			}
			ch = c
			n++
		default:
			return false
		}
	}
	return n >= 3
}
