//go:build cgo

package vecindex

// #cgo CFLAGS: -O3
// #include "scan.h"
import "C"

import "unsafe"

// scanBlock scores the first n rows of block blk against qq with the C
// kernel and leaves the allowed rows scoring above threshold in s.rows and
// s.scores; it returns how many.
func scanBlock(blk []int8, n int, qq query, scales []float32, groups []int32, allow []uint8, threshold float32, s *scratch) int {
	if len(qq.cols) == 0 || n == 0 {
		return 0
	}
	var allowPtr *C.uint8_t
	if allow != nil {
		if len(allow) == 0 {
			return 0
		}
		allowPtr = (*C.uint8_t)(unsafe.Pointer(&allow[0]))
	}
	return int(C.ingestd_vecscan(
		(*C.int8_t)(unsafe.Pointer(&blk[0])), C.int(BlockRows), C.int(n),
		(*C.int32_t)(unsafe.Pointer(&qq.cols[0])), (*C.int16_t)(unsafe.Pointer(&qq.q[0])), C.int(len(qq.cols)),
		(*C.float)(unsafe.Pointer(&scales[0])), (*C.int32_t)(unsafe.Pointer(&groups[0])),
		allowPtr, C.int(len(allow)), C.float(qq.mul), C.float(threshold),
		(*C.int32_t)(unsafe.Pointer(&s.acc[0])), (*C.int32_t)(unsafe.Pointer(&s.rows[0])), (*C.float)(unsafe.Pointer(&s.scores[0]))))
}

// Kernel names the scan kernel in use: "avx2" or "generic".
func Kernel() string { return C.GoString(C.ingestd_vecscan_kind()) }

// forceGeneric makes the scan use the portable kernel (for tests).
func forceGeneric(on bool) {
	v := 0
	if on {
		v = 1
	}
	C.ingestd_vecscan_force_generic(C.int(v))
}
