package firewall

//go:generate go run ./internal/skelgen/cmd/skelgen -keyword ingestddata -o skeleton_table.go

import (
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
)

// Symbols of the skeleton besides the keyword's letters (see the package
// comment and skeleton_table.go).
const (
	symOther = 'x' // a letter that is not one of the keyword's
	symDigit = '#' // a digit: stands in for any keyword letter, maxWild times
	symOpen  = '<' // '<' and its look-alikes
	symPunct = '.' // anything else visible
)

// maxWild is how many digits a keyword match may hold in place of letters
// ("1NGE5TD D4TA" holds two: '1' is a look-alike of 'I').
const maxWild = 3

// symbolsAt returns the skeleton symbols of the rune at the start of s and
// the rune's size. Invalid UTF-8 stands for U+FFFD.
func symbolsAt(s string) (string, int) {
	if c := s[0]; c < utf8.RuneSelf {
		return skelASCII[c], 1
	}
	r, size := utf8.DecodeRuneInString(s)
	return runeSymbols(r), size
}

// runeSymbols returns the skeleton symbols of a non-ASCII rune.
func runeSymbols(r rune) string {
	i, _ := slices.BinarySearch(skelStart[:], uint32(r)+1)
	return skelSyms[skelID[i-1]]
}

// skeletonOf returns the skeleton of s: the symbols of its runes in order.
// Tests view text through it.
func skeletonOf(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); {
		syms, size := symbolsAt(s[i:])
		sb.WriteString(syms)
		i += size
	}
	return sb.String()
}

// kwPos[c] has bit j set when symbol c matches keyword[j].
var kwPos = func() (t [256]uint16) {
	for j := 0; j < len(keyword); j++ {
		t[keyword[j]] |= 1 << j
	}
	return t
}()

// The keyword matcher is a bit-parallel (shift-and) automaton with one
// 16-bit lane for each number of digits used so far: bit j of lane w is set
// when the last j+1 symbols match keyword[:j+1] with w digits among them.
const (
	laneBits = 16
	laneOnes = 0x0001_0001_0001_0001 // bit 0 of each of the maxWild+1 lanes
	kwAll    = 1<<len(keyword) - 1
	kwHit    = 1 << (len(keyword) - 1) * laneOnes
)

// The keyword must fit a lane, and a match the ring of offsets below.
const _ = uint(laneBits - 1 - len(keyword))

// kwMatcher finds keyword matches in a stream of symbols.
type kwMatcher struct {
	state uint64
	n     int           // symbols that took part (letters and digits)
	at    [laneBits]int // byte offsets of the last 16 such symbols
}

// step feeds symbol c of the rune at byte offset i and reports whether a
// match ends with it, and where it starts.
func (m *kwMatcher) step(c byte, i int) (start int, hit bool) {
	switch c {
	case symPunct, symOpen:
		return 0, false
	case symOther:
		m.state = 0
		return 0, false
	case symDigit:
		m.state = (m.state<<1 | 1) << laneBits & (kwAll * laneOnes)
	default:
		m.state = (m.state<<1 | 1) & (uint64(kwPos[c]) * laneOnes)
	}
	m.at[m.n%laneBits] = i
	m.n++
	if m.state&kwHit == 0 {
		return 0, false
	}
	m.state &^= kwHit
	return m.at[(m.n-len(keyword))%laneBits], true
}

