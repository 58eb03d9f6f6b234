package storebench

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	_ "github.com/mattn/go-sqlite3" // the baseline scan reads the file with the plain driver

	"github.com/ingestd/ingestd/internal/private"
)

// Memory is what /proc says of a process's memory, in bytes.
type Memory struct {
	RSS     int64 `json:"rss"`      // resident now (VmRSS)
	Peak    int64 `json:"peak_rss"` // highest resident so far (VmHWM)
	Anon    int64 `json:"rss_anon"` // resident anonymous memory (heap, mappings)
	FileRSS int64 `json:"rss_file"` // resident file-backed pages (the binary, mapped files)
}

// ReadMemory reads the memory of process pid from /proc (Linux only).
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fs := strings.Fields(v)
		if len(fs) != 2 || fs[1] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			m.RSS = n << 10
		case "VmHWM":
			m.Peak = n << 10
		case "RssAnon":
			m.Anon = n << 10
		case "RssFile":
			m.FileRSS = n << 10
		}
	}
	return m, sc.Err()
}

// CPUTime is the user and system CPU time of process pid so far, from
// /proc/pid/stat (Linux only).
func CPUTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces: count
	// fields after the last ')'.
	s := string(b)
	fs := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fs) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, _ := strconv.ParseInt(fs[11], 10, 64)
	st, _ := strconv.ParseInt(fs[12], 10, 64)
	const hz = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / hz, nil
}

// ProcessCPU is the user and system CPU time of this process so far (0
// where getrusage is not available).
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ScanRows is the cold-start baseline: one SELECT of every chunk row with
// the columns the in-memory indexes are built from (seq, document id,
// vector, embedder, text, heading path) and its document's title, each
// value read into the process. It returns the rows read and the time.
func ScanRows(ctx context.Context, db string) (int, time.Duration, error) {
	h, err := sql.Open("sqlite3", "file:"+db+"?mode=ro&_query_only=1")
	if err != nil {
		return 0, 0, err
	}
	defer h.Close()
	start := time.Now()
	rows, err := h.QueryContext(ctx, `SELECT c.seq, c.document_id, c.embedding, c.embedder_id, c.text, d.title, c.heading_path
		FROM chunks c JOIN documents d ON d.id = c.document_id ORDER BY c.seq`)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	n := 0
	var (
		seq                            int64
		doc, embedder, text, title, hp sql.RawBytes
		emb                            sql.RawBytes
		sum                            int
	)
	for rows.Next() {
		if err := rows.Scan(&seq, &doc, &emb, &embedder, &text, &title, &hp); err != nil {
			return n, 0, err
		}
		sum += len(emb) + len(text) // touch what was read
		n++
	}
	_ = sum
	return n, time.Since(start), rows.Err()
}

// FreeAddr returns a loopback address with a free port.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Server is an `ingestd serve` child process on a corpus.
type Server struct {
	Base    string // http://addr
	cmd     *exec.Cmd
	started time.Time
	log     *os.File
}

// StartServe starts `exe serve` on the corpus with a configuration that
// listens on a free port; its log goes to serve.log in the corpus
// directory.
func StartServe(exe string, c Corpus) (*Server, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	cfg := filepath.Join(c.Dir, "bench-serve.yaml")
	data, err := os.ReadFile(c.Config)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "listen:") {
			l = "listen: " + addr
		}
		out = append(out, l)
	}
	if err := private.WriteFile(cfg, []byte(strings.Join(out, "\n"))); err != nil {
		return nil, err
	}
	log, err := private.OpenFile(filepath.Join(c.Dir, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "serve", "--config", cfg)
	cmd.Stdout, cmd.Stderr = log, log
	s := &Server{Base: "http://" + addr, cmd: cmd, log: log, started: time.Now()}
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	return s, nil
}

// Since is the time since the process started.
func (s *Server) Since() time.Duration { return time.Since(s.started) }

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// WaitFor polls path every 5 ms until it answers 200 and returns the time
// since the process started. It fails when the process exits or after
// timeout.
func (s *Server) WaitFor(ctx context.Context, path string, timeout time.Duration) (time.Duration, error) {
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Base+path, nil)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(s.started), nil
			}
		}
		if err := s.cmd.Process.Signal(syscall.Signal(0)); err != nil {
			return 0, errors.New("serve exited; see serve.log in the corpus directory")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, fmt.Errorf("%s did not answer 200 within %s", path, timeout)
}

// Stop ends the server (SIGTERM, then SIGKILL after 20 s) and waits.
func (s *Server) Stop() error {
	defer s.log.Close()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		return <-done
	}
}
