package extract

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// MustFixtures returns the paths of the PDF, DOCX and ODT fixtures.
func MustFixtures(tb testing.TB) []string {
	tb.Helper()
	var out []string
	for _, ext := range []string{"pdf", "docx", "odt"} {
		m, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*."+ext))
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) == 0 {
		tb.Fatal("no fixtures in testdata/fixtures")
	}
	return out
}

// MustRead reads a file of the test data.
func MustRead(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// MustExtract extracts data as the format its name says, with limits.
func MustExtract(tb testing.TB, name string, data []byte, lim *Limits) *Doc {
	tb.Helper()
	d, err := Extract(context.Background(), bytes.NewReader(data), int64(len(data)), Detect(name, "", data), lim)
	if err != nil {
		tb.Fatalf("extract %s: %v", name, err)
	}
	return d
}

// render writes a Doc in the golden files' form: metadata, defects, then
// each section under a line that gives its locator.
func render(d *Doc) string {
	var b strings.Builder
	fmt.Fprintf(&b, "format: %s\ntitle: %s\nauthor: %s\npages: %d\n", d.Format, d.Title, d.Author, d.Pages)
	for _, def := range d.Defects {
		fmt.Fprintf(&b, "defect: %s\n", def)
	}
	for _, s := range d.Sections {
		fmt.Fprintf(&b, "\n=== section %q page=%d headings=%q\n%s\n", s.Locator, s.Page, s.Headings, s.Text)
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	for _, path := range MustFixtures(t) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			d := MustExtract(t, name, MustRead(t, path), nil)
			got := render(d)
			golden := filepath.Join("testdata", "golden", name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := string(MustRead(t, golden)); got != want {
				t.Errorf("%s differs from %s (go test -run TestGolden -update rewrites it):\n%s", name, golden, diff(want, got))
			}
			if !utf8.ValidString(got) {
				t.Error("output is not valid UTF-8")
			}
		})
	}
}

// diff returns the first differing lines of want and got.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\nwant %q\n got %q", i+1, wl, gl)
		}
	}
	return ""
}
