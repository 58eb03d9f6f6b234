package embedder

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/ingestd/ingestd"
)

var _ Cache = ingestd.Store(nil)

// Cache stores vectors by embedder id and TextHash. ingestd.Store
// satisfies it.
type Cache interface {
	// CachedEmbeddings returns the vectors the embedder already made for
	// the given text hashes; missing hashes are absent from the map.
	CachedEmbeddings(ctx context.Context, embedderID string, textHashes []string) (map[string][]float32, error)
	// PutEmbeddings adds vectors to the cache.
	PutEmbeddings(ctx context.Context, embedderID string, vecs map[string][]float32) error
}

// Cached is an embedder that asks its cache before the embedder it wraps,
// so that re-syncing or reindexing unchanged text embeds nothing. It has
// the ID and Dims of the wrapped embedder: a cached vector is the vector
// that embedder made.
//
// A cached vector of the wrong length (a corrupt row) counts as a miss and
// is replaced. A Cached is safe for concurrent use if its embedder and
// cache are; two concurrent calls may both embed the same new text.
type Cached struct {
	inner  ingestd.Embedder
	cache  Cache
	hits   atomic.Int64
	misses atomic.Int64
}

// NewCached wraps e with the cache c. A nil c keeps nothing: every call
// goes to e and counts as misses. That is the wiring for an embedder that
// computes a vector faster than a cache round trip could return one (the
// lexical embedder: ~20 µs for 2 KB against a database read and write);
// it is the remote embedders — a model server, a paid API — whose vectors
// are worth keeping. The caller says which, not the embedder.
func NewCached(e ingestd.Embedder, c Cache) *Cached {
	return &Cached{inner: e, cache: c}
}

// ID returns the wrapped embedder's ID.
func (c *Cached) ID() string { return c.inner.ID() }

// Dims returns the wrapped embedder's Dims.
func (c *Cached) Dims() int { return c.inner.Dims() }

// Stats returns how many distinct texts were answered from the cache (hits)
// and how many were sent to the wrapped embedder (misses) since NewCached.
// Identical texts within one call count once; misses is the "embedded N"
// a sync reports.
func (c *Cached) Stats() (hits, misses int64) {
	return c.hits.Load(), c.misses.Load()
}

// Embed looks up the SHA-256 of every text, embeds only the distinct texts
// the cache lacks, stores their vectors and returns one vector per text in
// order. It returns the wrapped embedder's errors as they are and the
// cache's errors wrapped; when the cache cannot store the new vectors it
// returns the error, not the vectors (the store is failing, so the job
// will be retried anyway).
func (c *Cached) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return [][]float32{}, nil
	}
	if c.cache == nil {
		c.misses.Add(int64(len(texts)))
		return c.inner.Embed(ctx, texts)
	}
	id, dims := c.inner.ID(), c.inner.Dims()

	hashes := make([]string, len(texts))
	first := make(map[string]int, len(texts)) // hash -> first position
	distinct := make([]string, 0, len(texts))
	for i, t := range texts {
		h := TextHash(t)
		hashes[i] = h
		if _, ok := first[h]; !ok {
			first[h] = i
			distinct = append(distinct, h)
		}
	}

	cached, err := c.cache.CachedEmbeddings(ctx, id, distinct)
	if err != nil {
		return nil, fmt.Errorf("read embedding cache: %w", err)
	}
	vecs := make(map[string][]float32, len(distinct))
	var missHashes, missTexts []string
	for _, h := range distinct {
		if v, ok := cached[h]; ok && len(v) == dims {
			vecs[h] = v
			continue
		}
		missHashes = append(missHashes, h)
		missTexts = append(missTexts, texts[first[h]])
	}

	if len(missTexts) > 0 {
		made, err := c.inner.Embed(ctx, missTexts)
		if err != nil {
			return nil, err
		}
		if len(made) != len(missTexts) {
			return nil, fmt.Errorf("embedder %s returned %d vectors for %d texts", id, len(made), len(missTexts))
		}
		put := make(map[string][]float32, len(made))
		for k, h := range missHashes {
			put[h] = made[k]
			vecs[h] = made[k]
		}
		if err := c.cache.PutEmbeddings(ctx, id, put); err != nil {
			return nil, fmt.Errorf("write embedding cache: %w", err)
		}
	}
	c.hits.Add(int64(len(distinct) - len(missTexts)))
	c.misses.Add(int64(len(missTexts)))

	out := make([][]float32, len(texts))
	for i, h := range hashes {
		v := vecs[h]
		if first[h] != i {
			v = slices.Clone(v) // no two positions share memory
		}
		out[i] = v
	}
	return out, nil
}
