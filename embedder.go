package ingestd

import "context"

// Embedder turns texts into vectors. Implementations live in package
// embedder: a deterministic lexical embedder (the offline default) and an
// OpenAI-compatible HTTP client.
type Embedder interface {
	// ID names the embedder, its model and its dimension ("lexical-v1/384").
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
