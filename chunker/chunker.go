// Package chunker splits a document's text into retrieval-sized chunks along
// its structure: markdown sections and blocks, paragraphs, sentences, and
// for mail the line between new text and quoted history.
//
// It is pure and deterministic: no I/O, no clock, no randomness; the same
// input gives the same chunks. It never rewrites text: every chunk is a
// whitespace-trimmed slice of the input, so every non-space character of the
// input is in some chunk, in order. It must never fence, embed or judge
// content: package pipeline fences each chunk with package firewall after
// splitting, and the tier of a chunk is its document's, never the chunker's.
package chunker

import (
	"strings"

	"github.com/ingestd/ingestd"
)

// Defaults for Options.
const (
	DefaultMaxTokens      = 400
	DefaultOverlapPercent = 15
)

// Options tunes Split. A nil *Options means the defaults.
type Options struct {
	// MaxTokens is the budget of one chunk in CountTokens tokens; <= 0
	// means DefaultMaxTokens. No chunk exceeds it: a word longer than the
	// budget is cut between characters as a last resort.
	MaxTokens int
	// OverlapTokens is how much of the end of a chunk the next one repeats
	// when a block (paragraph, list, code) was too long for one chunk and
	// had to be split. 0 means DefaultOverlapPercent of MaxTokens; < 0
	// means no overlap. It is capped at half of MaxTokens. Chunks that
	// hold whole blocks never overlap.
	OverlapTokens int
}

func (o *Options) budget() (maxTok, overlap int) {
	maxTok, overlap = DefaultMaxTokens, 0
	if o != nil {
		if o.MaxTokens > 0 {
			maxTok = o.MaxTokens
		}
		overlap = o.OverlapTokens
	}
	switch {
	case overlap == 0:
		overlap = maxTok * DefaultOverlapPercent / 100
	case overlap < 0:
		overlap = 0
	}
	return maxTok, min(overlap, maxTok/2)
}

// Chunk is one piece of a document's text.
type Chunk struct {
	// Text is a whitespace-trimmed slice of the input: it shares the
	// input's memory and is never empty.
	Text string
	// HeadingPath is the markdown heading path of the section the chunk
	// is in, e.g. ["Install", "Linux"]; nil outside markdown or before
	// the first heading. Chunks of one section share the slice: do not
	// modify it.
	HeadingPath []string
	// Tokens is CountTokens(Text).
	Tokens int
	// Quoted marks mail quoted history: "> " lines, and what follows an
	// attribution ("On ... wrote:") or an Outlook "-----Original
	// Message-----" / "From: ... Sent: ..." header. The pipeline does not
	// index these: they are copies of other messages.
	Quoted bool
	// Locator is the locator of the section the chunk is in (SplitSections);
	// "" from Split.
	Locator string
}

// Split cuts text into chunks of at most opts.MaxTokens tokens. format is
// one of ingestd.FormatPlain, FormatMarkdown, FormatHTML (text already
// converted by the connector) or FormatMail; "" and unknown formats are
// plain text.
//
// Markdown headings (ATX, and setext under a one-paragraph line) start a
// new section: no chunk spans two sections, except that a heading directly
// followed by a deeper one stays with it. Within a section, consecutive
// blocks (paragraphs, lists, fenced code, tables) are packed into one chunk
// while they fit; a block too long for a chunk is split at list items,
// sentences, lines, words and, last, characters, and consecutive pieces
// overlap by about opts.OverlapTokens, cut at a sentence or word boundary.
// Plain and HTML text have paragraphs and sentences. Mail separates quoted
// history (Quoted chunks) from the new text; no chunk mixes the two.
//
// Chunks are in input order. Split never returns an empty chunk; it
// returns nil for text that is all whitespace.
func Split(text, format string, opts *Options) []Chunk {
	maxTok, overlap := opts.budget()
	p := &packer{src: text, max: maxTok, overlap: overlap, cs: -1}
	if n := len(text)/(4*maxTok) + 1; n > 1 {
		p.out = make([]Chunk, 0, n+n/4)
	}
	p.split(format)
	return p.out
}

