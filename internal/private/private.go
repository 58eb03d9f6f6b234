// Package private makes the files and folders ingestd writes: its
// owner's alone, files 0600 and folders 0700, whatever the umask (which
// can take bits away, never add them). Every one of them may hold what
// ingestd keeps — mail and pages written by others, their fenced text
// and vectors, keys — so no writer in the module chooses a mode itself:
// private_test.go fails on a call of os.Create, os.WriteFile,
// os.OpenFile, os.Mkdir, os.MkdirAll, os.CreateTemp or os.MkdirTemp
// outside this package. A file or folder that exists keeps its mode.
//
// It is a leaf: the standard library only.
package private

import (
	"errors"
	"os"
)

// The modes of what the package makes.
const (
	FileMode os.FileMode = 0o600
	DirMode  os.FileMode = 0o700
)

// MkdirAll makes dir and its missing parents, 0700 each.
func MkdirAll(dir string) error { return os.MkdirAll(dir, DirMode) }

// MkdirTemp makes a new folder in dir (os.TempDir when ""), 0700.
func MkdirTemp(dir, pattern string) (string, error) { return os.MkdirTemp(dir, pattern) }

// Create makes a new file at path for writing, 0600; it fails with an
// error that is os.ErrExist when path exists.
func Create(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
}

// CreateTemp makes a new file in dir (os.TempDir when ""), 0600.
func CreateTemp(dir, pattern string) (*os.File, error) { return os.CreateTemp(dir, pattern) }

// OpenFile is os.OpenFile; a file it creates is 0600.
func OpenFile(path string, flag int) (*os.File, error) { return os.OpenFile(path, flag, FileMode) }

// WriteFile writes data to path, making it 0600 when it is new.
func WriteFile(path string, data []byte) error { return os.WriteFile(path, data, FileMode) }

// Touch makes path an empty file, 0600, unless it exists: for a file
// another library creates on its own with a mode of its choosing (SQLite
// makes a new database 0644, and its log and shared memory take the
// database's mode), so that it finds it made.
func Touch(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, FileMode)
	if err != nil {
		return err
	}
	return f.Close()
}

// PlaceNew moves the file tmp to path unless path exists: then it returns
// an error that is os.ErrExist and tmp stays. It links tmp to path, which
// fails if path appeared since anyone checked, and removes tmp; on a file
// system without hard links it renames after checking that path is
// absent. The file keeps its mode: place only what this package made.
func PlaceNew(tmp, path string) error {
	err := os.Link(tmp, path)
	if err == nil {
		return os.Remove(tmp)
	}
	if errors.Is(err, os.ErrExist) {
		return err
	}
	if _, serr := os.Lstat(path); serr == nil {
		return &os.LinkError{Op: "place", Old: tmp, New: path, Err: os.ErrExist}
	}
	return os.Rename(tmp, path)
}
