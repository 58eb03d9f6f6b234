package archive_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd/archive"
)

// TestOpener: each call opens the file afresh, held to the limits given,
// so an archive can be read twice (checked whole, then written).
func TestOpener(t *testing.T) {
	want := records()
	p := filepath.Join(t.TempDir(), "a.ingestd")
	if err := os.WriteFile(p, mustWrite(t, archive.Zstd, want), 0o600); err != nil {
		t.Fatal(err)
	}
	open := archive.Opener(p, archive.DefaultLimits)
	for pass := range 2 {
		r, f, err := open()
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		var got []any
		for {
			rec, err := r.Next()
			if err != nil {
				break
			}
			got = append(got, rec)
		}
		r.Close()
		f.Close()
		if len(got) != len(want) {
			t.Fatalf("pass %d read %d records, want %d", pass, len(got), len(want))
		}
	}
	tight := archive.DefaultLimits
	tight.MaxRecordBytes = 1
	if r, f, err := archive.Opener(p, tight)(); err == nil {
		_, err = r.Next()
		f.Close()
		if err == nil {
			t.Fatal("an archive past the limits given was read")
		}
	}
	if _, _, err := archive.Opener(filepath.Join(t.TempDir(), "none"), archive.DefaultLimits)(); err == nil {
		t.Fatal("a missing file opened")
	}
}
