package chunker

import (
	"unicode"
	"unicode/utf8"
)

// class is what a rune contributes to a token count.
type class uint8

const (
	clsBlank  class = iota // ' ': free before a word, a token when two or more
	clsWord                // letters and '_': runs of them
	clsPunct               // punctuation and ASCII symbols: runs of them
	clsDigit               // digits: runs of them
	clsSpace               // other whitespace (newline, tab, ...): a run of it is a token
	clsWide                // CJK, kana, Hangul, full-width forms, emoji: one token each
	clsExtend              // combining marks, ZWJ, variation selectors: join the run before them
)

// asciiClass classifies the ASCII bytes; asciiSpace marks their whitespace.
var asciiClass, asciiSpace = func() (t [utf8.RuneSelf]class, sp [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		switch {
		case c == ' ':
			t[c], sp[c] = clsBlank, true
		case c >= '\t' && c <= '\r':
			t[c], sp[c] = clsSpace, true
		case c >= '0' && c <= '9':
			t[c] = clsDigit
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
			t[c] = clsWord
		default:
			t[c] = clsPunct
		}
	}
	return t, sp
}()

// runeClass classifies a non-ASCII rune.
func runeClass(r rune) class {
	switch {
	case isWide(r):
		return clsWide
	case unicode.IsSpace(r):
		return clsSpace
	case isExtend(r):
		return clsExtend
	case unicode.IsLetter(r):
		return clsWord
	case unicode.IsDigit(r):
		return clsDigit
	case unicode.Is(unicode.So, r):
		return clsWide // emoji and other pictographs
	}
	return clsPunct // punctuation, other symbols, invalid UTF-8
}

// isWide reports runes that a tokenizer spends about one token each on:
// CJK ideographs and punctuation, kana, Hangul and full-width forms.
func isWide(r rune) bool {
	return r >= 0x2E80 && r <= 0x9FFF && r != 0x3000 || // radicals .. CJK unified (not the ideographic space)
		r >= 0x1100 && r <= 0x11FF || // Hangul Jamo
		r >= 0xAC00 && r <= 0xD7AF || // Hangul syllables
		r >= 0xF900 && r <= 0xFAFF || // CJK compatibility ideographs
		r >= 0xFF00 && r <= 0xFFEF || // half-width and full-width forms
		r >= 0x20000 && r <= 0x3FFFF // CJK extensions
}

// isExtend reports runes that belong to the character before them: combining
// marks, the zero-width joiner, variation selectors and emoji modifiers.
func isExtend(r rune) bool {
	return r == 0x200D || r >= 0xFE00 && r <= 0xFE0F || r >= 0x1F3FB && r <= 0x1F3FF ||
		r >= 0xE0100 && r <= 0xE01EF || unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc)
}

// CountTokens approximates how many tokens a BPE tokenizer (cl100k-like)
// makes of s, erring a little high: on the Go distribution's markdown and
// prose it comes out 10-25% above cl100k (bench/README.md). A run of
// letters counts one token per started 5 runes, a run of digits one per
// started 3, a run of punctuation one per started 4; each CJK, kana,
// Hangul, full-width or emoji rune counts one; combining marks and joiners
// count with the rune before them. A single space is free (BPE joins it to
// the next word); any other run of whitespace (a newline, indentation, the
// padding of a table) counts one.
//
// It is a single pass that does not allocate, and it adds up: for a split
// of s at a rune boundary into a and b, CountTokens(a)+CountTokens(b) >=
// CountTokens(s) when the runes on both sides of the split are not
// whitespace, and == when one side is whitespace and the other is not. The
// chunker relies on both to keep every chunk within budget.
func CountTokens(s string) int {
	return countTokens(s, len(s))
}

// countTokens is CountTokens, except that it may stop and return any
// count above limit once the count passes limit.
func countTokens(s string, limit int) int {
	n, _ := countFrom(s, stStart, 0, limit)
	return n
}

// countFrom continues a count of n tokens in state st over s: it returns
// the count and state after s, stopping early (with any count above limit)
// once the count passes limit.
func countFrom(s string, st uint8, n, limit int) (int, uint8) {
	for i := 0; i < len(s); {
		if i+8 <= len(s) && n <= limit {
			// Eight ASCII bytes at a time: classify them independently,
			// then each lookup advances the state machine over four.
			q := uint(st) * quadCodes
			for ; i+8 <= len(s) && n <= limit; i += 8 {
				b := s[i : i+8]
				c0, c1, c2, c3 := byteClass[b[0]], byteClass[b[1]], byteClass[b[2]], byteClass[b[3]]
				c4, c5, c6, c7 := byteClass[b[4]], byteClass[b[5]], byteClass[b[6]], byteClass[b[7]]
				if (c0|c1|c2|c3|c4|c5|c6|c7)&byteNonASCII != 0 {
					break
				}
				k := q + quad(c0, c1, c2, c3)
				n += int(quadTokens[k])
				k = uint(quadNext[k]) + quad(c4, c5, c6, c7)
				n += int(quadTokens[k])
				q = uint(quadNext[k])
			}
			st = uint8(q / quadCodes)
		}
		if i >= len(s) || n > limit {
			break
		}
		var e uint8
		if c := s[i]; c < utf8.RuneSelf {
			e = next[st%numStates][asciiClass[c]]
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			e = next[st%numStates][runeClass(r)]
		}
		n += int(e & 1)
		st = e >> 1
	}
	return n, st
}

