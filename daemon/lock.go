package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/private"
)

// LockFile is the name of the lock under data_dir. The process that holds
// it owns what in data_dir only one process may open: the embedded NATS
// server's JetStream files. `ingestd serve` holds it while it runs the
// embedded NATS (no nats.url); a one-shot command holds it only while it
// runs the embedded NATS itself (dlq, sync --queue with no serve running).
// Commands that only read and write the store (sync, search, provenance,
// ...) do not take it: SQLite takes writers from several processes in
// turn, and serve's in-memory indexes catch up with what another process
// wrote.
const LockFile = "ingestd.lock"

// Holder is what the holder writes inside the lock file, so that a
// second process can name it and a one-shot command can reach it.
type Holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Since   time.Time `json:"since"`
	// Listen is the address serve's API listens on, written once it does
	// (listen: 127.0.0.1:0 picks a port only then).
	Listen string `json:"listen,omitempty"`
}

func (h Holder) String() string {
	s := fmt.Sprintf("process %d", h.PID)
	if h.Command != "" {
		s += fmt.Sprintf(" (%s)", h.Command)
	}
	if !h.Since.IsZero() {
		s += ", running since " + h.Since.Format(time.RFC3339)
	}
	return s
}

// DirLock is a held lock on data_dir/ingestd.lock: an exclusive flock on
// the file, released when the process exits however it exits. A file
// left behind by a process that is gone holds no lock and is taken over.
type DirLock struct {
	f      *os.File
	holder Holder
}

// LockDataDir takes the lock on dir (creating dir). When another process
// holds it, it returns ECONFLICT naming that process.
func LockDataDir(dir string, holder Holder) (*DirLock, error) {
	if err := private.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := private.OpenFile(path, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("data_dir lock: %w", err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("data_dir lock %s: %w", path, err)
	}
	if !held {
		other, _ := readHolder(f)
		f.Close()
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		return nil, ingestd.Errorf(ingestd.ECONFLICT, "data_dir %s is in use by %s; "+
			"one serve owns a data_dir: stop that one first, or give this configuration its own data_dir", dir, Describe(other))
	}
	l := &DirLock{f: f, holder: holder}
	if err := l.write(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// SetListen records the address serve's API listens on.
func (l *DirLock) SetListen(addr string) error {
	l.holder.Listen = addr
	return l.write()
}

func (l *DirLock) write() error {
	b, err := json.Marshal(l.holder)
	if err != nil {
		return err
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("data_dir lock: %w", err)
	}
	if _, err := l.f.WriteAt(append(b, '\n'), 0); err != nil {
		return fmt.Errorf("data_dir lock: %w", err)
	}
	return nil
}

// Close empties the file and releases the lock. The file stays: removing
// it would let a process that opened it just before take a lock on a file
// no longer in the directory while a third creates a new one.
func (l *DirLock) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	return err
}

// LockedBy reports the process holding the lock on dir, if any. It takes
// the lock for an instant to find out, so it must not be called by a
// process that holds it.
func LockedBy(dir string) (Holder, bool, error) {
	f, err := private.OpenFile(filepath.Join(dir, LockFile), os.O_RDWR)
	if errors.Is(err, os.ErrNotExist) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, fmt.Errorf("data_dir lock: %w", err)
	}
	defer f.Close()
	free, err := tryLock(f)
	if err != nil || free {
		return Holder{}, false, err
	}
	h, err := readHolder(f)
	return h, true, err
}

func readHolder(f *os.File) (Holder, error) {
	var h Holder
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 64<<10))
	if err != nil {
		return h, err
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return h, errors.New("the lock file is empty")
	}
	return h, json.Unmarshal(b, &h)
}

// Describe names the holder, or says it could not be read (a holder that
// is starting has not written itself yet).
func Describe(h Holder) string {
	if h.PID == 0 {
		return "another process (which has not written its pid into " + LockFile + " yet)"
	}
	return h.String()
}
