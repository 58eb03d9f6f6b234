// Package vecindex is an in-memory approximate nearest-neighbour index for
// cosine similarity over vectors of one dimension.
//
// Each row keeps its L2-normalised float32 vector (for the exact rerank),
// an int8 copy stored by column with a per-row scale, and a binary
// signature (the sign of every component). A search first estimates the
// similarity of every row cheaply, keeps the best candidates and reranks
// them by exact cosine:
//
//   - A sparse query (at most a third of its components non-zero, as short
//     queries of the lexical embedder are) is scored against the int8
//     columns of its non-zero components only: an integer dot product that
//     costs nnz(q) operations per row and is close to exact.
//   - A dense query is quantised to a few bit planes of magnitude and every
//     signature is scored by weighted Hamming distance (the sum of |q_j|
//     over the components whose sign disagrees: one popcount per plane and
//     64 components), which ranks rows like the dot product of q with the
//     rows' sign vectors.
//
// It knows nothing of documents or tiers: callers map rows to small integer
// groups and pass which groups a search may return. It never touches
// storage; package store/sqlite keeps it in step with the database. An
// Index is not safe for concurrent mutation; concurrent Search calls are
// safe when no mutation runs beside them.
package vecindex

import (
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
)

// Result is one ranked row.
type Result struct {
	Key   int64
	Group int32
	Score float32 // cosine similarity, higher is better
}

// Index holds rows of one dimension. The zero value is not usable: call New.
type Index struct {
	dims  int
	words int // uint64 words per signature

	keys   []int64
	groups []int32
	sigs   []uint64  // words per row: sign bits
	vecs   []float32 // dims per row, normalised
	cols   [][]int8  // dims columns of n rows: the int8 quantised vectors
	scales []float32 // per row: vec ≈ scale * int8 row
	pos    map[int64]int32
}

// New returns an empty index for vectors of dims components.
func New(dims int) *Index {
	return &Index{dims: dims, words: (dims + 63) / 64, pos: map[int64]int32{}, cols: make([][]int8, dims)}
}

// Dims is the dimension of every vector in the index.
func (x *Index) Dims() int { return x.dims }

// Len is the number of rows.
func (x *Index) Len() int { return len(x.keys) }

// Grow makes room for n more rows.
func (x *Index) Grow(n int) {
	x.keys = slices.Grow(x.keys, n)
	x.groups = slices.Grow(x.groups, n)
	x.sigs = slices.Grow(x.sigs, n*x.words)
	x.vecs = slices.Grow(x.vecs, n*x.dims)
	x.scales = slices.Grow(x.scales, n)
	for j := range x.cols {
		x.cols[j] = slices.Grow(x.cols[j], n)
	}
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
	for _, f := range v {
		norm += float64(f) * float64(f)
	}
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		x.Remove(key)
		return false
	}
	inv := float32(1 / math.Sqrt(norm))
	i, ok := x.pos[key]
	if !ok {
		i = int32(len(x.keys))
		x.pos[key] = i
		x.keys = append(x.keys, key)
		x.groups = append(x.groups, group)
		x.sigs = append(x.sigs, make([]uint64, x.words)...)
		x.vecs = append(x.vecs, make([]float32, x.dims)...)
		x.scales = append(x.scales, 0)
		for j := range x.cols {
			x.cols[j] = append(x.cols[j], 0)
		}
	}
	x.groups[i] = group
	dst := x.vecs[int(i)*x.dims : int(i+1)*x.dims]
	var vmax float32
	for j, f := range v {
		dst[j] = f * inv
		vmax = max(vmax, abs32(dst[j]))
	}
	signature(x.sigs[int(i)*x.words:int(i+1)*x.words], dst)
	scale := vmax / 127
	x.scales[i] = scale
	for j, f := range dst {
		x.cols[j][i] = int8(math.Round(float64(f / scale)))
	}
	return true
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
		copy(x.sigs[int(i)*x.words:int(i+1)*x.words], x.sigs[int(last)*x.words:])
		copy(x.vecs[int(i)*x.dims:int(i+1)*x.dims], x.vecs[int(last)*x.dims:])
		for _, c := range x.cols {
			c[i] = c[last]
		}
		x.pos[lk] = i
	}
	x.keys = x.keys[:last]
	x.groups = x.groups[:last]
	x.scales = x.scales[:last]
	x.sigs = x.sigs[:int(last)*x.words]
	x.vecs = x.vecs[:int(last)*x.dims]
	for j := range x.cols {
		x.cols[j] = x.cols[j][:last]
	}
	return true
}

