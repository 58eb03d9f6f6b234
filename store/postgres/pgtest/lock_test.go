package pgtest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestExclusiveKeepsSharersOut checks the lock a restart test takes: while
// it is held, a user of the server (another open of the file, as another
// package's test process makes) cannot take the shared lock.
func TestExclusiveKeepsSharersOut(t *testing.T) {
	tryShare := func() error {
		f, err := os.OpenFile(filepath.Join(os.TempDir(), "ingestd-pgtest.lock"), os.O_CREATE|os.O_RDWR, 0o666)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	}
	Exclusive(t)
	if err := tryShare(); !errors.Is(err, syscall.EWOULDBLOCK) {
		t.Fatalf("shared lock while held exclusively: %v, want EWOULDBLOCK", err)
	}
}
