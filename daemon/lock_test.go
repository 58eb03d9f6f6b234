package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
)

func TestDataDirLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	me := Holder{PID: os.Getpid(), Command: "ingestd serve --config a.yaml", Since: time.Now().UTC()}
	l, err := LockDataDir(dir, me)
	if err != nil {
		t.Fatal(err)
	}
	// flock is per open file: a second open in this process is refused
	// as another process would be.
	_, err = LockDataDir(dir, Holder{PID: 1, Command: "other"})
	if got, want := ingestd.ErrorCode(err), ingestd.ECONFLICT; got != want {
		t.Fatalf("second lock: %v, want %s", err, want)
	}
	for _, want := range []string{fmt.Sprintf("process %d", me.PID), me.Command, "own data_dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if err := l.SetListen("127.0.0.1:4321"); err != nil {
		t.Fatal(err)
	}
	h, held, err := LockedBy(dir)
	if err != nil || !held || h.PID != me.PID || h.Listen != "127.0.0.1:4321" {
		t.Fatalf("LockedBy = %+v, %v, %v", h, held, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, held, err := LockedBy(dir); held || err != nil {
		t.Fatalf("after Close: held %v, %v", held, err)
	}

	// A file left by a process that is gone is taken over.
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte(`{"pid":999999,"command":"ingestd serve (killed)"}`), 0o640); err != nil {
		t.Fatal(err)
	}
	l, err = LockDataDir(dir, me)
	if err != nil {
		t.Fatalf("stale lock file not taken over: %v", err)
	}
	defer l.Close()
	if h, _, _ := readLockFile(t, dir); h.PID != me.PID || strings.Contains(h.Command, "killed") {
		t.Errorf("lock file after take-over: %+v", h)
	}
}

func readLockFile(t *testing.T, dir string) (Holder, bool, error) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, LockFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, err := readHolder(f)
	return h, err == nil, err
}
