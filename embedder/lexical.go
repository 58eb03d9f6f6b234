package embedder

import (
	"context"
	"math"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/ingestd/ingestd/internal/lexnorm"
)

// DefaultLexicalDims is the dimension NewLexical uses when given none.
const DefaultLexicalDims = 384

// Feature weights of the lexical embedder. A word counts fully; a frequent
// function word ("the", "of") counts little so that it cannot make two
// unrelated English texts look alike; a pair of neighbouring words counts
// half (it carries phrase and order); a character 3-gram counts a quarter
// (it makes "embedding" and "embeddings" or a typo land near each other
// without drowning the words themselves — a word of n runes yields n
// 3-grams). Each weight is multiplied by the sublinear term frequency
// 1+ln(tf) of its feature in the text.
const (
	weightWord     = 1.0
	weightStopword = 0.2
	weightBigram   = 0.5
	weightGram     = 0.25

	// maxGramRunes bounds the words that get character 3-grams: longer
	// "words" are hashes, base64 or minified code, whose hundreds of random
	// 3-grams would otherwise outweigh the prose around them.
	maxGramRunes = 64
)

// Feature classes, kept in the top two bits of a feature key.
const (
	classWord = iota
	classStopword
	classBigram
	classGram
)

var classWeight = [4]float64{
	classWord:     weightWord,
	classStopword: weightStopword,
	classBigram:   weightBigram,
	classGram:     weightGram,
}

// classSeed separates the hash spaces of the classes, so the word "ab" and
// the 3-gram "<ab" never share a key by construction.
var classSeed = [4]uint64{
	0x243f6a8885a308d3,
	0x13198a2e03707344,
	0xa4093822299f31d0,
	0x082efa98ec4e6c89,
}

// Lexical is a deterministic embedder that needs no model: signed feature
// hashing of normalised words, neighbouring word pairs and character
// 3-grams, L2-normalised. It is the offline default. Its vectors capture
// shared vocabulary and spelling, not meaning: beyond a small table of
// synonyms ("buy" and "purchase"), "car" and "vehicle" are unrelated to it.
//
// Text is normalised with NFKC and lower-cased, then split into words on
// every rune that is not a letter, digit or combining mark; invisible
// format characters (Unicode category Cf) are dropped. An ASCII word that
// is not a stopword counts as the text index holds it (lexnorm.AppendTerm:
// stemmed, "thirty" as "30", a synonym as its group's word), so
// "refunds" and "refunded" are one word; its 3-grams are those of the word
// as written. Han, Hiragana
// and Katakana runes are words of their own, so the word pairs of CJK text
// are its character bigrams. Features are hashed with FNV-1a 64 over code
// points, mixed, and folded into Dims buckets; one hash bit gives the sign,
// so collisions cancel out on average instead of piling up. The hash has
// fixed constants: a vector is the same in every process, on every
// machine, forever — the ID names the version and changing any of this
// needs a new one.
//
// A text without any word (empty, only punctuation) embeds as the zero
// vector of length Dims, whose cosine with anything is 0.
//
// A Lexical is safe for concurrent use.
type Lexical struct {
	dims    int
	id      string
	scratch sync.Pool // *lexScratch
	// warm is one scratch kept outside the pool, which drops its
	// contents at every other garbage collection: a lone caller (a sync
	// pass) keeps its memory of normalised words.
	warm atomic.Pointer[lexScratch]
}

// NewLexical returns a lexical embedder making vectors of length dims, or
// DefaultLexicalDims when dims <= 0.
func NewLexical(dims int) *Lexical {
	if dims <= 0 {
		dims = DefaultLexicalDims
	}
	return &Lexical{dims: dims, id: "lexical-v2/" + strconv.Itoa(dims)}
}

// ID returns "lexical-v2/<dims>". lexical-v1 counted words as written;
// vectors it made are re-embedded by `ingestd reindex`.
func (l *Lexical) ID() string { return l.id }

// Dims returns the length of every vector.
func (l *Lexical) Dims() int { return l.dims }

// Embed returns one vector per text, in order. It fails only when ctx is
// done.
func (l *Lexical) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	backing := make([]float32, len(texts)*l.dims)
	s := l.warm.Swap(nil)
	if s == nil {
		s, _ = l.scratch.Get().(*lexScratch)
	}
	if s == nil {
		s = new(lexScratch)
	}
	defer l.putScratch(s)
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v := backing[i*l.dims : (i+1)*l.dims : (i+1)*l.dims]
		l.embed(s, text, v)
		out[i] = v
	}
	return out, nil
}

func (l *Lexical) putScratch(s *lexScratch) {
	// Do not keep the buffers of one huge text alive for everyone.
	if len(s.feats.slots) > 1<<20 || cap(s.word) > 1<<16 {
		return
	}
	if l.warm.CompareAndSwap(nil, s) {
		return
	}
	l.scratch.Put(s)
}

