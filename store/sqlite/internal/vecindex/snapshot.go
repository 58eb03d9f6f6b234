package vecindex

import (
	"fmt"

	"github.com/ingestd/ingestd/store/sqlite/internal/binio"
)

// Write writes the index to w (package binio's format), for Read.
func (x *Index) Write(w *binio.Writer) {
	w.Int(x.dims)
	binio.Slice(w, x.keys)
	binio.Slice(w, x.groups)
	binio.Slice(w, x.scales)
	w.Int(len(x.blocks))
	for _, b := range x.blocks {
		binio.Slice(w, b.data)
	}
}

// Read reads an index Write wrote. It returns binio.ErrCorrupt (wrapped)
// for input that does not hold one.
func Read(r *binio.Reader) (*Index, error) {
	dims := r.Int()
	if r.Err() == nil && (dims <= 0 || dims > 1<<16) {
		return nil, fmt.Errorf("%w: %d dimensions", binio.ErrCorrupt, dims)
	}
	x := New(dims)
	x.keys = binio.ReadSlice[int64](r)
	x.groups = binio.ReadSlice[int32](r)
	x.scales = binio.ReadSlice[float32](r)
	nb := r.Int()
	if err := r.Err(); err != nil {
		return nil, err
	}
	n := len(x.keys)
	if len(x.groups) != n || len(x.scales) != n || nb != (n+BlockRows-1)/BlockRows {
		return nil, fmt.Errorf("%w: %d keys, %d groups, %d scales, %d blocks", binio.ErrCorrupt, n, len(x.groups), len(x.scales), nb)
	}
	for range nb {
		if m := r.Len(1); m != dims*BlockRows {
			x.Free()
			if err := r.Err(); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: a block of %d bytes, want %d", binio.ErrCorrupt, m, dims*BlockRows)
		}
		b := allocBlock(dims * BlockRows)
		x.blocks = append(x.blocks, b)
		binio.ReadInto(r, b.data)
	}
	if err := r.Err(); err != nil {
		x.Free()
		return nil, err
	}
	for _, sc := range x.scales {
		x.maxScale = max(x.maxScale, sc)
	}
	x.pos = make(map[int64]int32, n)
	for i, k := range x.keys {
		x.pos[k] = int32(i)
	}
	if len(x.pos) != n {
		x.Free()
		return nil, fmt.Errorf("%w: repeated keys", binio.ErrCorrupt)
	}
	return x, nil
}
