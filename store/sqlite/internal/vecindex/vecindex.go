// Package vecindex is an in-memory index for cosine similarity over
// vectors of one dimension that keeps one compact form of each vector: its
// components quantised to int8 with a per-row scale (dims bytes and 4 a
// row, against 4·dims for float32).
//
// Search scores every allowed row by the integer dot product of its int8
// components with the query quantised to int16, over the query's non-zero
// components only (a short query of the lexical embedder has a few dozen
// of 384), and returns the best candidates with that estimate of their
// cosine. The estimate is within about 1e-3 of the exact cosine, so the
// exact top k is almost always inside the top 2k estimates: callers that
// need exact scores rescore a few more candidates than they keep from the
// vectors they store (package store/sqlite reads them from its file).
//
// Rows live in blocks of BlockRows rows, each block's components stored by
// column, so a scan reads only the columns the query uses, 16 rows at a
// time (a C kernel: AVX2 where the CPU has it, plain loops elsewhere).
// Blocks are allocated outside the Go heap where the platform allows
// (mmap), so that the garbage collector neither scans them nor lets the
// heap grow to twice their size; Free returns them.
//
// It knows nothing of documents or tiers: callers map rows to small integer
// groups and pass which groups a search may return. It never touches
// storage; package store/sqlite keeps it in step with the database. An
// Index is not safe for concurrent mutation; concurrent Search calls are
// safe when no mutation runs beside them.
package vecindex

import (
	"math"
	"runtime"
	"slices"
	"sync"
)

// BlockRows is how many rows share a block (a multiple of 16).
const BlockRows = 2048

// Result is one ranked row.
type Result struct {
	Key   int64
	Group int32
	Score float32 // estimated cosine similarity, higher is better
	// Err bounds the estimate's error: the exact cosine of the vector the
	// row was added with and the query is within Score ± Err. It is a
	// worst case (every rounding of the row's and the query's components
	// in the same direction), several times the typical error.
	Err float32
}

// Index holds rows of one dimension. The zero value is not usable: call New.
type Index struct {
	dims   int
	blocks []block
	keys   []int64
	groups []int32
	scales []float32 // per row: cosine ≈ scale * (int8 row · unit query)
	pos    map[int64]int32
	// maxScale is at least every row's scale (it is not lowered when a
	// row goes), for ErrBound.
	maxScale float32
}

// block holds BlockRows rows: dims*BlockRows bytes, column c of the block
// at data[c*BlockRows:]. mapped is the mapping behind data when it lives
// outside the Go heap.
type block struct {
	data   []int8
	mapped []byte
}

// New returns an empty index for vectors of dims components.
func New(dims int) *Index {
	return &Index{dims: dims, pos: map[int64]int32{}}
}

// Dims is the dimension of every vector in the index.
func (x *Index) Dims() int { return x.dims }

// Len is the number of rows.
func (x *Index) Len() int { return len(x.keys) }

// Bytes is the memory the index holds, in bytes: its blocks, its per-row
// arrays by capacity and its key map at about 40 bytes an entry.
func (x *Index) Bytes() int {
	return len(x.blocks)*x.dims*BlockRows + cap(x.keys)*8 + cap(x.groups)*4 + cap(x.scales)*4 + len(x.pos)*40
}

// Grow makes room for n more rows.
func (x *Index) Grow(n int) {
	x.keys = slices.Grow(x.keys, n)
	x.groups = slices.Grow(x.groups, n)
	x.scales = slices.Grow(x.scales, n)
}

// Free returns the blocks' memory. The Index is empty after, and usable.
func (x *Index) Free() {
	for _, b := range x.blocks {
		b.free()
	}
	x.blocks = nil
	x.keys, x.groups, x.scales = nil, nil, nil
	x.pos = map[int64]int32{}
	x.maxScale = 0
}

// component returns the address of component c of row i.
func (x *Index) component(i int, c int) *int8 {
	return &x.blocks[i/BlockRows].data[c*BlockRows+i%BlockRows]
}

// Add inserts or replaces the row with the key. A vector of another
// dimension, the zero vector or one with NaN or infinite components is
// refused (Add returns false) and any previous row with the key removed.
func (x *Index) Add(key int64, group int32, v []float32) bool {
	if len(v) != x.dims {
		x.Remove(key)
		return false
	}
	norm := 0.0
	var vmax float64
	for _, f := range v {
		norm += float64(f) * float64(f)
		vmax = max(vmax, math.Abs(float64(f)))
	}
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		x.Remove(key)
		return false
	}
	i := x.slot(key)
	x.groups[i] = group
	// Component j is stored as round(v_j / vmax * 127); the row's cosine
	// with a unit query u is then scale * sum(int8_j * u_j).
	x.scales[i] = float32(vmax / 127 / math.Sqrt(norm))
	x.maxScale = max(x.maxScale, x.scales[i])
	blk := x.blocks[int(i)/BlockRows].data
	off := int(i) % BlockRows
	for j, f := range v {
		blk[j*BlockRows+off] = int8(math.Round(float64(f) / vmax * 127))
	}
	return true
}

