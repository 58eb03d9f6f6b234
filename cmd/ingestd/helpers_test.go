package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// served is an `ingestd serve` process under test.
type served struct {
	cmd     *exec.Cmd
	base    string
	mu      sync.Mutex
	logs    strings.Builder
	stopped bool
}

// serve.listening is logged once every route works; serve.started as soon
// as the API answers, before the job queue is open.
var (
	listenRE  = regexp.MustCompile(`msg=serve.listening addr=(\S+)`)
	startedRE = regexp.MustCompile(`msg=serve.started addr=(\S+)`)
)

// startServe starts the binary and waits for its listening address; the
// process is stopped with SIGTERM at cleanup and must exit cleanly.
func startServe(t *testing.T, bin, cfg string, extra ...string) *served {
	t.Helper()
	return launchServe(t, listenRE, bin, cfg, extra...)
}

// launchServe starts the binary and waits for the address re finds in
// its log.
func launchServe(t *testing.T, re *regexp.Regexp, bin, cfg string, extra ...string) *served {
	t.Helper()
	s := &served{cmd: exec.Command(bin, append([]string{"serve", "--config", cfg}, extra...)...)}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.logs.WriteString(line + "\n")
			s.mu.Unlock()
			if m := re.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() { s.stop(t) })
	select {
	case a := <-addr:
		s.base = "http://" + a
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not listen within 60s\n%s", s.log())
	}
	return s
}

// stop sends SIGTERM and waits: the process must exit cleanly within 20s.
// Stopping a stopped process does nothing.
func (s *served) stop(t *testing.T) {
	t.Helper()
	if s.stopped {
		return
	}
	s.stopped = true
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve exited with %v\n%s", err, s.log())
		}
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		t.Errorf("serve did not stop within 20s of SIGTERM\n%s", s.log())
	}
}

func (s *served) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

func (s *served) getJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	resp, err := http.Get(s.base + path)
	if err != nil {
		return nil
	}
	return decodeBody(t, resp)
}

func (s *served) postJSON(t *testing.T, path, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(s.base+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return decodeBody(t, resp)
}

func decodeBody(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v: %s", resp.Request.URL, err, b)
	}
	return v
}

// waitFor polls cond for up to 60s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("condition not met within 60s")
}

// mustWrite writes text to p, making its directory.
func mustWrite(t *testing.T, p, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
