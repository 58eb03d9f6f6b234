package vecindex

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestKernels checks that the AVX2 kernel (where the CPU has it), the
// portable C kernel and a plain Go loop agree on every row of a block: odd
// and even column counts, partial blocks, allowed groups and thresholds.
func TestKernels(t *testing.T) {
	t.Logf("kernel in use: %s", Kernel())
	r := rand.New(rand.NewPCG(1, 2))
	const dims = 40
	blk := make([]int8, dims*BlockRows)
	for i := range blk {
		blk[i] = int8(r.IntN(255) - 127)
	}
	scales := make([]float32, BlockRows)
	groups := make([]int32, BlockRows)
	for i := range scales {
		scales[i] = 0.001 + r.Float32()/100
		groups[i] = int32(r.IntN(4))
	}
	for _, tc := range []struct {
		n, nq     int
		allow     []uint8
		threshold float32
	}{
		{BlockRows, 1, nil, -1e30}, {BlockRows, 7, nil, -1e30}, {1000, 8, nil, 0},
		{17, 3, []uint8{1, 0, 1}, -1e30}, {BlockRows - 5, dims, []uint8{0, 1, 1, 1}, 10}, {1, 2, nil, -1e30},
		{BlockRows, 12, nil, -1e30}, {999, 13, nil, -1e30}, {BlockRows, 17, []uint8{1, 1, 0, 1}, 0}, {64, 23, nil, -1e30},
	} {
		var qq query
		for _, c := range r.Perm(dims)[:tc.nq] {
			qq.cols = append(qq.cols, int32(c))
			qq.q = append(qq.q, int16(r.IntN(65535)-32767))
		}
		qq.mul = 1e-4
		want := reference(blk, tc.n, qq, scales, groups, tc.allow, tc.threshold)
		for _, generic := range []bool{false, true} {
			forceGeneric(generic)
			s := scratchPool.Get().(*scratch)
			m := scanBlock(blk, tc.n, qq, scales[:tc.n], groups[:tc.n], tc.allow, tc.threshold, s)
			got := append([]int32(nil), s.rows[:m]...)
			gotScores := append([]float32(nil), s.scores[:m]...)
			scratchPool.Put(s)
			if !slices.Equal(got, want.rows) || !slices.Equal(gotScores, want.scores) {
				t.Errorf("n=%d nq=%d generic=%v: %d rows, want %d (first %v / %v)", tc.n, tc.nq, generic, len(got), len(want.rows),
					got[:min(3, len(got))], want.rows[:min(3, len(want.rows))])
			}
		}
		forceGeneric(false)
	}
}

type scanned struct {
	rows   []int32
	scores []float32
}

func reference(blk []int8, n int, qq query, scales []float32, groups []int32, allow []uint8, threshold float32) scanned {
	var out scanned
	for i := 0; i < n; i++ {
		var acc int32
		for t, c := range qq.cols {
			acc += int32(qq.q[t]) * int32(blk[int(c)*BlockRows+i])
		}
		s := float32(acc) * scales[i] * qq.mul
		if !(s > threshold) {
			continue
		}
		if allow != nil && (int(groups[i]) >= len(allow) || allow[groups[i]] == 0) {
			continue
		}
		out.rows = append(out.rows, int32(i))
		out.scores = append(out.scores, s)
	}
	return out
}