// scanMarkers finds what must be defused in s: every match of the marker
// keyword in the skeleton of s, and every rune of a run of minLTRun or more
// '<' symbols (runes standing for nothing may separate them; anything else
// ends the run). With first it stops at the first find. Spans are sorted
// and do not overlap.
func scanMarkers(s string, first bool) []span {
	type ltRune struct{ at, size, n int }
	var (
		out []span
		kw  kwMatcher
		run []ltRune
		lts int
	)
	flushRun := func() {
		if lts >= minLTRun {
			for _, r := range run {
				out = append(out, span{r.at, r.at + r.size, strings.Repeat(string(defusedLT), r.n)})
			}
		}
		run, lts = run[:0], 0
	}
	for i := 0; i < len(s); {
		syms, size := symbolsAt(s[i:])
		for j := 0; j < len(syms); j++ {
			c := syms[j]
			if c == symOpen {
				if len(run) == 0 || run[len(run)-1].at != i {
					run = append(run, ltRune{at: i, size: size})
				}
				run[len(run)-1].n++
				lts++
				continue
			}
			flushRun()
			if start, hit := kw.step(c, i); hit {
				out = append(out, span{start, i + size, defusedKeyword})
			}
		}
		if first && len(out) > 0 {
			return out
		}
		i += size
	}
	flushRun()
	if len(out) == 0 {
		return nil
	}
	slices.SortStableFunc(out, func(a, b span) int { return a.start - b.start })
	// A keyword span may cover brackets of a run or overlap another match
	// (digits let matches overlap): keep the first of overlapping spans,
	// widened to cover the later one.
	kept := out[:1]
	for _, sp := range out[1:] {
		last := &kept[len(kept)-1]
		if sp.start < last.end {
			if sp.end > last.end {
				last.end = sp.end
			}
			if sp.repl == defusedKeyword {
				last.repl = defusedKeyword
			}
			continue
		}
		kept = append(kept, sp)
	}
	return kept
}

// asciiClean reports whether s is printable ASCII (plus \n and \t) with
// nothing to defuse: the fast path, on which Fence copies the body as is.
// It agrees with reveal and scanMarkers on every ASCII input.
//
// It reads eight bytes at a time and stops only at anchors (see
// anchorMask): every run of '<' starts with one, and every keyword match has
// one at its position 2 (its 'g', or a digit standing in for it), so
// checking through each anchor finds them all.
func asciiClean(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if w&hi != 0 {
			return false
		}
		if ctl := (^(w + 0x60*ones) | (w + ones)) & hi; ctl != 0 { // below 0x20, or 0x7f
			if ctl&^(eqByte(w, '\n')|eqByte(w, '\t')) != 0 {
				return false
			}
		}
		for m := anchorMask(w); m != 0; m &= m - 1 {
			if !asciiSafeAt(s, i+bits.TrailingZeros64(m)/8) {
				return false
			}
		}
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c >= 0x7f || c < 0x20 && c != '\n' && c != '\t' {
			return false
		}
		if anchorMask(uint64(c)) != 0 && !asciiSafeAt(s, i) {
			return false
		}
	}
	return true
}

// Word-at-a-time constants: the low seven bits, the high bit and the low bit
// of each byte.
const (
	lo7  = 0x7f7f7f7f7f7f7f7f
	hi   = 0x8080808080808080
	ones = 0x0101010101010101
)

// eqByte returns the high bit of each byte of w that equals c. Every byte
// of w must be ASCII.
func eqByte(w uint64, c byte) uint64 { return ^((w ^ uint64(c)*ones) + lo7) & hi }

// anchorMask returns the high bit of each byte of the ASCII word w at which
// asciiClean looks closer: '0' to '<' (the digits, ':', ';' and '<'), 'g'
// and 'G', and '%' (whose skeleton ends in a digit). TestASCIIAnchors checks
// that these cover every ASCII character standing for '<', a digit or the
// keyword's third letter.
func anchorMask(w uint64) uint64 {
	digitsToLT := (w + (0x80-'0')*ones) &^ (w + (0x80-'<'-1)*ones) & hi
	return digitsToLT | eqByte(w|0x20*ones, 'g') | eqByte(w, '%')
}

// asciiPos[c] says, for an ASCII character c standing for one symbol, at
// which keyword positions it fits (bits 0 to 10; all of them for a digit),
// with posDigit for a digit and posSkip for a symbol the matcher skips;
// posSlow marks a character standing for several symbols.
var asciiPos = func() (t [utf8.RuneSelf]uint16) {
	for c := range t {
		switch syms := skelASCII[c]; {
		case len(syms) > 1:
			t[c] = posSlow
		case syms == "", syms[0] == symPunct, syms[0] == symOpen:
			t[c] = posSkip
		case syms[0] == symDigit:
			t[c] = kwAll | posDigit
		default:
			t[c] = kwPos[syms[0]]
		}
	}
	return t
}()

const (
	posDigit = 1 << 12
	posSkip  = 1 << 13
	posSlow  = 1 << 14
)