// SplitSections splits each section's text as Split does and returns the
// chunks of all of them in order, each with its section's Locator: a
// section's end always ends a chunk, so no chunk spans two sections (a
// page of a PDF, a heading section of a DOCX), and a section without text
// makes no chunk. Markdown headings carry over from one section to the
// next: a chunk's HeadingPath is what it would be in the text of all
// sections together, so the chunks of a page that goes on with a
// section begun on the page before keep its headings.
func SplitSections(sections []ingestd.Section, format string, opts *Options) []Chunk {
	maxTok, overlap := opts.budget()
	p := &packer{max: maxTok, overlap: overlap, cs: -1}
	for _, s := range sections {
		p.src, p.locator = s.Text, s.Locator
		p.split(format)
	}
	return p.out
}

// split adds p.src in the format and emits its last chunk.
func (p *packer) split(format string) {
	switch format {
	case ingestd.FormatMarkdown:
		p.markdown()
	case ingestd.FormatMail:
		p.mail()
	default:
		p.paragraphs(0, len(p.src), false)
	}
	p.flush(false)
}

// kind is the kind of a block, which decides how it is split when it is too
// long for one chunk.
type kind uint8

const (
	kindPara kind = iota
	kindList
	kindCode // fenced code, front matter, tables: split by lines
	kindHeading
)

// level is one way to cut a span into units, from coarse to fine.
type level uint8

const (
	lvItems     level = iota // list items
	lvSentences              // sentences
	lvLines                  // non-blank lines
	lvWords                  // whitespace-separated words
	lvClusters               // up to 4 characters, marks kept with their base
	lvRunes                  // single runes: a rune counts at most one token
)

var levelsFor = [...][]level{
	kindPara:    {lvSentences, lvLines, lvWords, lvClusters, lvRunes},
	kindList:    {lvItems, lvSentences, lvLines, lvWords, lvClusters, lvRunes},
	kindCode:    {lvLines, lvWords, lvClusters, lvRunes},
	kindHeading: {lvWords, lvClusters, lvRunes},
}

// packer builds chunks from units (trimmed spans of src) in one pass.
type packer struct {
	src          string
	max, overlap int
	out          []Chunk

	// The open chunk is src[cs:ce]; cs < 0 when there is none.
	cs, ce int
	tokens int  // sum of its units' counts: CountTokens(src[cs:ce]) unless approx
	approx bool // two of its units touch without whitespace, so tokens may be high
	fresh  bool // it holds text no chunk has emitted (false while it holds only overlap)
	body   bool // it holds more than headings
	piece  bool // it holds a piece of a block that was split (or the overlap of one)

	// Where the open chunk's units start, the latest len(marks) of them:
	// the overlap prefers to start at one.
	marks  [8]mark
	nmarks int

	// The block being added.
	blockStart int
	blockBody  bool

	quoted  bool   // mail: the region being added is quoted history
	locator string // the locator of the section being added

	sents []sentence // the sentences of the paragraph being added

	// Markdown heading stack and the path handed to chunks.
	heads     []heading
	lastLevel int // level of the heading last added to the open chunk
	path      []string
	pathDirty bool
}

// mark is where a unit of the open chunk starts and the chunk's tokens
// before it.
type mark struct{ pos, before int }

type heading struct {
	level int
	text  string
}

// block adds the block src[bs:be] (trimmed here) as a whole if it fits.
func (p *packer) block(bs, be int, k kind) {
	bs, be = trimSpan(p.src, bs, be)
	if bs >= be {
		return
	}
	if k == kindPara && p.src[bs] == '|' {
		k = kindCode // a table: its rows are its lines
	}
	p.blockStart = bs
	p.blockBody = k != kindHeading
	if k == kindPara {
		p.paragraph(bs, be)
		return
	}
	p.add(bs, be, countTokens(p.src[bs:be], p.max), levelsFor[k], false)
}

