package webhook

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/ingestd/ingestd/internal/private"
)

// How an unverified body is held. Until its signature is checked a body
// is a stranger's bytes: it is hashed as it arrives and kept in a spool
// whose first spoolMemBytes live in memory and the rest in an unlinked
// temporary file, so memory per request stays bounded whatever the
// Content-Length; a gate bounds how many bodies and how many bytes are in
// that state at once.
const (
	spoolMemBytes = 64 << 10
	copyBufBytes  = 32 << 10
)

// errSpool wraps a failure to hold a body (the spool directory is
// missing or full): the server's fault, answered 503.
var errSpool = errors.New("spool body")

var copyBufs = sync.Pool{New: func() any { b := make([]byte, copyBufBytes); return &b }}

// spool holds a body being received: the first spoolMemBytes in memory,
// the rest in a temporary file under dir, created on first need and
// unlinked at once where the system allows (so a crash leaves nothing).
type spool struct {
	dir string
	mem []byte
	f   *os.File
	n   int64
}

// Write appends p.
func (s *spool) Write(p []byte) (int, error) {
	n := len(p)
	if room := spoolMemBytes - len(s.mem); s.f == nil && room > 0 {
		k := min(room, len(p))
		s.mem = append(s.mem, p[:k]...)
		p = p[k:]
	}
	if len(p) > 0 {
		if s.f == nil {
			f, err := private.CreateTemp(s.dir, "webhook-body-*")
			if err != nil {
				return 0, fmt.Errorf("%w: %w", errSpool, err)
			}
			s.f = f
			// Unlinked while open (Unix): the space is freed when f is
			// closed, even if the process dies first. Elsewhere Close
			// removes it.
			_ = os.Remove(f.Name())
		}
		if _, err := s.f.Write(p); err != nil {
			return 0, fmt.Errorf("%w: %w", errSpool, err)
		}
	}
	s.n += int64(n)
	return n, nil
}

// Bytes returns the whole body. Call it only once the body is verified:
// it brings a spooled body back into memory.
func (s *spool) Bytes() ([]byte, error) {
	if s.f == nil {
		return s.mem, nil
	}
	b := make([]byte, s.n)
	k := copy(b, s.mem)
	if _, err := s.f.ReadAt(b[k:], int64(k)); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: read back: %w", errSpool, err)
	}
	return b, nil
}

// Close drops the body and its file.
func (s *spool) Close() error {
	if s.f == nil {
		return nil
	}
	name := s.f.Name()
	err := s.f.Close()
	_ = os.Remove(name) // already gone where unlinking an open file works
	s.f = nil
	return err
}

// gate bounds the bodies being received and not yet verified: at most
// maxN at once, and at most maxBytes of them by their declared length (a
// body without one counts as the size cap). A request that does not fit
// is refused at once, before its body is read.
type gate struct {
	mu              sync.Mutex
	n, maxN         int
	bytes, maxBytes int64
}

func (g *gate) acquire(size int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n+1 > g.maxN || g.bytes+size > g.maxBytes {
		return false
	}
	g.n++
	g.bytes += size
	return true
}

func (g *gate) release(size int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	g.bytes -= size
}
