package ingestd

import "context"

// Embedder turns texts into vectors. Implementations live in package
// embedder: a deterministic lexical embedder (the offline default) and an
// OpenAI-compatible HTTP client.
type Embedder interface {
	// ID names the embedder, its model and its dimension ("lexical-v2/384").
	// The store records it beside every vector; vectors of different ids
	// are never compared.
	ID() string
	// Dims is the length of every vector Embed returns.
	Dims() int
	// Embed returns one L2-normalised vector per text, in order. Returns
	// EUNAVAILABLE when a remote endpoint cannot be reached after retries
	// and EINVALID when it refuses the input.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Dot is the inner product of two vectors of the same length; with
// L2-normalised vectors, as every Embedder makes, it is their cosine
// similarity. It panics when b is shorter than a. The one implementation
// that retrieval, the stores' default paths and package embedder share.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
