//go:build unix

package vecindex

import (
	"syscall"
	"unsafe"
)

// allocBlock returns n zeroed bytes outside the Go heap (an anonymous
// private mapping), or on the heap when the mapping fails.
func allocBlock(n int) block {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return block{data: make([]int8, n)}
	}
	return block{data: unsafe.Slice((*int8)(unsafe.Pointer(&b[0])), n), mapped: b}
}

// free returns a mapped block's memory; a heap block is left to the
// collector.
func (b block) free() {
	if b.mapped != nil {
		_ = syscall.Munmap(b.mapped)
	}
}
