package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ingestd/ingestd/daemon"
)

// TestSecondServeRefuses runs two real serve processes on one data_dir:
// the second refuses to start naming the first; one-shot commands run
// beside serve; the lock goes with the process, cleanly stopped or killed.
func TestSecondServeRefuses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	bin := filepath.Join(t.TempDir(), "ingestd")
	buildBinary(t, bin)
	cfg := mustQuickstart(t)
	mustListenAnywhereLocal(t, cfg)
	dataDir := filepath.Join(filepath.Dir(cfg), "data")

	first := startServe(t, bin, cfg)
	out, code := runBinary(t, bin, "serve", "--config", cfg)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("in use by process %d (", first.cmd.Process.Pid)) || !strings.Contains(out, "serve --config") {
		t.Fatalf("second serve: exit %d, want 1 and the first's pid %d and command:\n%s", code, first.cmd.Process.Pid, out)
	}
	// Store commands run beside serve: SQLite takes writers in turn and
	// serve's indexes catch up.
	for _, args := range [][]string{{"sync", "handbook"}, {"search", "refund"}, {"provenance"}} {
		if out, code := runBinary(t, bin, append(args, "--config", cfg)...); code != 0 {
			t.Errorf("%v beside serve: exit %d\n%s", args, code, out)
		}
	}
	first.stop(t)
	if h, ok, _ := readLockFile(t, dataDir); ok {
		t.Errorf("lock file after a clean stop names %+v", h)
	}

	killed := startServe(t, bin, cfg)
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = killed.cmd.Wait()
	killed.stopped = true
	if h, ok, _ := readLockFile(t, dataDir); !ok || h.PID != killed.cmd.Process.Pid {
		t.Fatalf("lock file of a killed serve = %+v, want its pid %d", h, killed.cmd.Process.Pid)
	}
	third := startServe(t, bin, cfg) // takes the stale file over
	if h, _, _ := readLockFile(t, dataDir); h.PID != third.cmd.Process.Pid {
		t.Errorf("lock file = %+v, want the new serve's pid %d", h, third.cmd.Process.Pid)
	}
}

// runBinary runs the binary to its end (at most 2 minutes) and returns
// its combined output and exit code.
func runBinary(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not end within 2 minutes:\n%s", args, out)
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("%v: %v", args, err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// mustListenAnywhereLocal points the quickstart's listen at a free
// loopback port.
func mustListenAnywhereLocal(t *testing.T, cfg string) {
	t.Helper()
	body := strings.Replace(string(mustRead(t, cfg)), "127.0.0.1:7700", "127.0.0.1:0", 1)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readLockFile reads the holder written in dir's lock file; ok is false
// when the file holds none.
func readLockFile(t *testing.T, dir string) (daemon.Holder, bool, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, daemon.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	var h daemon.Holder
	if len(strings.TrimSpace(string(b))) == 0 {
		return h, false, nil
	}
	err = json.Unmarshal(b, &h)
	return h, err == nil, err
}
