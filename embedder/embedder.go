// Package embedder turns text into vectors for ingestd's vector index: a
// deterministic lexical embedder that needs no model (the offline default),
// a client for OpenAI-compatible /v1/embeddings endpoints (OpenAI, Ollama,
// vLLM, text-embeddings-inference), and a cache in front of either so that
// unchanged text is never embedded twice.
//
// Every vector it returns is L2-normalised (or all zero for text with
// nothing to embed), so cosine similarity is a dot product.
//
// It never reads configuration from the environment, never fences or
// interprets the text it embeds, and never compares vectors made by
// embedders with different IDs.
package embedder

import (
	"crypto/sha256"
	"encoding/hex"
	"math"

	"github.com/ingestd/ingestd"
)

var (
	_ ingestd.Embedder = (*Lexical)(nil)
	_ ingestd.Embedder = (*OpenAI)(nil)
	_ ingestd.Embedder = (*Cached)(nil)
)

// Cosine returns the cosine similarity of two vectors that are already
// L2-normalised, as every vector from this package is: it is their dot
// product, in [-1, 1]. A zero vector scores 0 against anything. Vectors of
// different lengths (different embedders) score 0.
func Cosine(a, b []float32) float32 {
	if len(a) != len(b) {
		return 0
	}
	return ingestd.Dot(a, b)
}

// TextHash is the key under which Cached stores the vector of text: the hex
// SHA-256 of its UTF-8 bytes, exactly as given (no normalisation).
func TextHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// normalize scales v to unit L2 norm in place. A zero vector stays zero;
// so does one holding a NaN or an infinity, which no caller can rank.
func normalize(v []float32) {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	if ss == 0 || math.IsNaN(ss) || math.IsInf(ss, 0) {
		clear(v)
		return
	}
	inv := 1 / math.Sqrt(ss)
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
}
