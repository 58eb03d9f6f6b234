//go:build !cgo

package vecindex

// scanBlock is the C kernel's contract in Go, for builds without cgo.
func scanBlock(blk []int8, n int, qq query, scales []float32, groups []int32, allow []uint8, threshold float32, s *scratch) int {
	acc := s.acc[:n]
	clear(acc)
	for t, c := range qq.cols {
		w := int32(qq.q[t])
		col := blk[int(c)*BlockRows : int(c)*BlockRows+n]
		for i, v := range col {
			acc[i] += w * int32(v)
		}
	}
	out := 0
	for i, a := range acc {
		sc := float32(a) * scales[i] * qq.mul
		if !(sc > threshold) {
			continue
		}
		if allow != nil {
			g := groups[i]
			if g < 0 || int(g) >= len(allow) || allow[g] == 0 {
				continue
			}
		}
		s.rows[out], s.scores[out] = int32(i), sc
		out++
	}
	return out
}

// Kernel names the scan kernel in use.
func Kernel() string { return "go" }

func forceGeneric(bool) {}