// signature sets the sign bits of v into sig.
func signature(sig []uint64, v []float32) {
	clear(sig)
	for j, f := range v {
		if f > 0 {
			sig[j>>6] |= 1 << (uint(j) & 63)
		}
	}
}

// Options tune a search. The zero value uses the defaults.
type Options struct {
	// Candidates is how many rows the first pass hands to the exact rerank.
	// Default: max(4k, 100) for sparse queries, max(32k, n/32, 1024)
	// (at most n) for dense ones. More raises recall and cost.
	Candidates int
	// Parallel is the number of goroutines that scan; default GOMAXPROCS
	// above 20,000 rows, else 1.
	Parallel int
	// Planes is how many bits quantise a dense query's magnitudes; default
	// DefaultPlanes. 1 is a plain Hamming distance.
	Planes int
	// Dense forces the signature scan even for a sparse query.
	Dense bool
}

// parallelRows is the size above which a scan is split across goroutines.
const parallelRows = 20000

// Search returns the k rows most similar to q whose group is allowed
// (allowed[group] is true; nil allows every group), best first. Scores are
// exact cosine similarities; which rows are considered is approximate.
func (x *Index) Search(q []float32, allowed []bool, k int, o *Options) []Result {
	n := len(x.keys)
	if k <= 0 || len(q) != x.dims || n == 0 {
		return nil
	}
	qn, ok := normalised(q)
	if !ok {
		return nil
	}
	var opt Options
	if o != nil {
		opt = *o
	}
	nnz := 0
	for _, f := range qn {
		if f != 0 {
			nnz++
		}
	}
	sparse := !opt.Dense && 3*nnz <= x.dims
	c := opt.Candidates
	if c <= 0 {
		if sparse {
			c = max(4*k, 100)
		} else {
			c = max(32*k, n/32, 1024)
		}
	}
	c = max(c, k)
	if c >= n {
		return x.exact(qn, allowed, k)
	}
	p := opt.Parallel
	if p <= 0 {
		p = 1
		if n > parallelRows {
			p = runtime.GOMAXPROCS(0)
		}
	}
	var cand []int32
	if sparse {
		cand = x.sparseCandidates(qn, allowed, c, p)
	} else {
		cand = x.denseCandidates(qn, allowed, c, p, opt.Planes)
	}
	return x.rerank(qn, cand, k)
}

// parallel runs fn over p contiguous ranges of [0, n).
func parallel(n, p int, fn func(w, lo, hi int)) {
	if p <= 1 {
		fn(0, 0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + p - 1) / p
	for w := 0; w < p; w++ {
		lo, hi := w*step, min((w+1)*step, n)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w, lo, hi)
		}()
	}
	wg.Wait()
}

// block is how many rows a sparse scan accumulates at once (fits L1).
const block = 2048

// sparseCandidates scores every allowed row by the int8 dot product over
// q's non-zero components and returns the best c rows.
func (x *Index) sparseCandidates(q []float32, allowed []bool, c, p int) []int32 {
	var (
		dimsIdx []int
		qa      []int32
		qmax    float32
	)
	for _, f := range q {
		qmax = max(qmax, abs32(f))
	}
	for j, f := range q {
		if a := int32(math.Round(float64(f / qmax * 127))); a != 0 {
			dimsIdx = append(dimsIdx, j)
			qa = append(qa, a)
		}
	}
	n := len(x.keys)
	heaps := make([]scoreHeap, p)
	parallel(n, p, func(w, lo, hi int) {
		h := scoreHeap{cap: c}
		var acc [block]int32
		for b := lo; b < hi; b += block {
			e := min(b+block, hi)
			a := acc[:e-b]
			clear(a)
			t := 0
			for ; t+4 <= len(dimsIdx); t += 4 {
				q0, q1, q2, q3 := qa[t], qa[t+1], qa[t+2], qa[t+3]
				c0 := x.cols[dimsIdx[t]][b:e]
				c1 := x.cols[dimsIdx[t+1]][b:e]
				c2 := x.cols[dimsIdx[t+2]][b:e]
				c3 := x.cols[dimsIdx[t+3]][b:e]
				c1, c2, c3 = c1[:len(c0)], c2[:len(c0)], c3[:len(c0)]
				a := a[:len(c0)]
				for i, v := range c0 {
					a[i] += q0*int32(v) + q1*int32(c1[i]) + q2*int32(c2[i]) + q3*int32(c3[i])
				}
			}
			for ; t < len(dimsIdx); t++ {
				qv := qa[t]
				col := x.cols[dimsIdx[t]][b:e]
				a := a[:len(col)]
				for i, v := range col {
					a[i] += qv * int32(v)
				}
			}
			for i, v := range a {
				r := int32(b + i)
				if allowed != nil {
					g := x.groups[r]
					if int(g) >= len(allowed) || g < 0 || !allowed[g] {
						continue
					}
				}
				h.push(float32(v)*x.scales[r], r)
			}
		}
		heaps[w] = h
	})
	var cand []int32
	for _, h := range heaps {
		for _, e := range h.items {
			cand = append(cand, e.row)
		}
	}
	return cand
}

