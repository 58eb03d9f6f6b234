package chunker

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// nextUnit finds the first unit of level lv in src[pos:end]: its trimmed
// span [a, b) (a == b when only whitespace is left) and where to look for
// the next one.
func nextUnit(src string, lv level, pos, end int) (a, b, next int) {
	a = skipSpace(src, pos, end)
	if a >= end {
		return end, end, end
	}
	switch lv {
	case lvItems:
		next = itemEnd(src, a, end)
	case lvSentences:
		next = sentenceEnd(src, a, end)
	case lvLines:
		next = lineEnd(src, a, end)
	case lvWords:
		next = wordEnd(src, a, end)
	case lvClusters:
		next = clusterEnd(src, a, end, 4)
	default:
		next = clusterEnd(src, a, end, 0)
	}
	_, b = trimSpan(src, a, next)
	return a, b, next
}

// isSpaceAt reports whether the rune at i is whitespace, and its size.
func isSpaceAt(s string, i int) (bool, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiSpace[c], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return unicode.IsSpace(r), n
}

// spaceBefore reports whether the rune that ends at i is whitespace, and
// its size.
func spaceBefore(s string, i int) (bool, int) {
	if c := s[i-1]; c < utf8.RuneSelf {
		return asciiSpace[c], 1
	}
	r, n := utf8.DecodeLastRuneInString(s[:i])
	return unicode.IsSpace(r), n
}

func skipSpace(s string, i, end int) int {
	for i < end {
		sp, n := isSpaceAt(s, i)
		if !sp {
			break
		}
		i += n
	}
	return i
}

// trimSpan trims Unicode whitespace off both ends of s[i:j].
func trimSpan(s string, i, j int) (int, int) {
	i = skipSpace(s, i, j)
	for j > i {
		sp, n := spaceBefore(s, j)
		if !sp {
			break
		}
		j -= n
	}
	return i, j
}

// lineEnd returns the index of the '\n' that ends the line at pos, or end.
func lineEnd(s string, pos, end int) int {
	if k := strings.IndexByte(s[pos:end], '\n'); k >= 0 {
		return pos + k
	}
	return end
}

// isBlank reports a line of only whitespace; with quoteAware, '>' counts as
// whitespace too (an empty line of quoted mail).
func isBlank(line string, quoteAware bool) bool {
	for i := 0; i < len(line); {
		if quoteAware && line[i] == '>' {
			i++
			continue
		}
		sp, n := isSpaceAt(line, i)
		if !sp {
			return false
		}
		i += n
	}
	return true
}

// wordEnd returns the end of the word at i: the next whitespace, or just
// after CJK clause punctuation ("、", "，"), since those scripts do not
// space their words.
func wordEnd(s string, i, end int) int {
	for i < end {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiSpace[c] {
				break
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:end])
		if unicode.IsSpace(r) {
			break
		}
		i += n
		if r == '、' || r == '，' || r == '；' || r == '：' {
			break
		}
	}
	return i
}

// clusterEnd returns the end of up to max(limit, 1) characters from i,
// where a character is a rune with the marks, joiners and modifiers that
// follow it (so emoji sequences and accents are not cut apart unless a
// single one is over budget; then limit 0 cuts at every rune).
func clusterEnd(s string, i, end, limit int) int {
	if limit == 0 {
		_, n := utf8.DecodeRuneInString(s[i:end])
		return i + n
	}
	for count := 0; i < end; {
		r, n := utf8.DecodeRuneInString(s[i:end])
		if unicode.IsSpace(r) {
			break
		}
		if r < utf8.RuneSelf || !isExtend(r) {
			if count == limit {
				break
			}
			count++
		}
		i += n
		if r == 0x200D && i < end { // a joiner binds the next rune
			_, n = utf8.DecodeRuneInString(s[i:end])
			i += n
		}
	}
	return i
}

// itemEnd returns where the list item that starts at a ends: at the start
// of the next line that opens an item no deeper than this one, or end.
func itemEnd(s string, a, end int) int {
	ls := strings.LastIndexByte(s[:a], '\n') + 1
	indent := indentWidth(s[ls:a])
	for pos, le := lineEnd(s, a, end)+1, 0; pos < end; pos = le + 1 {
		le = lineEnd(s, pos, end)
		ind, rest := splitIndent(s[pos:le])
		if ind <= indent && listMarker(rest) > 0 {
			return pos
		}
	}
	return end
}

