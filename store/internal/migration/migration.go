// Package migration reads a store's numbered migrations: the files
// NNNN_name.sql of one folder, versions 1, 2, 3 … without a gap, each
// applied once and in order by the store that embeds them. A released
// migration is never edited; a change is a new file. How a migration is
// applied (transaction, lock, the version table) is each store's own.
//
// It is a leaf: the standard library only.
package migration

import (
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// File is one migration: a version of a store's schema.
type File struct {
	Version int    // 1 for the first
	Name    string // the file's name, for messages
	SQL     string
}

// Load returns the migrations dir/*.sql of fsys in version order. It
// returns an error naming the file when a name does not start with the
// version that comes next (a gap, a duplicate, no number), and when dir
// holds none.
func Load(fsys fs.FS, dir string) ([]File, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no migrations in %s", dir)
	}
	out := make([]File, 0, len(names))
	for i, name := range names { // fs.Glob sorts
		base := path.Base(name)
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil || v != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d", base, i+1)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		out = append(out, File{Version: v, Name: base, SQL: string(b)})
	}
	return out, nil
}

// MustLoad is Load for migrations embedded in the binary, where a
// misnamed or missing file is a build mistake that any test meets: it
// panics instead of returning the error.
func MustLoad(fsys fs.FS, dir string) []File {
	ms, err := Load(fsys, dir)
	if err != nil {
		panic(err)
	}
	return ms
}
