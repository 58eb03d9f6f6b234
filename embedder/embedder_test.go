package embedder_test

import (
	"context"
	"math"
	"testing"

	"github.com/ingestd/ingestd/embedder"
)

func TestCosine(t *testing.T) {
	s := float32(1 / math.Sqrt2)
	tests := []struct {
		name string
		a, b []float32
		want float32
	}{
		{name: "same", a: []float32{s, s}, b: []float32{s, s}, want: 1},
		{name: "orthogonal", a: []float32{1, 0}, b: []float32{0, 1}, want: 0},
		{name: "opposite", a: []float32{0, 1, 0}, b: []float32{0, -1, 0}, want: -1},
		{name: "odd length tail", a: []float32{0, 0, 0, 0, 0, 0.6, 0.8}, b: []float32{0, 0, 0, 0, 0, 0.8, 0.6}, want: 0.96},
		{name: "zero vector", a: []float32{0, 0}, b: []float32{s, s}, want: 0},
		{name: "different lengths", a: []float32{1, 0}, b: []float32{1, 0, 0}, want: 0},
		{name: "empty", a: nil, b: nil, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := embedder.Cosine(tt.a, tt.b); math.Abs(float64(got-tt.want)) > 1e-6 {
				t.Errorf("Cosine = %v, want %v", got, tt.want)
			}
		})
	}
}

func BenchmarkLexical(b *testing.B) {
	for _, name := range []string{"en", "intl"} {
		b.Run(name, func(b *testing.B) {
			texts := []string{MustReadFile(b, "bench/"+name+".txt")}
			e := embedder.NewLexical(0)
			ctx := context.Background()
			b.SetBytes(int64(len(texts[0])))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Embed(ctx, texts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkCosine384(b *testing.B) {
	v := MustEmbed(b, embedder.NewLexical(384), "the first vector", "the second vector")
	var sink float32
	for b.Loop() {
		sink += embedder.Cosine(v[0], v[1])
	}
	_ = sink
}
