package pgtest

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
)

// The tests of every package share one server, and `go test ./...` runs
// packages at once; a test that stops the server (store/postgres
// TestRestart) would pull it from under another package's test. So every
// test that uses the server holds a shared lock on one file for as long as
// it runs, and a test that restarts it holds the lock exclusively: each
// waits for the other, across processes.

// exclusive is set while a test of this process holds the lock
// exclusively; its own databases then need no shared lock (which would
// wait for itself).
var exclusive atomic.Bool

// Exclusive makes tb the only test using the server until it ends. Call it
// before creating any database in that test.
func Exclusive(tb testing.TB) {
	tb.Helper()
	hold(tb, syscall.LOCK_EX)
	exclusive.Store(true)
	tb.Cleanup(func() { exclusive.Store(false) })
}

// share holds the shared lock until tb ends, unless this process holds the
// lock exclusively.
func share(tb testing.TB) {
	tb.Helper()
	if !exclusive.Load() {
		hold(tb, syscall.LOCK_SH)
	}
}

func hold(tb testing.TB, how int) {
	tb.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "ingestd-pgtest.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		tb.Fatalf("pgtest: lock: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		tb.Fatalf("pgtest: lock: %v", err)
	}
	tb.Cleanup(func() { f.Close() }) // closing releases the lock
}
