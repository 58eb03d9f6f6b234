package ingestd_test

import (
	"testing"

	"github.com/ingestd/ingestd"
)

func TestDot(t *testing.T) {
	tests := []struct {
		name string
		a, b []float32
		want float32
	}{
		{"empty", nil, nil, 0},
		{"one", []float32{3}, []float32{-2}, -6},
		{"unrolled and tail", []float32{1, 2, 3, 4, 5, 6, 7}, []float32{7, 6, 5, 4, 3, 2, 1}, 84},
		{"orthogonal", []float32{1, 0, 0, 0, 0, 0, 0, 0}, []float32{0, 1, 0, 0, 0, 0, 0, 0}, 0},
		{"longer b is cut", []float32{1, 1}, []float32{2, 3, 100}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ingestd.Dot(tt.a, tt.b); got != tt.want {
				t.Fatalf("Dot(%v, %v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}