// scoreHeap keeps the cap best (score, row) pairs: a min-heap on score.
type scoreHeap struct {
	cap   int
	items []scored
}

type scored struct {
	score float32
	row   int32
}

func (h *scoreHeap) push(s float32, r int32) {
	if len(h.items) < h.cap {
		h.items = append(h.items, scored{s, r})
		// sift up
		i := len(h.items) - 1
		for i > 0 {
			p := (i - 1) / 2
			if h.items[p].score <= h.items[i].score {
				break
			}
			h.items[p], h.items[i] = h.items[i], h.items[p]
			i = p
		}
		return
	}
	if s <= h.items[0].score {
		return
	}
	h.items[0] = scored{s, r}
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h.items) {
			return
		}
		m := l
		if rr := l + 1; rr < len(h.items) && h.items[rr].score < h.items[l].score {
			m = rr
		}
		if h.items[i].score <= h.items[m].score {
			return
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
}

// planes is a query quantised for the signature scan: sign bits and, per
// bit of the magnitude levels, a mask of the components with that bit set.
type planes struct {
	sign    []uint64   // words
	mask    [][]uint64 // planes x words; mask[b] has weight 1<<b
	maxDist int
}

// DefaultPlanes is how many bits quantise a dense query's magnitudes.
const DefaultPlanes = 4

func (x *Index) queryPlanes(q []float32, nplanes int) planes {
	if nplanes <= 0 {
		nplanes = DefaultPlanes
	}
	nplanes = min(nplanes, 8)
	for nplanes > 1 && x.dims*(1<<nplanes-1) > 65000 {
		nplanes-- // distances must fit a uint16
	}
	p := planes{sign: make([]uint64, x.words), mask: make([][]uint64, nplanes)}
	for b := range p.mask {
		p.mask[b] = make([]uint64, x.words)
	}
	signature(p.sign, q)
	var qmax float32
	for _, f := range q {
		qmax = max(qmax, abs32(f))
	}
	top := float32(int(1)<<nplanes - 1)
	for j, f := range q {
		a := abs32(f)
		if a == 0 {
			continue
		}
		lvl := max(int(a/qmax*top+0.5), 1)
		p.maxDist += lvl
		for b := 0; b < nplanes; b++ {
			if lvl&(1<<b) != 0 {
				p.mask[b][j>>6] |= 1 << (uint(j) & 63)
			}
		}
	}
	return p
}

func abs32(f float32) float32 {
	if f < 0 {
		return -f
	}
	return f
}

// denseCandidates scores every allowed row by weighted Hamming distance to
// the quantised query and returns the c nearest.
func (x *Index) denseCandidates(q []float32, allowed []bool, c, p, nplanes int) []int32 {
	qp := x.queryPlanes(q, nplanes)
	n := len(x.keys)
	sentinel := qp.maxDist + 1 // not allowed
	dist := distPool.get(n)
	defer distPool.put(dist)
	hists := make([][]int, p)
	parallel(n, p, func(w, lo, hi int) {
		hists[w] = make([]int, sentinel+1)
		x.scan(qp, allowed, dist, hists[w], lo, hi)
	})
	hist := hists[0]
	for _, h := range hists[1:] {
		for d, v := range h {
			hist[d] += v
		}
	}
	// The threshold t: every row nearer than t is a candidate, and rows at
	// exactly t fill the rest.
	total, t := 0, 0
	for t = 0; t < sentinel; t++ {
		if total+hist[t] >= c {
			break
		}
		total += hist[t]
	}
	atT := c - total
	cand := make([]int32, 0, c)
	td := uint16(t)
	for i, d := range dist[:n] {
		if d < td {
			cand = append(cand, int32(i))
		} else if d == td && atT > 0 && t < sentinel {
			cand = append(cand, int32(i))
			atT--
		}
	}
	return cand
}

