package archive

import (
	"io"
	"os"
)

// Opener opens the archive file at path, held to lim, each time it is
// called: a reader for a pass over the archive and the file to close
// after it (an import reads an archive twice, checking it whole before
// it writes).
func Opener(path string, lim Limits) func() (*Reader, io.Closer, error) {
	return func() (*Reader, io.Closer, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		r, err := NewLimitedReader(f, lim)
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return r, f, nil
	}
}
