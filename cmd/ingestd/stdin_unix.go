//go:build unix

package main

import (
	"os"
	"syscall"
)

// stdin keeps the pollable stdin alive: a collected *os.File would close
// descriptor 0 under os.Stdin.
var stdin *os.File

// pollableStdin is stdin on the runtime's poller when it is a pipe or a
// socket, as a host that starts `ingestd mcp` gives it: waiting for the
// host's next line then holds no thread in a read, so at most one thread
// (an upstream's reader) sits in a system call between calls, not two,
// which keeps the runtime's monitor from waking at every call
// (docs/BENCHMARKS.md). A terminal or a file is os.Stdin as it is.
// restore puts the descriptor back in blocking mode.
func pollableStdin() (in *os.File, restore func()) {
	var st syscall.Stat_t
	if err := syscall.Fstat(0, &st); err != nil {
		return os.Stdin, func() {}
	}
	if kind := st.Mode & syscall.S_IFMT; kind != syscall.S_IFIFO && kind != syscall.S_IFSOCK {
		return os.Stdin, func() {}
	}
	if err := syscall.SetNonblock(0, true); err != nil {
		return os.Stdin, func() {}
	}
	if stdin == nil {
		stdin = os.NewFile(0, "/dev/stdin")
	}
	return stdin, func() { _ = syscall.SetNonblock(0, false) }
}