// lexScratch holds the buffers of one embedding so that a text costs no
// allocation per word.
type lexScratch struct {
	feats   featureCounts
	word    []rune               // the word being read, lower-cased
	ascii   []byte               // an ASCII word as bytes, then its normalised form
	terms   map[uint64]termEntry // hash of an ASCII word as written -> the word and the hash of its normalised form
	prev    uint64               // hash of the previous word
	hasPrev bool
}

// embed adds the features of text into v (all zero on entry) and
// normalises it.
func (l *Lexical) embed(s *lexScratch, text string, v []float32) {
	// String returns text itself, without copying, when it is already in
	// NFKC (always for ASCII).
	text = norm.NFKC.String(text)
	s.feats.reset()
	s.word = s.word[:0]
	s.hasPrev = false

	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
				s.word = append(s.word, rune(c))
			case 'A' <= c && c <= 'Z':
				s.word = append(s.word, rune(c+'a'-'A'))
			default:
				s.endWord()
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if r >= firstCJK && isCJK(r) {
				s.endWord()
				s.word = append(s.word, r)
				s.endWord()
				continue
			}
			s.word = append(s.word, unicode.ToLower(r))
		case unicode.Is(unicode.Cf, r):
			// Invisible format characters (zero-width space and joiners,
			// soft hyphen, bidi controls, tag characters) neither count
			// nor split a word: "pass\u200bword" is "password".
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r):
			// A combining mark belongs to the word it follows (Devanagari
			// vowel signs, accents NFKC could not compose); alone it is
			// nothing.
			if len(s.word) > 0 {
				s.word = append(s.word, r)
			}
		default:
			s.endWord()
		}
	}
	s.endWord()

	// Features are added in the order they first appeared, so the float
	// sums, and the vector, are the same on every run.
	dims := uint64(len(v))
	for _, i := range s.feats.order {
		f := s.feats.slots[i]
		w := classWeight[f.key>>62] * sublinearTF(int(f.n))
		if f.key&1 != 0 {
			w = -w
		}
		// Fold the 62 hash bits into [0, dims) without a division.
		bucket, _ := bits.Mul64(f.key<<2, dims)
		v[bucket] += float32(w)
	}
	normalize(v)
}

// firstCJK is below every Han, Hiragana and Katakana rune.
const firstCJK = 0x2E80

// isCJK reports whether r is a rune of a script written without spaces
// between words, which the embedder treats as a word of its own.
func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r)
}

// endWord emits the features of the word being read, if any.
func (s *lexScratch) endWord() {
	w := s.word
	if len(w) == 0 {
		return
	}
	h := hashRunes(fnvOffset, w)
	class := uint64(classWord)
	if len(w) <= maxStopwordRunes && stopwords.has(h) {
		class = classStopword
	} else if isASCII(w) {
		h = s.termHash(w, h)
	}
	s.feats.add(featureKey(h, class))
	if s.hasPrev {
		s.feats.add(featureKey(mix64(s.prev+0x9e3779b97f4a7c15)^h, classBigram))
	}
	s.prev, s.hasPrev = h, true

	if class == classWord && len(w) >= 2 && len(w) <= maxGramRunes {
		// The 3-grams of "<word>": n grams for a word of n runes.
		g := hashRune(hashRune(hashRune(fnvOffset, '<'), w[0]), w[1])
		s.feats.add(featureKey(g, classGram))
		for k := 2; k < len(w); k++ {
			s.feats.add(featureKey(hashRune(hashRune(hashRune(fnvOffset, w[k-2]), w[k-1]), w[k]), classGram))
		}
		g = hashRune(hashRune(hashRune(fnvOffset, w[len(w)-2]), w[len(w)-1]), '>')
		s.feats.add(featureKey(g, classGram))
	}
	s.word = w[:0]
}

// termHash hashes the ASCII word w, whose hash as written is h, as the
// text index holds it (lexnorm.AppendTerm: stemmed, a number word as
// digits, a synonym as its group's word), so that both rankers see the
// same words. Its 3-grams stay those of w as written, which keep typos
// and unknown inflections near.
//
// Words repeat, so each scratch remembers the normalised hashes of up to
// maxTermCache words, by h and checked against the word itself.
func (s *lexScratch) termHash(w []rune, h uint64) uint64 {
	if e, ok := s.terms[h]; ok && sameWord(e.word, w) {
		return e.norm
	}
	b := s.ascii[:0]
	for _, r := range w {
		b = append(b, byte(r))
	}
	n := len(b)
	b = lexnorm.AppendTerm(b, string(b))
	norm := uint64(fnvOffset)
	for _, c := range b[n:] {
		norm = hashRune(norm, rune(c))
	}
	if s.terms == nil || len(s.terms) >= maxTermCache {
		s.terms = make(map[uint64]termEntry, 1024)
	}
	s.terms[h] = termEntry{word: string(b[:n]), norm: norm}
	s.ascii = b
	return norm
}

// termEntry is a word termHash normalised and its normalised hash.
type termEntry struct {
	word string
	norm uint64
}

