package chunker

import (
	"strings"
)

// mail adds a plain-text mail body as regions of new text and quoted
// history, each split into paragraphs. Quoted history is:
//   - lines whose first non-space character is '>';
//   - an attribution line ("On <date>, <name> wrote:", also wrapped over two
//     lines, and a few other languages' forms); when the next non-blank
//     line is not '>'-quoted, everything after it too (top-posting);
//   - everything from an Outlook header on: "-----Original Message-----",
//     or a "From:" line followed within four lines by "Sent:" or "Date:"
//     (with the "_____" rule Outlook puts above it).
//
// Lines of new text between quoted lines (inline replies) stay new text.
func (p *packer) mail() {
	src := p.src
	end := len(src)
	regStart, regQuoted, rest := 0, false, false
	prevStart, prevRule := -1, false // the previous non-blank line: start, an underscore rule
	for pos := 0; pos < end; {
		le := lineEnd(src, pos, end)
		line := strings.TrimSpace(src[pos:le])
		next := le + 1
		if line == "" {
			pos = next
			continue
		}
		boundary := pos // where a region that starts here starts
		q := rest || line[0] == '>'
		if !q {
			if n := attribution(src, pos, le, end); n > 0 {
				q = true
				next = n
				if k := skipSpace(src, n, end); k >= end || src[k] != '>' {
					rest = true
				}
			} else if isOriginalMessage(line) || outlookHeader(src, line, next, end) {
				q, rest = true, true
				if prevRule {
					boundary = prevStart
				}
			}
		}
		if q != regQuoted {
			p.region(regStart, boundary, regQuoted)
			regStart, regQuoted = boundary, q
		}
		prevStart, prevRule = pos, isRule(line)
		pos = next
	}
	p.region(regStart, end, regQuoted)
}

// region adds src[s:e] as paragraphs of new text or quoted history. A
// chunk never spans a change between the two.
func (p *packer) region(s, e int, quoted bool) {
	if quoted != p.quoted {
		p.flush(false)
		p.quoted = quoted
	}
	p.paragraphs(s, e, quoted)
}

var (
	attributionPrefixes = []string{"On ", "Am ", "Le ", "El ", "Il ", "Em ", "Op ", "W dniu "}
	attributionSuffixes = []string{"wrote:", "schrieb:", "a écrit :", "a écrit:", "escribió:", "ha scritto:", "escreveu:", "schreef:", "napisał:"}
)

// attribution reports an attribution line at src[pos:le] ("On Mon, 1 Jan
// 2024, Ann <ann@example.com> wrote:"), possibly wrapped onto the next
// line, and returns where the text after it starts, or 0. A line ending in
// "wrote:" without the "On" prefix counts only when '>' lines follow it.
func attribution(src string, pos, le, end int) int {
	line := strings.TrimSpace(src[pos:le])
	if len(line) > 300 {
		return 0
	}
	prefixed := hasAnyPrefix(line, attributionPrefixes)
	if hasAnySuffix(line, attributionSuffixes) {
		if prefixed {
			return min(le+1, end)
		}
		if k := skipSpace(src, le, end); k < end && src[k] == '>' {
			return min(le+1, end)
		}
		return 0
	}
	if !prefixed || le >= end {
		return 0
	}
	le2 := lineEnd(src, le+1, end)
	if line2 := strings.TrimSpace(src[le+1 : le2]); len(line)+len(line2) <= 300 && hasAnySuffix(line2, attributionSuffixes) {
		return min(le2+1, end)
	}
	return 0
}

// isOriginalMessage reports "-----Original Message-----" and the like.
func isOriginalMessage(line string) bool {
	if len(line) > 80 || !strings.HasPrefix(line, "--") {
		return false
	}
	t := strings.Trim(line, "- ")
	return strings.EqualFold(t, "Original Message") || strings.EqualFold(t, "Ursprüngliche Nachricht") ||
		strings.EqualFold(t, "Message d'origine")
}

// outlookHeader reports a "From:" line followed within four non-blank
// lines by "Sent:" or "Date:": the header Outlook writes above the message
// it quotes.
func outlookHeader(src, line string, pos, end int) bool {
	if !strings.HasPrefix(line, "From:") && !strings.HasPrefix(line, "*From:*") {
		return false
	}
	for n := 0; n < 4 && pos < end; {
		le := lineEnd(src, pos, end)
		l := strings.TrimLeft(src[pos:le], " \t*")
		pos = le + 1
		if strings.TrimSpace(l) == "" {
			continue
		}
		if strings.HasPrefix(l, "Sent:") || strings.HasPrefix(l, "Date:") {
			return true
		}
		n++
	}
	return false
}

// isRule reports a line of at least 8 underscores.
func isRule(line string) bool {
	return len(line) >= 8 && strings.Trim(line, "_") == ""
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func hasAnySuffix(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}
