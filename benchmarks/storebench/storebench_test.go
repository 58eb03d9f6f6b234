package storebench

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildScanInsert builds a small corpus and checks what the benchmarks
// read from it: every chunk scanned, the queries and configuration
// written, the same rows inserted by the baseline.
func TestBuildScanInsert(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	c, err := Build(ctx, dir, 201, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Chunks, 204; got != want { // whole documents of four chunks
		t.Errorf("built %d chunks, want %d", got, want)
	}
	if _, err := Build(ctx, dir, 10, BuildOptions{}); err == nil {
		t.Error("a second Build into the same directory succeeded")
	}
	n, _, err := ScanRows(ctx, c.DB)
	if err != nil {
		t.Fatal(err)
	}
	if n != c.Chunks {
		t.Errorf("scanned %d rows, want %d", n, c.Chunks)
	}
	if _, err := os.Stat(c.DB + ".index"); err != nil {
		t.Errorf("no index snapshot beside the corpus: %v", err)
	}
	q, err := os.ReadFile(c.Queries)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(strings.Fields(strings.ReplaceAll(string(q), "\n", " "))); got < 256*2 {
		t.Errorf("queries hold %d words, want at least two for each of 256", got)
	}
	rows, err := ReadRows(ctx, c.DB)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != c.Chunks || len(rows[0].Embedding) != Dims*4 {
		t.Fatalf("read %d rows (first vector %d bytes), want %d of %d", len(rows), len(rows[0].Embedding), c.Chunks, Dims*4)
	}
	for _, fts := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "raw.db")
		_, _, module, err := RawInsert(ctx, path, rows, 50, fts)
		if err != nil {
			t.Fatal(err)
		}
		if got := module != ""; got != fts {
			t.Errorf("fts %v: full-text module %q", fts, module)
		}
		n, err := countRaw(path)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(rows) {
			t.Errorf("fts %v: the baseline inserted %d rows, want %d", fts, n, len(rows))
		}
	}
}

func TestWriteMarkdown(t *testing.T) {
	dir := t.TempDir()
	total, err := WriteMarkdown(dir, 20, 1)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
	if len(files) != 20 {
		t.Fatalf("%d files, want 20", len(files))
	}
	if avg := total / 20; avg < 1500 || avg > 3000 {
		t.Errorf("files of %d bytes on average, want about 2 KB", avg)
	}
}

// countRaw counts the rows a RawInsert wrote.
func countRaw(path string) (int, error) {
	h, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		return 0, err
	}
	defer h.Close()
	var n int
	err = h.QueryRow("SELECT count(*) FROM raw").Scan(&n)
	return n, err
}
