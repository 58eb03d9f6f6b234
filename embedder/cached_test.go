package embedder_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
)

// memCache is an in-memory embedder.Cache.
type memCache struct {
	mu      sync.Mutex
	vecs    map[string][]float32 // embedderID + "\x00" + hash
	getErr  error
	putErr  error
	lookups int
}

func newMemCache() *memCache { return &memCache{vecs: map[string][]float32{}} }

func (c *memCache) CachedEmbeddings(ctx context.Context, embedderID string, hashes []string) (map[string][]float32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lookups++
	if c.getErr != nil {
		return nil, c.getErr
	}
	out := map[string][]float32{}
	for _, h := range hashes {
		if v, ok := c.vecs[embedderID+"\x00"+h]; ok {
			out[h] = v
		}
	}
	return out, nil
}

func (c *memCache) PutEmbeddings(ctx context.Context, embedderID string, vecs map[string][]float32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.putErr != nil {
		return c.putErr
	}
	for h, v := range vecs {
		c.vecs[embedderID+"\x00"+h] = v
	}
	return nil
}

// countingEmbedder wraps an embedder and records the texts it is asked for.
type countingEmbedder struct {
	ingestd.Embedder
	err   error
	mu    sync.Mutex
	calls [][]string
}

func (e *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls = append(e.calls, slices.Clone(texts))
	e.mu.Unlock()
	if e.err != nil {
		return nil, e.err
	}
	return e.Embedder.Embed(ctx, texts)
}

func (e *countingEmbedder) embedded() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var all []string
	for _, c := range e.calls {
		all = append(all, c...)
	}
	return all
}

func TestCached(t *testing.T) {
	inner := &countingEmbedder{Embedder: embedder.NewLexical(16)}
	cache := newMemCache()
	c := embedder.NewCached(inner, cache)
	if got, want := c.ID(), "lexical-v2/16"; got != want {
		t.Errorf("ID() = %q, want %q", got, want)
	}
	if got, want := c.Dims(), 16; got != want {
		t.Errorf("Dims() = %d, want %d", got, want)
	}

	in := []string{"alpha", "beta", "alpha", "gamma"}
	want := MustEmbed(t, embedder.NewLexical(16), in...)
	check := func(step string, got [][]float32) {
		t.Helper()
		for i := range in {
			if !slices.Equal(got[i], want[i]) {
				t.Errorf("%s: vector %d (%q) differs from the inner embedder's", step, i, in[i])
			}
		}
	}

	check("first call", MustEmbed(t, c, in...))
	if got, want := inner.embedded(), []string{"alpha", "beta", "gamma"}; !slices.Equal(got, want) {
		t.Errorf("first call embedded %q, want %q (each distinct text once)", got, want)
	}
	if hits, misses := c.Stats(); hits != 0 || misses != 3 {
		t.Errorf("Stats() = %d, %d; want 0, 3", hits, misses)
	}

	check("second call", MustEmbed(t, c, in...))
	if got := len(inner.calls); got != 1 {
		t.Errorf("second call with the same texts reached the embedder (%d calls)", got)
	}
	if hits, misses := c.Stats(); hits != 3 || misses != 3 {
		t.Errorf("Stats() = %d, %d; want 3, 3", hits, misses)
	}

	got := MustEmbed(t, c, "gamma", "delta")
	if last := inner.calls[len(inner.calls)-1]; !slices.Equal(last, []string{"delta"}) {
		t.Errorf("mixed call embedded %q, want [delta]", last)
	}
	if !slices.Equal(got[0], want[3]) {
		t.Error("mixed call: cached vector differs")
	}
	if hits, misses := c.Stats(); hits != 4 || misses != 4 {
		t.Errorf("Stats() = %d, %d; want 4, 4", hits, misses)
	}
}

func TestCachedDuplicatesDoNotShareMemory(t *testing.T) {
	c := embedder.NewCached(embedder.NewLexical(8), newMemCache())
	for round := range 2 { // a miss, then a hit
		v := MustEmbed(t, c, "same", "same")
		v[0][0] += 100
		if v[1][0] == v[0][0] {
			t.Fatalf("round %d: two positions share one vector", round)
		}
	}
}

