package chunker

import "unicode/utf8"

// sentence is a sentence of the paragraph being added: src[a:b] and its
// tokens, or -1 when they are still to be counted.
type sentence struct{ a, b, tok int }

// paragraph adds the paragraph src[bs:be] (trimmed, not a table) as add
// would with its count, giving the same chunks with less scanning. A short
// one is counted with a limit, which stops early if it is too long after
// all. A long one is counted and cut into sentences in one pass
// (sentences), instead of being counted up to the budget, then cut, then
// counted again sentence by sentence.
func (p *packer) paragraph(bs, be int) {
	levels := levelsFor[kindPara]
	if (be-bs)/4 <= p.max { // likely within budget: prose runs at about 4.4 bytes a token
		if tok := countTokens(p.src[bs:be], p.max); tok <= p.max {
			p.add(bs, be, tok, levels, false)
			return
		}
	}
	if tok := p.sentences(bs, be); tok <= p.max {
		p.add(bs, be, tok, levels, false)
		return
	}
	// What add does with a unit over budget: split it at levels[0].
	for _, s := range p.sents {
		tok := s.tok
		if tok < 0 {
			tok = countTokens(p.src[s.a:s.b], p.max)
		}
		p.add(s.a, s.b, tok, levels[1:], true)
	}
}

// sentences counts the tokens of the trimmed span src[bs:be] and sets
// p.sents to its sentences, the units that nextUnit(lvSentences) finds
// in it, in one pass.
//
// A sentence's tokens are the difference of the running count at its ends
// when whitespace (or bs) precedes it: a run that starts after whitespace
// counts as it would from the start of a string. A sentence that follows a
// CJK terminator without a space gets tok -1: the run before it may go on
// into it.
func (p *packer) sentences(bs, be int) int {
	s := p.src[:be] // runes decode as in src[bs:be]
	if p.sents == nil {
		p.sents = make([]sentence, 0, 64) // reused for every long paragraph of the document
	}
	p.sents = p.sents[:0]
	n, st := 0, uint8(stStart)
	a, na, exact := bs, 0, true // the open sentence: start, count before it, whether it follows whitespace
	for i := bs; i < be; {
		// countFrom's fast loop, stopping before four bytes with a
		// terminator.
		if i+8 <= be {
			q := uint(st) * quadCodes
			for ; i+8 <= be; i += 8 {
				b := s[i : i+8]
				c0, c1, c2, c3 := byteStopClass[b[0]], byteStopClass[b[1]], byteStopClass[b[2]], byteStopClass[b[3]]
				c4, c5, c6, c7 := byteStopClass[b[4]], byteStopClass[b[5]], byteStopClass[b[6]], byteStopClass[b[7]]
				if (c0|c1|c2|c3|c4|c5|c6|c7)&(byteNonASCII|byteStop) != 0 {
					if (c0|c1|c2|c3)&(byteNonASCII|byteStop) == 0 {
						k := q + quad(c0, c1, c2, c3)
						n += int(quadTokens[k])
						q = uint(quadNext[k])
						i += 4
					}
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
		if i >= be {
			break
		}
		// One rune, as sentenceEnd and countFrom see it.
		c := s[i]
		if c == '.' || c == '!' || c == '?' {
			j := skipTerminators(s, i+1, be)
			n, st = countFrom(s[i:j], st, n, len(s))
			if sentenceBreak(s, a, i, j, be) {
				p.endSentence(a, j, n-na, exact)
				k := skipSpace(s, j, be)
				n, st = countFrom(s[j:k], st, n, len(s))
				a, na, exact = k, n, k > j
			}
			i = max(j, a) // past the whitespace counted after a sentence end
			continue
		}
		var e uint8
		if c < utf8.RuneSelf {
			e = next[st%numStates][asciiClass[c]]
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			e = next[st%numStates][runeClass(r)]
			if isWideTerminator(r) {
				n += int(e & 1)
				st = e >> 1
				j := skipTerminators(s, i, be)
				n, st = countFrom(s[i:j], st, n, len(s))
				if j < be {
					p.endSentence(a, j, n-na, exact)
					k := skipSpace(s, j, be)
					n, st = countFrom(s[j:k], st, n, len(s))
					a, na, exact = k, n, k > j
				}
				i = max(j, a)
				continue
			}
		}
		n += int(e & 1)
		st = e >> 1
	}
	if a < be {
		p.endSentence(a, be, n-na, exact)
	}
	return n
}

// endSentence appends the sentence src[a:b] of tok tokens, which are
// exact only when it follows whitespace.
func (p *packer) endSentence(a, b, tok int, exact bool) {
	if !exact {
		tok = -1
	}
	p.sents = append(p.sents, sentence{a, b, tok})
}