// add places the unit src[us:ue] of tok tokens (any count above p.max when
// it is over budget): into the open chunk if it fits, else into a new
// chunk, else split by levels. inSplit says the unit
// is a piece of a block, so a chunk flushed to make room for it passes its
// tail on as overlap.
func (p *packer) add(us, ue, tok int, levels []level, inSplit bool) {
	if p.cs >= 0 {
		gap := 0 // the whitespace between the open chunk and the unit
		if us > p.ce {
			gap = CountTokens(p.src[p.ce:us])
		}
		if p.tokens+gap+tok <= p.max {
			p.extend(us, ue, gap, tok, inSplit)
			return
		}
		if tok <= p.max {
			if p.fresh {
				p.flush(inSplit) // an overlap tail it keeps ends where the chunk did: same gap
				if p.cs >= 0 && p.tokens+gap+tok <= p.max {
					p.extend(us, ue, gap, tok, inSplit)
					return
				}
			}
			p.start(us, ue, tok, inSplit) // drops overlap that leaves no room for the unit
			return
		}
	} else if tok <= p.max {
		p.start(us, ue, tok, inSplit)
		return
	}
	if len(levels) == 0 { // unreachable: a rune counts at most one token and max >= 1
		p.flush(false)
		p.start(us, ue, tok, inSplit)
		return
	}
	lv, rest := levels[0], levels[1:]
	for pos := us; pos < ue; {
		a, b, next := nextUnit(p.src, lv, pos, ue)
		if a < b {
			p.add(a, b, countTokens(p.src[a:b], p.max), rest, true)
		}
		pos = next
	}
}

// start opens a chunk with the unit src[us:ue] of tok tokens; piece says
// the unit is a piece of a block being split.
func (p *packer) start(us, ue, tok int, piece bool) {
	p.cs, p.ce, p.tokens = us, ue, tok
	p.approx, p.fresh, p.body, p.piece = false, true, p.blockBody, piece
	p.nmarks = 0
}

// extend adds the unit src[us:ue] of tok tokens to the open chunk, after
// whitespace of gap tokens; piece says the unit is a piece of a block
// being split.
func (p *packer) extend(us, ue, gap, tok int, piece bool) {
	// Units are trimmed and everything between them is whitespace, so
	// counts add up exactly unless two units touch (a cut inside a word):
	// then the sum may be high.
	p.approx = p.approx || us == p.ce
	p.tokens += gap
	p.marks[p.nmarks%len(p.marks)] = mark{us, p.tokens}
	p.nmarks++
	p.ce = ue
	p.tokens += tok
	p.fresh = true
	p.body = p.body || p.blockBody
	p.piece = p.piece || piece
}

// flush emits the open chunk if it holds new text. With overlap, and when
// the chunk holds part of the block being split, the chunk's tail stays
// open as the start of the next chunk; otherwise nothing stays open.
func (p *packer) flush(overlap bool) {
	if p.cs < 0 {
		return
	}
	if p.fresh {
		text := p.src[p.cs:p.ce]
		tok := p.tokens
		if p.approx {
			tok = CountTokens(text)
		}
		p.out = append(p.out, Chunk{Text: text, HeadingPath: p.headingPath(), Tokens: tok, Quoted: p.quoted, Locator: p.locator})
		if overlap && p.overlap > 0 && p.ce > p.blockStart {
			if o, tok := p.overlapStart(); o > p.cs {
				p.cs, p.tokens = o, tok
				p.approx, p.fresh, p.piece = false, false, true
				p.nmarks = 0
				return
			}
		}
	}
	p.cs = -1
}