// scan writes the weighted Hamming distance of rows [lo, hi) into dist and
// counts them into hist; rows whose group is not allowed get the sentinel
// (maxDist+1).
func (x *Index) scan(qp planes, allowed []bool, dist []uint16, hist []int, lo, hi int) {
	sentinel := uint16(qp.maxDist + 1)
	w := x.words
	np := len(qp.mask)
	// Flatten the masks word-major so the inner loop reads one slice.
	masks := make([]uint64, w*np)
	for j := 0; j < w; j++ {
		for b := 0; b < np; b++ {
			masks[j*np+b] = qp.mask[b][j]
		}
	}
	for i := lo; i < hi; i++ {
		if allowed != nil {
			g := x.groups[i]
			if int(g) >= len(allowed) || g < 0 || !allowed[g] {
				dist[i] = sentinel
				hist[sentinel]++
				continue
			}
		}
		s := x.sigs[i*w : i*w+w : i*w+w]
		d := 0
		if np == 4 {
			for j, qs := range qp.sign {
				diff := s[j] ^ qs
				m := masks[j*4 : j*4+4 : j*4+4]
				d += bits.OnesCount64(diff&m[0]) + bits.OnesCount64(diff&m[1])<<1 +
					bits.OnesCount64(diff&m[2])<<2 + bits.OnesCount64(diff&m[3])<<3
			}
		} else {
			for j, qs := range qp.sign {
				diff := s[j] ^ qs
				for b, m := range masks[j*np : j*np+np] {
					d += bits.OnesCount64(diff&m) << b
				}
			}
		}
		dist[i] = uint16(d)
		hist[d]++
	}
}

// rerank scores the candidate rows exactly and returns the best k.
func (x *Index) rerank(q []float32, cand []int32, k int) []Result {
	res := make([]Result, 0, len(cand))
	for _, i := range cand {
		res = append(res, Result{Key: x.keys[i], Group: x.groups[i], Score: dot(q, x.vecs[int(i)*x.dims:int(i+1)*x.dims])})
	}
	return topK(res, k)
}

// exact scores every allowed row.
func (x *Index) exact(q []float32, allowed []bool, k int) []Result {
	res := make([]Result, 0, min(len(x.keys), 4096))
	for i, key := range x.keys {
		if allowed != nil {
			g := x.groups[i]
			if int(g) >= len(allowed) || g < 0 || !allowed[g] {
				continue
			}
		}
		res = append(res, Result{Key: key, Group: x.groups[i], Score: dot(q, x.vecs[i*x.dims:(i+1)*x.dims])})
		if len(res) == cap(res) && len(res) >= 4*k {
			res = topK(res, k) // keep memory bounded
		}
	}
	return topK(res, k)
}

// Exact is Search without the approximation: every allowed row is scored.
// It is the baseline recall is measured against.
func (x *Index) Exact(q []float32, allowed []bool, k int) []Result {
	if k <= 0 || len(q) != x.dims {
		return nil
	}
	qn, ok := normalised(q)
	if !ok {
		return nil
	}
	return x.exact(qn, allowed, k)
}

// better orders results: higher score first, then lower key.
func better(a, b Result) bool {
	return a.Score > b.Score || (a.Score == b.Score && a.Key < b.Key)
}

// topK returns the best k of res, best first. It reuses res.
func topK(res []Result, k int) []Result {
	if len(res) > 4*k {
		// A min-heap of the best k seen so far: res[:k].
		h := res[:k]
		for i := k/2 - 1; i >= 0; i-- {
			siftDown(h, i)
		}
		for _, r := range res[k:] {
			if better(r, h[0]) {
				h[0] = r
				siftDown(h, 0)
			}
		}
		res = h
	}
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

// siftDown restores the min-heap (worst result at the root) below i.
func siftDown(h []Result, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && better(h[l], h[r]) {
			m = r
		}
		if !better(h[i], h[m]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func normalised(q []float32) ([]float32, bool) {
	norm := 0.0
	for _, f := range q {
		norm += float64(f) * float64(f)
	}
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return nil, false
	}
	inv := float32(1 / math.Sqrt(norm))
	out := make([]float32, len(q))
	for i, f := range q {
		out[i] = f * inv
	}
	return out, true
}

// dot is the inner product of two vectors of the same length.
func dot(a, b []float32) float32 {
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
	return s0 + s1 + s2 + s3
}

type bufPool struct{ p sync.Pool }

var distPool bufPool

func (bp *bufPool) get(n int) []uint16 {
	if b, ok := bp.p.Get().(*[]uint16); ok && cap(*b) >= n {
		return (*b)[:n]
	}
	return make([]uint16, n)
}

func (bp *bufPool) put(b []uint16) { bp.p.Put(&b) }