func TestCachedKeyedByEmbedderID(t *testing.T) {
	cache := newMemCache()
	MustEmbed(t, embedder.NewCached(embedder.NewLexical(8), cache), "hello")
	inner := &countingEmbedder{Embedder: embedder.NewLexical(16)}
	v := MustEmbed(t, embedder.NewCached(inner, cache), "hello")
	if len(inner.calls) != 1 || len(v[0]) != 16 {
		t.Errorf("a vector of another embedder was served (calls %d, len %d)", len(inner.calls), len(v[0]))
	}
}

func TestCachedWrongLengthIsAMiss(t *testing.T) {
	cache := newMemCache()
	inner := &countingEmbedder{Embedder: embedder.NewLexical(8)}
	cache.vecs["lexical-v2/8\x00"+embedder.TextHash("hello")] = []float32{1, 0}
	v := MustEmbed(t, embedder.NewCached(inner, cache), "hello")
	if len(inner.calls) != 1 || len(v[0]) != 8 {
		t.Fatalf("corrupt cache entry was served (calls %d, len %d)", len(inner.calls), len(v[0]))
	}
	if got := cache.vecs["lexical-v2/8\x00"+embedder.TextHash("hello")]; len(got) != 8 {
		t.Errorf("corrupt cache entry not replaced: %v", got)
	}
}

func TestCachedErrors(t *testing.T) {
	boom := errors.New("boom")
	refused := ingestd.Errorf(ingestd.EINVALID, "too long")
	tests := []struct {
		name     string
		getErr   error
		putErr   error
		embedErr error
		wantErr  error
	}{
		{name: "lookup fails", getErr: boom, wantErr: boom},
		{name: "store fails", putErr: boom, wantErr: boom},
		{name: "embedder refuses", embedErr: refused, wantErr: refused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cache := newMemCache()
			cache.getErr, cache.putErr = tt.getErr, tt.putErr
			c := embedder.NewCached(&countingEmbedder{Embedder: embedder.NewLexical(8), err: tt.embedErr}, cache)
			v, err := c.Embed(context.Background(), []string{"a"})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if v != nil {
				t.Errorf("vectors returned with an error")
			}
			if _, misses := c.Stats(); misses != 0 {
				t.Errorf("misses = %d after a failed call, want 0", misses)
			}
		})
	}
}

func TestCachedEmpty(t *testing.T) {
	cache := newMemCache()
	v := MustEmbed(t, embedder.NewCached(embedder.NewLexical(8), cache))
	if len(v) != 0 || cache.lookups != 0 {
		t.Errorf("no texts: %d vectors, %d lookups; want none", len(v), cache.lookups)
	}
}

func TestTextHash(t *testing.T) {
	// Stable across processes: the cache outlives them.
	if got, want := embedder.TextHash("hello"), "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"; got != want {
		t.Errorf("TextHash(hello) = %s, want %s", got, want)
	}
}

// TestCachedWithoutCache: with no cache (a local embedder's wiring),
// every call goes to the embedder and counts as embedded.
func TestCachedWithoutCache(t *testing.T) {
	ctx := context.Background()
	inner := &countingEmbedder{Embedder: embedder.NewLexical(64)}
	e := embedder.NewCached(inner, nil)
	texts := []string{"refunds go back to the card", "deploys need a green run"}
	for range 2 {
		got, err := e.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := embedder.NewLexical(64).Embed(ctx, texts)
		for i := range want {
			if embedder.Cosine(got[i], want[i]) < 0.9999 {
				t.Fatalf("vector %d differs from the lexical embedder's", i)
			}
		}
	}
	if got, want := len(inner.calls), 2; got != want {
		t.Fatalf("embedder called %d times, want %d", got, want)
	}
	if hits, misses := e.Stats(); hits != 0 || misses != 4 {
		t.Fatalf("Stats() = %d, %d; want 0, 4 (counted as embedded)", hits, misses)
	}
}
