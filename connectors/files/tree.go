package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"github.com/ingestd/ingestd"
)

// RefusedError is a file the connector will not read for an installation.
// Its message names the rule that fired; it unwraps to an EINVALID
// *ingestd.Error so edges map it to a client error.
type RefusedError struct {
	Path   string // the path as given, relative to the root when it is inside
	Rule   string // outside-root, not-regular, symlinks or file-name
	Reason string // a sentence for people
}

func (e *RefusedError) Error() string { return "refused: " + e.Reason }

// Unwrap lets ingestd.ErrorCode report EINVALID with this message.
func (e *RefusedError) Unwrap() error {
	return &ingestd.Error{Code: ingestd.EINVALID, Message: e.Error()}
}

// IsRefused reports whether err is (or wraps) a refusal and returns it.
func IsRefused(err error) (*RefusedError, bool) {
	var re *RefusedError
	ok := errors.As(err, &re)
	return re, ok
}

// tree is an installation's folder opened for reading, and the only way
// this package reaches a file: the walk of a pass, every read, and
// `ingestd ingest PATH` all go through it.
//
// It is built on os.Root, so no name — a "..", an absolute path, a symlink
// anywhere on the way that leaves the folder or is absolute — reaches
// outside it, and this holds while the folder changes under a pass (a
// file swapped for a symlink after it was listed): the kernel resolves
// each step relative to the folder's open descriptor, there is no check
// made first and used later. The folder itself may be a symlink; it is
// resolved once, when the tree is opened.
//
// It reads only regular files. A name is looked at (Stat) before it is
// opened, so a FIFO, socket or device is refused without being opened,
// and it is opened non-blocking and checked again (fstat) on the open
// descriptor, so one swapped in between is refused without blocking.
//
// What os.Root cannot tell is a hard link: a second name, inside the
// folder, for a file that also has a name outside it is an ordinary
// regular file and is read (docs/SECURITY.md).
type tree struct {
	root *os.Root
	dir  string // the folder as configured, for messages
	// escapes is the error os.Root gives for a name that leads outside
	// it, so that refusal can be told apart from a missing file.
	escapes error
}

// openTree opens dir. A missing dir is ENOTFOUND, one that is not a
// directory EINVALID, both naming it.
func openTree(dir string) (*tree, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		fi, serr := os.Stat(dir)
		switch {
		case errors.Is(serr, fs.ErrNotExist):
			return nil, ingestd.Errorf(ingestd.ENOTFOUND, "files root %q does not exist", dir)
		case serr == nil && !fi.IsDir():
			return nil, ingestd.Errorf(ingestd.EINVALID, "files root %q is not a directory", dir)
		}
		return nil, fmt.Errorf("files root %q: %w", dir, err)
	}
	t := &tree{root: r, dir: dir}
	// os.Root refuses ".." before it touches the disk; its error is the
	// one every escape returns.
	if _, err := r.Open(".."); err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			t.escapes = pe.Err
		}
	}
	return t, nil
}

func (t *tree) Close() error { return t.root.Close() }

// checkName refuses a name that cannot be a file of the tree: not a clean
// slash path relative to the root ("", absolute, "..", "." elements), or
// not usable as a document's identity (invalid UTF-8, which a PostgreSQL
// text column refuses, or a control character such as a newline, which
// would forge lines wherever the id is printed).
func checkName(rel string) error {
	switch {
	case !utf8.ValidString(rel):
		return &RefusedError{Path: rel, Rule: "file-name", Reason: fmt.Sprintf("file name %q is not valid UTF-8", rel)}
	case strings.ContainsFunc(rel, unicode.IsControl):
		return &RefusedError{Path: rel, Rule: "file-name", Reason: fmt.Sprintf("file name %q holds a control character", rel)}
	case rel == ".":
		return &RefusedError{Path: rel, Rule: "not-regular", Reason: "the root folder itself is not a regular file"}
	case rel == "" || path.IsAbs(rel) || filepath.IsAbs(rel) || !fs.ValidPath(rel):
		return &RefusedError{Path: rel, Rule: "outside-root", Reason: fmt.Sprintf("%q is not a clean path relative to the root, so it may lead outside the root", rel)}
	}
	return nil
}

