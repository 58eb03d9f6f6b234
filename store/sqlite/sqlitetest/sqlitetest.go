// Package sqlitetest gives other packages' tests a real SQLite store in a
// temporary directory. It is for tests only; production code never imports
// it.
package sqlitetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/store/sqlite"
)

// MustOpen opens a new store in tb's temporary directory, with the one
// fence's check as its FenceCheck as ingestd opens it, and closes it when
// the test ends. It fails the test when the store cannot be opened.
func MustOpen(tb testing.TB) *sqlite.Store {
	tb.Helper()
	return MustOpenPath(tb, filepath.Join(tb.TempDir(), "ingestd.db"), nil)
}

// MustOpenPath opens the store at path with the options (nil means the
// defaults and the one fence's check) and closes it when the test ends.
func MustOpenPath(tb testing.TB, path string, o *sqlite.Options) *sqlite.Store {
	tb.Helper()
	if o == nil {
		o = &sqlite.Options{FenceCheck: firewall.Check}
	}
	s, err := sqlite.Open(context.Background(), path, o)
	if err != nil {
		tb.Fatalf("open sqlite store: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(context.Background()); err != nil {
			tb.Errorf("close sqlite store: %v", err)
		}
	})
	return s
}