// asciiSafeAt reports whether no '<' run starts at the anchor s[i] and no
// keyword match has a symbol of s[i] at position 2. Non-ASCII bytes end a
// look; the caller rejects them anyway.
func asciiSafeAt(s string, i int) bool {
	if s[i] == '<' {
		return !asciiRunAt(s, i)
	}
	p := asciiPos[s[i]]
	switch {
	case p&posSlow != 0:
		syms := skelASCII[s[i]]
		for q := 0; q < len(syms); q++ {
			if c := syms[q]; c == symOpen && asciiRunAt(s, i) ||
				(c == symDigit || kwPos[c]&(1<<kwAnchor) != 0) && asciiKeywordAtSlow(s, i, q) {
				return false
			}
		}
		return true
	case p&(1<<kwAnchor) == 0:
		return true
	}
	wild := 0
	if p&posDigit != 0 {
		wild++
	}
	// Forward from position kwAnchor+1, then back from kwAnchor-1.
	pos := kwAnchor + 1
	for j := i + 1; pos < len(keyword); j++ {
		if j >= len(s) || s[j] >= utf8.RuneSelf {
			return true
		}
		p := asciiPos[s[j]]
		switch {
		case p&(1<<pos) != 0:
			if p&posDigit != 0 {
				if wild++; wild > maxWild {
					return true
				}
			}
			pos++
		case p&posSkip != 0:
		case p&posSlow != 0:
			return !asciiKeywordAtSlow(s, i, 0)
		default:
			return true
		}
	}
	pos = kwAnchor - 1
	for j := i - 1; pos >= 0; j-- {
		if j < 0 || s[j] >= utf8.RuneSelf {
			return true
		}
		p := asciiPos[s[j]]
		switch {
		case p&(1<<pos) != 0:
			if p&posDigit != 0 {
				if wild++; wild > maxWild {
					return true
				}
			}
			pos--
		case p&posSkip != 0:
		case p&posSlow != 0:
			return !asciiKeywordAtSlow(s, i, 0)
		default:
			return true
		}
	}
	return false
}

// kwAnchor is the keyword position asciiClean anchors on: its 'g', the
// rarest of its letters in English text.
const kwAnchor = 2

// asciiRunAt reports whether a run of minLTRun '<' symbols starts at s[i],
// which stands for '<'.
func asciiRunAt(s string, i int) bool {
	n := 0
	for ; i < len(s) && s[i] < utf8.RuneSelf; i++ {
		for _, c := range []byte(skelASCII[s[i]]) {
			if c != symOpen {
				return false
			}
			if n++; n >= minLTRun {
				return true
			}
		}
	}
	return false
}

// asciiKeywordAtSlow reports whether symbol q of s[i] stands at position
// kwAnchor of a keyword match in the skeleton of s. It reads characters
// standing for several symbols, which asciiSafeAt leaves to it.
func asciiKeywordAtSlow(s string, i, q int) bool {
	wild := 0
	fits := func(c byte, pos int) bool {
		if c == symDigit {
			wild++
			return wild <= maxWild
		}
		return kwPos[c]&(1<<pos) != 0
	}
	syms := skelASCII[s[i]]
	if !fits(syms[q], kwAnchor) {
		return false
	}
	pos, j, rest := kwAnchor+1, i, syms[q+1:]
	for pos < len(keyword) {
		for k := 0; k < len(rest) && pos < len(keyword); k++ {
			if c := rest[k]; c != symPunct && c != symOpen {
				if !fits(c, pos) {
					return false
				}
				pos++
			}
		}
		if pos == len(keyword) {
			break
		}
		if j++; j >= len(s) || s[j] >= utf8.RuneSelf {
			return false
		}
		rest = skelASCII[s[j]]
	}
	pos, j, rest = kwAnchor-1, i, syms[:q]
	for {
		for k := len(rest) - 1; k >= 0 && pos >= 0; k-- {
			if c := rest[k]; c != symPunct && c != symOpen {
				if !fits(c, pos) {
					return false
				}
				pos--
			}
		}
		if pos < 0 {
			return true
		}
		if j--; j < 0 || s[j] >= utf8.RuneSelf {
			return false
		}
		rest = skelASCII[s[j]]
	}
}
