//go:build !unix

package vecindex

func allocBlock(n int) block { return block{data: make([]int8, n)} }

func (b block) free() {}
