package firewall

//go:generate go run ./internal/skelgen/cmd/skelgen -keyword ingestddata -o skeleton_table.go

import (
	"math/bits"
	"slices"
	"strings"
	"unicode/utf8"
)

// Symbols of the skeleton besides the keyword's letters (see the package
// comment and skeleton_table.go). A keyword letter in lower case stands for
// the letter; in upper case ('I' for '|', 'A' for '@'), for the letter or
// for nothing, as the reader takes it.
const (
	symOther = 'x' // a letter or digit that is not one of the keyword's
	symOpen  = '<' // '<' and its look-alikes
	symPunct = '.' // anything else visible
)

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

// kwPos[c] has bit j set when symbol c can be keyword[j]; kwSkip[c] is
// set when the matcher may pass over c: '.', '<' and the upper-case
// letters.
var kwPos, kwSkip = func() (pos [256]uint16, skip [256]bool) {
	for j := 0; j < len(keyword); j++ {
		pos[keyword[j]] |= 1 << j
		pos[keyword[j]-'a'+'A'] |= 1 << j
	}
	for c := 'A'; c <= 'Z'; c++ {
		skip[c] = true
	}
	skip[symPunct], skip[symOpen] = true, true
	return pos, skip
}()

// The keyword matcher is a bit-parallel (shift-and) automaton: bit j of
// its state is set when the symbols since the last 'x' can end with
// keyword[:j+1]. A letter in upper case both moves the state on and keeps
// it, so every reading of it is tried at once.
const (
	kwAll = 1<<len(keyword) - 1
	kwHit = 1 << (len(keyword) - 1)
	// kwRing is how many of the latest letters the matcher remembers to
	// find where a match starts (a power of two).
	kwRing = 32
)

// The keyword must fit the state and the ring.
const _ = uint(16 - len(keyword))
const _ = uint(kwRing - len(keyword))

// kwMatcher finds keyword matches in a stream of symbols.
type kwMatcher struct {
	state uint16
	n     int // letters fed since the start
	since int // n at the last 'x'
	// ring holds, for the last kwRing letters, the byte offset of its rune
	// shifted left by 8 and the symbol.
	ring [kwRing]int
}

// step feeds symbol c of the rune at byte offset i and reports whether a
// match ends with it, and where it starts.
func (m *kwMatcher) step(c byte, i int) (start int, hit bool) {
	switch c {
	case symPunct, symOpen:
		return 0, false
	case symOther:
		m.state, m.since = 0, m.n
		return 0, false
	}
	next := (m.state<<1 | 1) & kwPos[c]
	if kwSkip[c] {
		next |= m.state
	}
	m.state = next
	m.ring[m.n%kwRing] = i<<8 | int(c)
	m.n++
	if next&kwHit == 0 {
		return 0, false
	}
	m.state &^= kwHit
	return m.start(), true
}