// overlapStart finds where the tail of the open chunk that the next chunk
// repeats begins. It is the earliest start of a unit added to the chunk
// (a sentence, a line of code, a list item, a block) whose tail fits the
// overlap budget and is at least a quarter of it; else the earliest
// sentence start, else line start, found by scanning back, with the same
// bounds; else the earliest word start that fits. It returns the tail's
// start and tokens, or -1 when not even the last word fits. The tail is
// never the whole chunk.
func (p *packer) overlapStart() (start, tokens int) {
	if !p.approx { // then tokens after a mark are exact
		for k := max(0, p.nmarks-len(p.marks)); k < p.nmarks; k++ {
			m := p.marks[k%len(p.marks)]
			if tail := p.tokens - m.before; m.pos > p.cs && tail <= p.overlap {
				if 4*tail >= p.overlap {
					return m.pos, tail
				}
				break
			}
		}
	}
	src := p.src
	word, wordTok, sent, sentTok, line, lineTok, tok := -1, 0, -1, 0, -1, 0, 0
	for j, to := p.ce, p.ce; j > p.cs; { // src[to:p.ce] is counted
		ws := j // start of the word that ends at j
		for ws > p.cs {
			sp, n := spaceBefore(src, ws)
			if sp {
				break
			}
			ws -= n
		}
		if ws <= p.cs {
			break
		}
		if tok += CountTokens(src[ws:to]); tok > p.overlap {
			break
		}
		word, wordTok = ws, tok
		if sentenceStartsAt(src, p.cs, ws) {
			sent, sentTok = ws, tok
		}
		newline := false
		for j = ws; j > p.cs; {
			sp, n := spaceBefore(src, j)
			if !sp {
				break
			}
			newline = newline || src[j-1] == '\n'
			j -= n
		}
		if newline {
			line, lineTok = ws, tok
		}
		to = ws
	}
	switch {
	case sent >= 0 && 4*sentTok >= p.overlap:
		return sent, sentTok
	case line >= 0 && 4*lineTok >= p.overlap:
		return line, lineTok
	}
	return word, wordTok
}

// fits reports whether the span src[us:ue] fits into the open chunk, with
// the whitespace between them, as add would find it.
func (p *packer) fits(us, ue int) bool {
	gap := 0
	if us > p.ce {
		gap = CountTokens(p.src[p.ce:us])
	}
	return p.tokens+gap+countTokens(p.src[us:ue], p.max) <= p.max
}

// headingPath returns the current heading path, building a new slice only
// when it changed.
func (p *packer) headingPath() []string {
	if p.pathDirty {
		p.pathDirty = false
		p.path = nil
		if len(p.heads) > 0 {
			p.path = make([]string, len(p.heads))
			for i, h := range p.heads {
				p.path[i] = h.text
			}
		}
	}
	return p.path
}

// heading starts a markdown section at the heading src[bs:be] with the
// given level and text. The open chunk is flushed unless it holds only
// whole headings above this one and the heading fits beside them: the
// chunk takes this section's heading path, which is right only for
// headings the chunk holds whole. A piece of a heading too long for one
// chunk began in a chunk emitted under the section before (and may repeat
// its tail as overlap), so it ends its chunk.
func (p *packer) heading(lvl int, text string, bs, be int) {
	bs, be = trimSpan(p.src, bs, be)
	if p.cs >= 0 && (p.body || p.piece || lvl <= p.lastLevel || !p.fits(bs, be)) {
		p.flush(false)
	}
	i := len(p.heads)
	for i > 0 && p.heads[i-1].level >= lvl {
		i--
	}
	p.heads = p.heads[:i]
	if text = strings.TrimSpace(text); text != "" {
		p.heads = append(p.heads, heading{lvl, text})
	}
	p.pathDirty = true
	p.lastLevel = lvl
	p.block(bs, be, kindHeading)
}

// paragraphs adds src[s:e] as blank-line separated paragraphs. With
// quoteAware, a line of only '>' and spaces (an empty line of quoted mail)
// separates paragraphs too, and is a block of its own.
func (p *packer) paragraphs(s, e int, quoteAware bool) {
	src := p.src
	ps := -1 // start of the open paragraph
	for pos := s; pos < e; {
		le := lineEnd(src, pos, e)
		if line := src[pos:le]; isBlank(line, quoteAware) {
			if ps >= 0 {
				p.block(ps, pos, kindPara)
				ps = -1
			}
			if quoteAware {
				p.block(pos, le, kindPara) // the '>' marks, if any
			}
		} else if ps < 0 {
			ps = pos
		}
		pos = le + 1
	}
	if ps >= 0 {
		p.block(ps, e, kindPara)
	}
}