// KeysOf returns the keys of the rows whose group is marked in groups
// (groups[group] is true), in row order. It reads every row's group.
func (x *Index) KeysOf(groups []bool) []int64 {
	var out []int64
	for i, g := range x.groups {
		if g >= 0 && int(g) < len(groups) && groups[g] {
			out = append(out, x.keys[i])
		}
	}
	return out
}

// MoveTo moves the row with the key to dst, an index of the same
// dimension, as this index holds it (its quantised components, scale and
// group), reporting whether it was here. A row dst holds with the key is
// replaced.
func (x *Index) MoveTo(dst *Index, key int64) bool {
	i, ok := x.pos[key]
	if !ok || dst.dims != x.dims {
		return false
	}
	j := dst.slot(key)
	dst.groups[j] = x.groups[i]
	dst.scales[j] = x.scales[i]
	dst.maxScale = max(dst.maxScale, x.scales[i])
	for c := 0; c < x.dims; c++ {
		*dst.component(int(j), c) = *x.component(int(i), c)
	}
	x.Remove(key)
	return true
}

// slot returns the row of the key, appending an empty row for a new key.
func (x *Index) slot(key int64) int32 {
	i, ok := x.pos[key]
	if !ok {
		i = int32(len(x.keys))
		if int(i)/BlockRows >= len(x.blocks) {
			x.blocks = append(x.blocks, allocBlock(x.dims*BlockRows))
		}
		x.pos[key] = i
		x.keys = append(x.keys, key)
		x.groups = append(x.groups, 0)
		x.scales = append(x.scales, 0)
	}
	return i
}

// SetGroup moves the row with the key to another group; unknown keys are
// ignored.
func (x *Index) SetGroup(key int64, group int32) {
	if i, ok := x.pos[key]; ok {
		x.groups[i] = group
	}
}

// Remove deletes the row with the key, reporting whether it was there. The
// last row takes its place.
func (x *Index) Remove(key int64) bool {
	i, ok := x.pos[key]
	if !ok {
		return false
	}
	delete(x.pos, key)
	last := int32(len(x.keys) - 1)
	if i != last {
		lk := x.keys[last]
		x.keys[i] = lk
		x.groups[i] = x.groups[last]
		x.scales[i] = x.scales[last]
		for c := 0; c < x.dims; c++ {
			*x.component(int(i), c) = *x.component(int(last), c)
		}
		x.pos[lk] = i
	}
	x.keys = x.keys[:last]
	x.groups = x.groups[:last]
	x.scales = x.scales[:last]
	if need := (int(last) + BlockRows - 1) / BlockRows; need < len(x.blocks) {
		x.blocks[len(x.blocks)-1].free()
		x.blocks = x.blocks[:len(x.blocks)-1]
	}
	return true
}

// Vector returns the row's vector as the index holds it (normalised,
// within the int8 quantisation), or nil for an unknown key.
func (x *Index) Vector(key int64) []float32 {
	i, ok := x.pos[key]
	if !ok {
		return nil
	}
	out := make([]float32, x.dims)
	for c := range out {
		out[c] = float32(*x.component(int(i), c)) * x.scales[i]
	}
	return out
}

// Options tune a search. The zero value uses the defaults.
type Options struct {
	// Parallel is the number of goroutines that scan; default GOMAXPROCS
	// above parallelRows rows, else 1.
	Parallel int
}

// parallelRows is the size above which a scan is split across goroutines.
const parallelRows = 20000

// Search returns the k rows with the highest estimated cosine similarity
// to q whose group is allowed (allowed[group] is true; nil allows every
// group), best first, ties by lower key. Scores are the estimates: ask for
// more rows than you keep and rescore them when exact scores matter.
func (x *Index) Search(q []float32, allowed []bool, k int, o *Options) []Result {
	n := len(x.keys)
	if k <= 0 || len(q) != x.dims || n == 0 {
		return nil
	}
	qq, ok := quantise(q)
	if !ok {
		return nil
	}
	var opt Options
	if o != nil {
		opt = *o
	}
	p := opt.Parallel
	if p <= 0 {
		p = 1
		if n > parallelRows {
			p = runtime.GOMAXPROCS(0)
		}
	}
	var allow []uint8
	if allowed != nil {
		allow = make([]uint8, len(allowed))
		for g, ok := range allowed {
			if ok {
				allow[g] = 1
			}
		}
	}
	nb := len(x.blocks)
	p = max(1, min(p, nb))
	heaps := make([]scoreHeap, p)
	scan := func(w int) {
		s := scratchPool.Get().(*scratch)
		defer scratchPool.Put(s)
		h := scoreHeap{cap: k}
		for b := w; b < nb; b += p {
			rows := min(BlockRows, n-b*BlockRows)
			base := b * BlockRows
			threshold := float32(math.Inf(-1))
			if len(h.items) == h.cap {
				threshold = h.items[0].score
			}
			m := scanBlock(x.blocks[b].data, rows, qq, x.scales[base:base+rows], x.groups[base:base+rows], allow, threshold, s)
			for t := 0; t < m; t++ {
				h.push(s.scores[t], int32(base)+s.rows[t], x.keys)
			}
		}
		heaps[w] = h
	}
	if p == 1 {
		scan(0)
	} else {
		var wg sync.WaitGroup
		for w := range p {
			wg.Go(func() { scan(w) })
		}
		wg.Wait()
	}
	res := make([]Result, 0, k*p)
	for _, h := range heaps {
		for _, e := range h.items {
			res = append(res, Result{Key: x.keys[e.row], Group: x.groups[e.row], Score: e.score, Err: qq.errPerScale*x.scales[e.row] + 1e-6})
		}
	}
	return topK(res, k)
}

