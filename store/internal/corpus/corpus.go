// Package corpus generates deterministic synthetic text and vectors for the
// store's tests and benchmarks: Zipf-distributed words from a fixed
// vocabulary and lexical-like vectors (signed feature hashing of the words,
// L2-normalised), so vector neighbours share vocabulary as they do with the
// lexical embedder.
//
// It is for tests and benchmarks only and never reads anything outside
// itself.
package corpus

import (
	"math"
	"math/rand/v2"
	"strings"
)

// common are the head of the vocabulary, in Zipf order.
var common = strings.Fields(`the of and to in is that for it as was with be by on not he this are or his from at
	which but have an they you were her she there been one all we their has would when if so no will more can
	about out what up them into do time only other new some could these two may first then any like now my such
	make over our even most after also made many must before back through years where much way well down should
	because each just those people how too little state good very world still own see men work long get here
	between both life being under never day same another know while last might us great old year off come since
	against go came right used take three database password server request deploy release config error token
	user install update mail issue branch merge build test cluster node queue search index vector store query`)

// Corpus is a deterministic generator. It is not safe for concurrent use.
type Corpus struct {
	Vocab []string
	rng   *rand.Rand
	zipf  *rand.Zipf
}

// New returns a generator seeded with seed over a vocabulary of size words
// (at least the common ones).
func New(seed uint64, size int) *Corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	vocab := append([]string(nil), common...)
	syll := strings.Fields("ka lo mi ne ru sa ti vo ze pa qu ri to la me no si fe da gu ba ce hi jo")
	wr := rand.New(rand.NewPCG(1, 2)) // the vocabulary is the same for every seed
	seen := map[string]bool{}
	for _, w := range vocab {
		seen[w] = true
	}
	for len(vocab) < size {
		n := 2 + wr.IntN(3)
		var b strings.Builder
		for range n {
			b.WriteString(syll[wr.IntN(len(syll))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	return &Corpus{Vocab: vocab, rng: rng, zipf: rand.NewZipf(rng, 1.07, 2, uint64(len(vocab)-1))}
}

// Words returns n words drawn by Zipf's law.
func (c *Corpus) Words(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = c.Vocab[c.zipf.Uint64()]
	}
	return out
}

// Text returns about n words as sentences.
func (c *Corpus) Text(n int) string {
	words := c.Words(n)
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			if c.rng.IntN(12) == 0 {
				b.WriteString(". ")
			} else {
				b.WriteByte(' ')
			}
		}
		b.WriteString(w)
	}
	b.WriteByte('.')
	return b.String()
}

// Query returns k distinct words of text that are not among the commonest
// 60, as a search query would use them; fewer when text has fewer.
func (c *Corpus) Query(text string, k int) []string {
	ws := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '.' })
	skip := map[string]bool{}
	for _, w := range common[:60] {
		skip[w] = true
	}
	var out []string
	for tries := 0; len(out) < k && tries < 10*k; tries++ {
		w := ws[c.rng.IntN(len(ws))]
		if !skip[w] {
			skip[w] = true
			out = append(out, w)
		}
	}
	return out
}

// Intn is a deterministic random int in [0, n).
func (c *Corpus) Intn(n int) int { return c.rng.IntN(n) }

// stop are the words Vector weighs like the lexical embedder's stopwords.
var stop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range common[:60] {
		m[w] = true
	}
	return m
}()

// Feature weights, as the lexical embedder has them.
const (
	weightWord     = 1.0
	weightStopword = 0.2
	weightBigram   = 0.5
	weightGram     = 0.25
)

// Vector is a lexical-like embedding of text in dims dimensions, built the
// way the lexical embedder builds its own: signed feature hashing of words
// (stopwords weigh little), neighbouring word pairs and the character
// 3-grams of "<word>", each weighted by 1+ln(tf), L2-normalised. Docs come
// out dense and short queries sparse, as with the real embedder.
func Vector(text string, dims int) []float32 {
	tf := map[uint64]float64{}
	weight := map[uint64]float64{}
	add := func(key uint64, w float64) {
		tf[key]++
		weight[key] = w
	}
	var prev uint64
	hasPrev := false
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return r == ' ' || r == '.' }) {
		h := hash(0x243f6a8885a308d3, w)
		isStop := stop[w]
		if isStop {
			add(h, weightStopword)
		} else {
			add(h, weightWord)
		}
		if hasPrev {
			add(mix(prev*31+h+0x13198a2e03707344), weightBigram)
		}
		prev, hasPrev = h, true
		if !isStop && len(w) >= 2 {
			g := "<" + w + ">"
			for k := 0; k+3 <= len(g); k++ {
				add(hash(0xa4093822299f31d0, g[k:k+3]), weightGram)
			}
		}
	}
	v := make([]float32, dims)
	for key, n := range tf {
		w := weight[key] * (1 + math.Log(n))
		if key&1 == 1 {
			w = -w
		}
		v[int((key>>1)%uint64(dims))] += float32(w)
	}
	Normalize(v)
	return v
}

func hash(seed uint64, s string) uint64 {
	h := uint64(14695981039346656037) ^ seed
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix(h)
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Gaussian returns a random unit vector of dims components.
func (c *Corpus) Gaussian(dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(c.rng.NormFloat64())
	}
	Normalize(v)
	return v
}

// Normalize scales v to unit length in place (the zero vector stays).
func Normalize(v []float32) {
	var s float64
	for _, f := range v {
		s += float64(f) * float64(f)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}