// start returns the byte offset of the rune where the match that the last
// letter ended starts: the latest start, walking the remembered letters
// back. Should the match reach past the ring (more than kwRing letters,
// the upper-case ones taken as nothing), the oldest remembered letter is
// taken: the span is then shorter than the match, and what is left of it
// is no match once the span is defused (see defusedKeyword).
func (m *kwMatcher) start() int {
	need := uint16(1) << (len(keyword) - 2) // the position the letter before must be
	oldest := max(m.since, m.n-kwRing)
	k := m.n - 2
	for ; k >= oldest; k-- {
		e := m.ring[k%kwRing]
		c := byte(e)
		if need&kwPos[c]&1 != 0 {
			return e >> 8
		}
		next := need & kwPos[c] >> 1
		if kwSkip[c] {
			next |= need
		}
		need = next
	}
	return m.ring[max(oldest, 0)%kwRing] >> 8
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
	// (letters that may stand for nothing let matches overlap): keep the first of overlapping spans,
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
// On printable ASCII it says true exactly when reveal and scanMarkers would
// change nothing (FuzzASCIIFastPath); it may give up (say false) on
// characters of several symbols it cannot walk, none of which is ASCII in
// today's table.
//
// It classifies eight bytes at a time through asciiClass and looks closer
// only at odd bytes and anchors: every run of '<' starts with an anchor, and
// every keyword match has one at its position kwAnchor (its 'g', or '6' or
// '9' standing in for it). Most anchors are dismissed by the byte or two after
// them (asciiNext); the rest are checked one by one.
func asciiClean(s string) bool {
	const ones = 0x0101010101010101
	i := 0
	for ; i+8 <= len(s); i += 8 {
		b := s[i : i+8]
		m := uint64(asciiClass[b[0]]) | uint64(asciiClass[b[1]])<<8 | uint64(asciiClass[b[2]])<<16 | uint64(asciiClass[b[3]])<<24 |
			uint64(asciiClass[b[4]])<<32 | uint64(asciiClass[b[5]])<<40 | uint64(asciiClass[b[6]])<<48 | uint64(asciiClass[b[7]])<<56
		if m == 0 {
			continue
		}
		if m&(classOdd*ones) != 0 {
			return false
		}
		for m &= classAnchor * ones; m != 0; m &= m - 1 {
			j := i + bits.TrailingZeros64(m)/8
			// Most anchors are dismissed by the byte or two after them.
			if j+2 < len(s) {
				if n1 := asciiNext[s[j+1]]; n1&nextMisfit != 0 || n1&nextThin != 0 && asciiNext[s[j+2]]&nextMisfit != 0 {
					continue
				}
			}
			if !asciiSafeAt(s, j) {
				return false
			}
		}
	}
	for ; i < len(s); i++ {
		if c := asciiClass[s[i]]; c&classOdd != 0 || c&classAnchor != 0 && !asciiAnchorSafe(s, i) {
			return false
		}
	}
	return true
}

// asciiAnchorSafe reports whether no marker goes through the anchor s[i]:
// most anchors are dismissed by the byte or two after them (asciiNext),
// the rest by asciiSafeAt. asciiClean's word loop has it inlined by hand.
func asciiAnchorSafe(s string, i int) bool {
	if i+2 < len(s) {
		if n1 := asciiNext[s[i+1]]; n1&nextMisfit != 0 || n1&nextThin != 0 && asciiNext[s[i+2]]&nextMisfit != 0 {
			return true
		}
	}
	return asciiSafeAt(s, i)
}

// asciiClass and asciiNext classify bytes for asciiClean, from the
// skeleton table.
var asciiClass, asciiNext = asciiClasses()

const (
	// classOdd: not printable ASCII, \n or \t; the fast path gives up.
	classOdd = 1 << iota
	// classAnchor: can start a run of '<' or stand at keyword position
	// kwAnchor.
	classAnchor
)

const (
	// nextMisfit: its first symbol ends a run of '<' and cannot stand at
	// keyword position kwAnchor+1, so no marker goes on through it from an
	// anchor just before.
	nextMisfit = 1 << iota
	// nextThin: stands for nothing but punctuation, or for one '<'; a
	// misfit right after it ends what an anchor before it started.
	nextThin
)

func asciiClasses() (class, next [256]uint8) {
	for c := range class {
		if c >= 0x7f || c < 0x20 && c != '\n' && c != '\t' {
			class[c] = classOdd
			continue
		}
		syms := skelASCII[c]
		for q := 0; q < len(syms) && syms[q] != symOther; q++ {
			if d := syms[q]; d == symOpen || kwPos[d]&(1<<kwAnchor) != 0 {
				class[c] = classAnchor
			}
		}
		if len(syms) > 0 {
			if d := syms[0]; !kwSkip[d] && kwPos[d]&(1<<(kwAnchor+1)) == 0 {
				next[c] |= nextMisfit
			}
		}
		thin := syms == string(symOpen)
		if !strings.Contains(syms, string(symOpen)) {
			thin = true
			for q := 0; q < len(syms); q++ {
				if d := syms[q]; !kwSkip[d] || kwPos[d]&(1<<(kwAnchor+1)) != 0 {
					thin = false
				}
			}
		}
		if thin {
			next[c] |= nextThin
		}
	}
	return class, next
}

// asciiFwd and asciiBack say how an ASCII character reads in the keyword
// matcher, forward (its first symbol) and backward (its last): bits 0 to 10
// are the keyword positions that symbol fits, with walkSkip when the
// matcher may pass over the whole character; a character that fits nowhere
// and cannot be passed over (a letter that is not the keyword's) ends the
// walk. A character standing for several symbols fits only where the
// others allow ("%" stands for "xd", so backward its 'd' fits position 0
// only, which is an 'i') or is walkGiveUp, on which asciiClean leaves s to
// the general path.
var asciiFwd, asciiBack = asciiWalkTables()

const (
	walkSkip   = 1 << 13
	walkGiveUp = 1 << 14
)

func asciiWalkTables() (fwd, back [utf8.RuneSelf]uint16) {
	fits := func(c byte) uint16 {
		if kwSkip[c] {
			return kwPos[c] | walkSkip
		}
		return kwPos[c]
	}
	for c := range fwd {
		syms := strings.Trim(skelASCII[c], string([]byte{symPunct, symOpen}))
		switch {
		case syms == "":
			fwd[c], back[c] = walkSkip, walkSkip
		case len(syms) == 1:
			fwd[c], back[c] = fits(syms[0]), fits(syms[0])
		case len(syms) == 2 && syms[0] == symOther && syms[1] != symOther:
			// "x" then one symbol: forward the 'x' ends the walk; backward
			// the symbol can only start a match.
			fwd[c], back[c] = 0, kwPos[syms[1]]&1
		default:
			fwd[c], back[c] = walkGiveUp, walkGiveUp
		}
	}
	return fwd, back
}

// asciiSafeAt reports whether no '<' run starts at the anchor s[i] and no
// keyword match has s[i] at position kwAnchor. Non-ASCII bytes end a look;
// the caller rejects them anyway. The walks keep the set of positions the
// next character may take, since a character that may stand for nothing
// leaves them and moves them on at once.
func asciiSafeAt(s string, i int) bool {
	if skelASCII[s[i]] == string(symOpen) {
		return !asciiRunAt(s, i)
	}
	p := asciiFwd[s[i]]
	if p&walkGiveUp != 0 || len(skelASCII[s[i]]) != 1 {
		return false
	}
	if p&(1<<kwAnchor) == 0 {
		return true
	}
	// Forward from position kwAnchor+1 to the keyword's end, then back
	// from kwAnchor-1 to its start.
	for j, need := i+1, uint16(1)<<(kwAnchor+1); ; j++ {
		if j >= len(s) || s[j] >= utf8.RuneSelf {
			return true
		}
		p := asciiFwd[s[j]]
		if p&walkGiveUp != 0 {
			return false
		}
		next := need & p << 1
		if next&(1<<len(keyword)) != 0 {
			break
		}
		if p&walkSkip != 0 {
			next |= need
		}
		if need = next & kwAll; need == 0 {
			return true
		}
	}
	for j, need := i-1, uint16(1)<<(kwAnchor-1); ; j-- {
		if j < 0 || s[j] >= utf8.RuneSelf {
			return true
		}
		p := asciiBack[s[j]]
		if p&walkGiveUp != 0 {
			return false
		}
		if need&p&1 != 0 {
			return false
		}
		next := need & p >> 1
		if p&walkSkip != 0 {
			next |= need
		}
		if need = next & kwAll; need == 0 {
			return true
		}
	}
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