// sameWord reports whether the ASCII word w is s.
func sameWord(s string, w []rune) bool {
	if len(s) != len(w) {
		return false
	}
	for i, r := range w {
		if rune(s[i]) != r {
			return false
		}
	}
	return true
}

// maxTermCache bounds a scratch's memory of normalised words.
const maxTermCache = 16384

func isASCII(w []rune) bool {
	for _, r := range w {
		if r >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hashRune is one step of FNV-1a 64 over a code point.
func hashRune(h uint64, r rune) uint64 {
	return (h ^ uint64(r)) * fnvPrime
}

func hashRunes(h uint64, rs []rune) uint64 {
	for _, r := range rs {
		h = hashRune(h, r)
	}
	return h
}

// featureKey mixes a feature hash with its class seed (FNV's low bits are
// weak) and stores the class in the top two bits. Bit 0 is the sign; the
// other 61 bits choose the bucket.
func featureKey(h, class uint64) uint64 {
	return mix64(h^classSeed[class])&^(3<<62) | class<<62
}

// mix64 is the MurmurHash3 64-bit finaliser.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

var tfTable = func() (t [64]float64) {
	for n := 1; n < len(t); n++ {
		t[n] = 1 + math.Log(float64(n))
	}
	return t
}()

// sublinearTF is 1+ln(n) for a feature seen n >= 1 times.
func sublinearTF(n int) float64 {
	if n < len(tfTable) {
		return tfTable[n]
	}
	return 1 + math.Log(float64(n))
}

// stopwords holds the hashes of frequent English function words, which
// weigh weightStopword instead of weightWord and get no 3-grams. They still
// form word pairs ("out of", "set up"). The list is part of lexical-v1 and v2.
var stopwords = func() *hashSet {
	words := []string{
		"a", "about", "after", "all", "also", "am", "an", "and", "any", "are",
		"as", "at", "be", "been", "but", "by", "can", "could", "did", "do",
		"does", "for", "from", "had", "has", "have", "he", "her", "him", "his",
		"how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "my",
		"no", "not", "of", "on", "or", "our", "out", "she", "so", "some",
		"than", "that", "the", "their", "them", "then", "there", "these",
		"they", "this", "those", "to", "too", "up", "us", "was", "we", "were",
		"what", "when", "where", "which", "who", "will", "with", "would",
		"you", "your",
	}
	s := new(hashSet)
	for _, w := range words {
		if n := len([]rune(w)); n > maxStopwordRunes {
			panic("stopword " + w + " is longer than maxStopwordRunes")
		}
		s.add(hashRunes(fnvOffset, []rune(w)))
	}
	return s
}()

// maxStopwordRunes is the length of the longest stopword; longer words
// skip the lookup.
const maxStopwordRunes = 5

// hashSet is a fixed open-addressing set of up to 128 nonzero FNV hashes,
// faster than a map for the lookup made on every short word.
type hashSet [256]uint64

func (s *hashSet) slot(h uint64) uint64 { return mix64(h) & uint64(len(s)-1) }

func (s *hashSet) add(h uint64) {
	i := s.slot(h)
	for s[i] != 0 && s[i] != h {
		i = (i + 1) & uint64(len(s)-1)
	}
	s[i] = h
}

func (s *hashSet) has(h uint64) bool {
	for i := s.slot(h); s[i] != 0; i = (i + 1) & uint64(len(s)-1) {
		if s[i] == h {
			return true
		}
	}
	return false
}

// featureCounts counts feature keys in an open-addressing hash table that
// is reused from text to text: reset clears only the slots the last text
// used, so a big table left by a long text costs nothing to a short one.
type featureCounts struct {
	slots []featureSlot // len is a power of two; key 0 marks a free slot
	order []uint32      // used slots in order of first appearance
}

type featureSlot struct {
	key uint64
	n   uint32
}

func (c *featureCounts) reset() {
	for _, i := range c.order {
		c.slots[i] = featureSlot{}
	}
	c.order = c.order[:0]
	if c.slots == nil {
		c.slots = make([]featureSlot, 1024)
	}
}

// add counts one occurrence of key, which is already well mixed.
func (c *featureCounts) add(key uint64) {
	if key == 0 {
		key = 2 // 0 marks a free slot; 2 keeps the class and the sign
	}
	mask := uint64(len(c.slots) - 1)
	for i := key & mask; ; i = (i + 1) & mask {
		switch c.slots[i].key {
		case key:
			c.slots[i].n++
			return
		case 0:
			c.slots[i] = featureSlot{key: key, n: 1}
			c.order = append(c.order, uint32(i))
			if 2*len(c.order) > len(c.slots) {
				c.grow()
			}
			return
		}
	}
}

// grow doubles the table, keeping the order of first appearance.
func (c *featureCounts) grow() {
	old := c.slots
	c.slots = make([]featureSlot, 2*len(old))
	mask := uint64(len(c.slots) - 1)
	for k, j := range c.order {
		f := old[j]
		i := f.key & mask
		for c.slots[i].key != 0 {
			i = (i + 1) & mask
		}
		c.slots[i] = f
		c.order[k] = uint32(i)
	}
}