// open opens the regular file rel (slash-separated, relative to the root)
// for reading and returns it with its fstat. Errors: a *RefusedError for a
// bad name, a name that leads outside the root (rule outside-root), too
// many symlinks (symlinks) or anything but a regular file (not-regular);
// ENOTFOUND for a missing file or a dangling symlink; a wrapped
// fs.ErrPermission when the file cannot be read.
func (t *tree) open(rel string) (*os.File, fs.FileInfo, error) {
	if err := checkName(rel); err != nil {
		return nil, nil, err
	}
	name := filepath.FromSlash(rel)
	fi, err := t.root.Stat(name)
	if err != nil {
		return nil, nil, t.openErr(rel, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(rel, fi.Mode())
	}
	f, err := t.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, t.openErr(rel, err)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() { // swapped since the Stat above
		f.Close()
		return nil, nil, notRegular(rel, fi.Mode())
	}
	return f, fi, nil
}

func (t *tree) openErr(rel string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ingestd.Errorf(ingestd.ENOTFOUND, "%s does not exist (or is a symlink to nothing)", rel)
	case t.escapes != nil && errors.Is(err, t.escapes):
		return &RefusedError{Path: rel, Rule: "outside-root", Reason: fmt.Sprintf("%s leads outside the root %s (through a symlink that leaves it or is absolute)", rel, t.dir)}
	case errors.Is(err, syscall.ELOOP):
		return &RefusedError{Path: rel, Rule: "symlinks", Reason: fmt.Sprintf("%s: too many levels of symlinks", rel)}
	case errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.EOPNOTSUPP):
		return &RefusedError{Path: rel, Rule: "not-regular", Reason: fmt.Sprintf("%s is not a regular file (a socket or a device)", rel)}
	}
	return fmt.Errorf("open %s: %w", rel, err)
}

func notRegular(rel string, m fs.FileMode) error {
	what := "a special file"
	switch t := m.Type(); {
	case t&fs.ModeDir != 0:
		what = "a directory"
	case t&fs.ModeNamedPipe != 0:
		what = "a FIFO"
	case t&fs.ModeSocket != 0:
		what = "a socket"
	case t&fs.ModeCharDevice != 0:
		what = "a character device"
	case t&fs.ModeDevice != 0:
		what = "a block device"
	}
	return &RefusedError{Path: rel, Rule: "not-regular", Reason: fmt.Sprintf("%s is not a regular file (it is %s); only regular files are read", rel, what)}
}

// read returns the content and fstat of the regular file rel, at most max
// bytes: a larger file is ETOOLARGE, before it is read when its size says
// so, as soon as it passes max when it grows (or reports no size).
func (t *tree) read(rel string, max int64) ([]byte, fs.FileInfo, error) {
	f, fi, err := t.open(rel)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if fi.Size() > max {
		return nil, nil, ingestd.Errorf(ingestd.ETOOLARGE, "%s is %d bytes, over the %d-byte max_file_bytes", rel, fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", rel, err)
	}
	if int64(len(data)) > max {
		return nil, nil, ingestd.Errorf(ingestd.ETOOLARGE, "%s is over the %d-byte max_file_bytes", rel, max)
	}
	return data, fi, nil
}

// walk visits every entry under the root that is not a directory, in
// lexical order (each directory's entries sorted by name, a directory's
// contents right after it), with its slash path relative to the root.
// Symlinks are visited, never descended (open judges where they lead);
// skipDir says which directories not to enter. It reports whether every
// directory could be read (one that could not is logged and skipped), and
// fails only when the root cannot be read or visit or ctx fails.
func (t *tree) walk(ctx context.Context, log *slog.Logger, skipDir func(rel string, name string) bool, visit func(rel string, d fs.DirEntry) error) (bool, error) {
	complete := true
	var walkDir func(dir string) error
	walkDir = func(dir string) error {
		entries, err := t.readDir(dir)
		if err != nil {
			if dir == "." {
				return fmt.Errorf("read files root %q: %w", t.dir, err)
			}
			log.Warn("files: cannot read", "path", dir, "err", err)
			complete = false
			return nil
		}
		for _, d := range entries {
			if err := ctx.Err(); err != nil {
				return err
			}
			rel := d.Name()
			if dir != "." {
				rel = dir + "/" + d.Name()
			}
			if d.IsDir() {
				if !skipDir(rel, d.Name()) {
					if err := walkDir(rel); err != nil {
						return err
					}
				}
				continue
			}
			if err := visit(rel, d); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walkDir("."); err != nil {
		return false, err
	}
	return complete, nil
}

// readDir lists the directory rel through the root, sorted by name.
func (t *tree) readDir(rel string) ([]fs.DirEntry, error) {
	f, err := t.root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, nil
}
