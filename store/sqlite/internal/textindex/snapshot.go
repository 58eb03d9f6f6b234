package textindex

import (
	"fmt"
	"unsafe"

	"github.com/ingestd/ingestd/store/sqlite/internal/binio"
)

// blockWords is a block's size in uint32s: it is written as those.
const blockWords = int(unsafe.Sizeof(block{}) / 4)

func blockSlice(bs []block) []uint32 {
	if len(bs) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&bs[0])), len(bs)*blockWords)
}

// Write writes the index to w (package binio's format), for Read. The
// cache of words as written is left out.
func (x *Index) Write(w *binio.Writer) {
	byID := make([]string, len(x.terms))
	for s, id := range x.dict {
		byID[id] = s
	}
	w.Int(len(x.terms))
	for id, t := range x.terms {
		w.String(byID[id])
		binio.Slice(w, t.rows)
		binio.Slice(w, t.tfs)
		binio.Slice(w, t.lens)
		binio.Slice(w, blockSlice(t.blocks))
		var stats []uint32
		stats = append(stats, t.df[:]...)
		stats = append(stats, t.n)
		stats = append(stats, t.maxTF[:]...)
		stats = append(stats, t.minLen[:]...)
		binio.Slice(w, stats)
	}
	binio.Slice(w, x.keys)
	binio.Slice(w, x.groups)
	binio.Slice(w, x.lens)
	offs := make([]int64, len(x.fwdOff))
	for i, o := range x.fwdOff {
		offs[i] = int64(o)
	}
	binio.Slice(w, offs)
	binio.Slice(w, x.fwd)
	binio.Slice(w, x.dead)
	w.Int(x.live)
	w.Int(x.nDead)
	binio.Slice(w, x.total[:])
	big := make([]uint32, 0, len(x.tfBig)*(2+NumFields))
	for k, v := range x.tfBig {
		big = append(big, k.term, k.row)
		big = append(big, v[:]...)
	}
	binio.Slice(w, big)
}

// termStats is how many uint32s a term's statistics take: df, n, maxTF,
// minLen.
const termStats = NumFields + 1 + 2*NumFields

// Read reads an index Write wrote. It returns binio.ErrCorrupt (wrapped)
// for input that does not hold one.
func Read(r *binio.Reader) (*Index, error) {
	x := New()
	nt := r.Len(8)
	x.terms = make([]*term, 0, nt)
	for id := range nt {
		s := r.String()
		t := &term{rows: binio.ReadSlice[uint32](r), tfs: binio.ReadSlice[uint8](r), lens: binio.ReadSlice[uint8](r)}
		bw := binio.ReadSlice[uint32](r)
		stats := binio.ReadSlice[uint32](r)
		if err := r.Err(); err != nil {
			return nil, err
		}
		if len(t.tfs) != len(t.rows) || len(t.lens) != len(t.rows) || len(bw) != (len(t.rows)+blockSize-1)/blockSize*blockWords || len(stats) != termStats {
			return nil, fmt.Errorf("%w: term %d: %d rows, %d tfs, %d lengths, %d block words, %d stats", binio.ErrCorrupt, id, len(t.rows), len(t.tfs), len(t.lens), len(bw), len(stats))
		}
		if len(bw) > 0 {
			t.blocks = unsafe.Slice((*block)(unsafe.Pointer(&bw[0])), len(bw)/blockWords)
		}
		copy(t.df[:], stats)
		t.n = stats[NumFields]
		copy(t.maxTF[:], stats[NumFields+1:])
		copy(t.minLen[:], stats[2*NumFields+1:])
		x.dict[s] = uint32(id)
		x.terms = append(x.terms, t)
	}
	x.keys = binio.ReadSlice[int64](r)
	x.groups = binio.ReadSlice[int32](r)
	x.lens = binio.ReadSlice[uint32](r)
	offs := binio.ReadSlice[int64](r)
	x.fwd = binio.ReadSlice[uint8](r)
	x.dead = binio.ReadSlice[uint64](r)
	x.live = r.Int()
	x.nDead = r.Int()
	total := binio.ReadSlice[uint64](r)
	big := binio.ReadSlice[uint32](r)
	if err := r.Err(); err != nil {
		return nil, err
	}
	n := len(x.keys)
	if len(x.dict) != nt || len(x.groups) != n || len(x.lens) != n*NumFields || len(offs) != n+1 ||
		len(x.dead) != (n+63)/64 || len(total) != NumFields || len(big)%(2+NumFields) != 0 ||
		x.live+x.nDead != n || x.live < 0 || x.nDead < 0 {
		return nil, fmt.Errorf("%w: inconsistent rows", binio.ErrCorrupt)
	}
	x.fwdOff = make([]int, len(offs))
	for i, o := range offs {
		if o < 0 || o > int64(len(x.fwd)) || (i > 0 && o < offs[i-1]) {
			return nil, fmt.Errorf("%w: forward list offsets", binio.ErrCorrupt)
		}
		x.fwdOff[i] = int(o)
	}
	copy(x.total[:], total)
	for i := 0; i < len(big); i += 2 + NumFields {
		var v [NumFields]uint32
		copy(v[:], big[i+2:])
		x.tfBig[tfKey{big[i], big[i+1]}] = v
	}
	for _, t := range x.terms {
		for _, row := range t.rows {
			if int(row) >= n {
				return nil, fmt.Errorf("%w: a posting of row %d in %d rows", binio.ErrCorrupt, row, n)
			}
		}
	}
	x.pos = make(map[int64]uint32, x.live)
	for r, k := range x.keys {
		if !x.isDead(uint32(r)) {
			x.pos[k] = uint32(r)
		}
	}
	if len(x.pos) != x.live {
		return nil, fmt.Errorf("%w: %d live keys, want %d", binio.ErrCorrupt, len(x.pos), x.live)
	}
	return x, nil
}