// sentenceEnd returns the end of the sentence that starts at a: just after
// its terminator and closing quotes or brackets, or end.
func sentenceEnd(s string, a, end int) int {
	for i := a; i < end; {
		c := s[i]
		if !sentenceByte[c] {
			i++
			continue
		}
		if c == '.' || c == '!' || c == '?' {
			j := skipTerminators(s, i+1, end)
			if sentenceBreak(s, a, i, j, end) {
				return j
			}
			i = j
			continue
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:end])
		i += n
		if isWideTerminator(r) {
			j := skipTerminators(s, i, end)
			if j < end {
				return j
			}
		}
	}
	return end
}

// sentenceByte marks the bytes that may start a sentence terminator: the
// ASCII ones and the lead bytes of "。", "！", "？" and "｡".
var sentenceByte = [256]bool{'.': true, '!': true, '?': true, 0xE3: true, 0xEF: true}

func isWideTerminator(r rune) bool {
	return r == '。' || r == '！' || r == '？' || r == '｡'
}

// skipTerminators skips further terminators and closing quotes and brackets.
func skipTerminators(s string, j, end int) int {
	for j < end {
		c := s[j]
		if c < utf8.RuneSelf {
			if c == '.' || c == '!' || c == '?' || c == '"' || c == '\'' || c == ')' || c == ']' || c == '*' || c == '_' {
				j++
				continue
			}
			break
		}
		r, n := utf8.DecodeRuneInString(s[j:end])
		if !isCloser(r) && !isWideTerminator(r) {
			break
		}
		j += n
	}
	return j
}

func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '*', '_', '”', '’', '»', '」', '』', '）', '】':
		return true
	}
	return false
}

// sentenceBreak reports whether the ASCII terminator at i, whose run of
// terminators and closers ends at j, ends a sentence that started at or
// after lo: it is followed by whitespace (or the end) and then not by a
// lowercase letter, and a '.' does not end an abbreviation ("e.g.", "Dr.",
// an initial).
func sentenceBreak(s string, lo, i, j, end int) bool {
	if j < end {
		if sp, _ := isSpaceAt(s, j); !sp {
			return false
		}
		if k := skipSpace(s, j, end); k < end {
			if c := s[k]; c >= 'a' && c <= 'z' {
				return false
			} else if c >= utf8.RuneSelf {
				if r, _ := utf8.DecodeRuneInString(s[k:end]); unicode.IsLower(r) {
					return false
				}
			}
		}
	}
	return s[i] != '.' || !abbreviation(s, lo, i)
}

// abbreviation reports whether the word before the '.' at i looks like an
// abbreviation: a single letter, a word with dots in it, or a common title.
func abbreviation(s string, lo, i int) bool {
	ws := i
	for ws > lo {
		c := s[ws-1]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '(' || c == '"' || c == '\'' {
			break
		}
		ws--
	}
	w := s[ws:i]
	switch {
	case w == "":
		return false
	case len(w) == 1:
		return w[0] < utf8.RuneSelf && asciiClass[w[0]] == clsWord
	case strings.IndexByte(w, '.') >= 0:
		return true
	}
	switch w {
	case "Mr", "Mrs", "Ms", "Dr", "Prof", "Sr", "Jr", "St", "vs", "cf", "Fig", "No", "approx", "resp":
		return true
	}
	return false
}

// sentenceStartsAt reports whether the word at ws (preceded by whitespace)
// starts a sentence: the text before it, within [lo, ws), ends a sentence.
func sentenceStartsAt(s string, lo, ws int) bool {
	j := ws
	for j > lo {
		sp, n := spaceBefore(s, j)
		if !sp {
			break
		}
		j -= n
	}
	// Walk back over closers and terminators to the first terminator.
	k, term := j, -1
	for k > lo {
		c := s[k-1]
		if c == '.' || c == '!' || c == '?' {
			k--
			term = k
			continue
		}
		if c < utf8.RuneSelf {
			if c == '"' || c == '\'' || c == ')' || c == ']' || c == '*' || c == '_' {
				k--
				continue
			}
			break
		}
		r, n := utf8.DecodeLastRuneInString(s[lo:k])
		if isWideTerminator(r) {
			return true
		}
		if !isCloser(r) {
			break
		}
		k -= n
	}
	return term >= 0 && sentenceBreak(s, lo, term, j, len(s))
}