// query is a query quantised for the scan: its non-zero components and
// their weights as int16, and the factor that turns a row's integer sum
// times its scale into the cosine.
type query struct {
	cols []int32
	q    []int16
	mul  float32
	// errPerScale times a row's scale bounds the error of the row's
	// estimate (Result.Err).
	errPerScale float32
}

// ErrBound bounds the error of every row's estimate for the query q, the
// rows Search does not return included: each row's exact cosine with q is
// within its estimate ± ErrBound(q) (Result.Err is the row's own, smaller
// bound). A caller that needs the exact top k knows from it when a row
// Search left out could still be among them. 0 for a query Search
// refuses.
func (x *Index) ErrBound(q []float32) float32 {
	qq, ok := quantise(q)
	if !ok {
		return 0
	}
	return qq.errPerScale*x.maxScale + 1e-6
}

// quantise normalises q and scales it to int16 (the largest component to
// ±32767), keeping the non-zero components. It refuses the zero vector and
// one with NaN or infinite components.
func quantise(q []float32) (query, bool) {
	norm := 0.0
	var qmax float64
	for _, f := range q {
		norm += float64(f) * float64(f)
		qmax = max(qmax, math.Abs(float64(f)))
	}
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return query{}, false
	}
	var out query
	for j, f := range q {
		if a := int16(math.Round(float64(f) / qmax * 32767)); a != 0 {
			out.cols = append(out.cols, int32(j))
			out.q = append(out.q, a)
		}
	}
	// cos = sum(int8 * v/vmax*127 ...) handled by the row scale; the
	// query's own factor undoes its scaling and normalises it.
	mul := qmax / 32767 / math.Sqrt(norm)
	out.mul = float32(mul)
	// The row's normalised component j is a_j*scale + e_j and the unit
	// query's b_j*mul + f_j, with |e_j| <= scale/2 (a_j is rounded, at
	// most 127 in magnitude) and |f_j| <= mul/2 (b_j rounded; a dropped
	// component is a b_j of 0; f_j is 0 where q_j is). The exact cosine
	// less the estimate is sum_j a_j*scale*f_j + e_j*b_j*mul + e_j*f_j,
	// so within scale*mul*(127*nz/2 + sum|b_j|/2 + nz/4) for the nz
	// non-zero components of q; the estimate's own float32 arithmetic
	// adds a few 1e-7, covered by a margin of 1e-5 of the whole and
	// Search's 1e-6.
	sumB, nz := 0.0, 0.0
	for _, b := range out.q {
		sumB += math.Abs(float64(b))
	}
	for _, f := range q {
		if f != 0 {
			nz++
		}
	}
	out.errPerScale = float32(mul * (127*nz/2 + sumB/2 + nz/4) * (1 + 1e-5))
	return out, true
}

// scratch is one scanning goroutine's buffers.
type scratch struct {
	acc    []int32
	rows   []int32
	scores []float32
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{acc: make([]int32, BlockRows), rows: make([]int32, BlockRows), scores: make([]float32, BlockRows)}
}}

// scoreHeap keeps the cap best (score, row) pairs: a min-heap on score,
// ties broken towards the lower key (the worse of two equal scores is the
// one with the higher key).
type scoreHeap struct {
	cap   int
	items []scored
	keys  []int64
}

type scored struct {
	score float32
	row   int32
}

// worse reports whether a ranks below b.
func (h *scoreHeap) worse(a, b scored) bool {
	return a.score < b.score || (a.score == b.score && h.keys[a.row] > h.keys[b.row])
}

func (h *scoreHeap) push(s float32, r int32, keys []int64) {
	h.keys = keys
	e := scored{s, r}
	if len(h.items) < h.cap {
		h.items = append(h.items, e)
		i := len(h.items) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !h.worse(h.items[i], h.items[p]) {
				break
			}
			h.items[p], h.items[i] = h.items[i], h.items[p]
			i = p
		}
		return
	}
	if !h.worse(h.items[0], e) {
		return
	}
	h.items[0] = e
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h.items) {
			return
		}
		m := l
		if rr := l + 1; rr < len(h.items) && h.worse(h.items[rr], h.items[l]) {
			m = rr
		}
		if !h.worse(h.items[m], h.items[i]) {
			return
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
}

// better orders results: higher score first, then lower key.
func better(a, b Result) bool {
	return a.Score > b.Score || (a.Score == b.Score && a.Key < b.Key)
}

// topK returns the best k of res, best first. It reuses res.
func topK(res []Result, k int) []Result {
	slices.SortFunc(res, func(a, b Result) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	})
	if len(res) > k {
		res = res[:k]
	}
	return res
}