// quad is the offset in quadNext of four ASCII classes (0..4), in base 5.
func quad(c0, c1, c2, c3 uint8) uint {
	return uint(c0) + 5*uint(c1) + 25*uint(c2) + 125*uint(c3)
}

// CountTokens runs a state machine: the state is the class of the current
// run and how many runes into its current token it is. A transition is
// the next state << 1 | whether a token starts.
const (
	stStart   = 0           // the start: as after a space before a word
	stBlank   = 1           // after one ' ' that followed a non-space
	stGap     = 2           // in a whitespace run that counted a token
	stWord    = 3           // 3..7: letters
	stDigit   = stWord + 5  // 8..10: digits
	stPunct   = stDigit + 3 // 11..14: punctuation
	stWide    = stPunct + 4 // 15
	numStates = stWide + 1  // 16
	numClass  = int(clsExtend) + 1
)

// byteClass is asciiClass over all bytes, with byteNonASCII for the
// others; byteStopClass adds byteStop to the ASCII sentence terminators,
// so that the fast loop of the paragraph scan (sentences.go) stops at them.
const (
	byteNonASCII = 8
	byteStop     = 16
)

var byteClass, byteStopClass = func() (t, stop [256]uint8) {
	for c := range 256 {
		t[c] = byteNonASCII
		if c < utf8.RuneSelf {
			t[c] = uint8(asciiClass[c])
		}
	}
	stop = t
	stop['.'] |= byteStop
	stop['!'] |= byteStop
	stop['?'] |= byteStop
	return t, stop
}()

// runStart and runLen give each run class's first state and runes per token.
var runStart = [numClass]uint8{clsWord: stWord, clsDigit: stDigit, clsPunct: stPunct}
var runLen = [numClass]uint8{clsWord: 5, clsDigit: 3, clsPunct: 4}

// next is the transition table by state and class: the next state << 1 |
// whether a token starts. quadNext is the same over four ASCII classes
// (the 5 of them: clsBlank .. clsSpace) with the state scaled to leave room
// for them, so that one lookup and one add advance it: quadNext[st*
// quadCodes+quad(c0, c1, c2, c3)] is the next state * quadCodes, and
// quadTokens at that index is how many tokens start. Four classes per
// dependent lookup (the lookups chain through the state) instead of three
// with shifts and masks in between doubled CountTokens' speed.
const quadCodes = 5 * 5 * 5 * 5 // four ASCII classes in base 5: they must be 0..4

var next = func() (t [numStates][numClass]uint8) {
	for st := range uint8(numStates) {
		gap := st == stStart || st == stBlank || st == stGap
		for k := range class(numClass) {
			to, tok := st, uint8(0)
			switch k {
			case clsBlank:
				switch st {
				case stStart:
					to = stBlank
				case stBlank:
					to, tok = stGap, 1
				case stGap:
				default:
					to = stBlank
				}
			case clsSpace:
				to = stGap
				tok = b2u(st != stGap)
			case clsWide:
				to, tok = stWide, 1
			case clsExtend:
				if gap { // a mark with nothing to attach to starts a word
					to, tok = stWord, 1
				}
			default:
				first := runStart[k]
				if st >= first && st < first+runLen[k]-1 {
					to = st + 1 // same run, same token
				} else {
					to, tok = first, 1 // a new run, or the next token of a long one
				}
			}
			t[st][k] = to<<1 | tok
		}
	}
	return t
}()

var quadNext, quadTokens = func() (q [numStates * quadCodes]uint16, n [numStates * quadCodes]uint8) {
	for st := range uint8(numStates) {
		for code := range quadCodes {
			s, tok := st, uint8(0)
			for k, c := 0, code; k < 4; k, c = k+1, c/5 {
				e := next[s][c%5]
				tok += e & 1
				s = e >> 1
			}
			i := int(st)*quadCodes + code
			q[i], n[i] = uint16(s)*quadCodes, tok
		}
	}
	return q, n
}()

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
