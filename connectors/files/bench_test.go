package files_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkSync is one full pass over a generated tree of 300 files (200
// Markdown, 50 HTML, 50 mails with an attachment); the pass fake keeps
// everything in memory, so this measures walking, reading and parsing.
func BenchmarkSync(b *testing.B) {
	root := b.TempDir()
	eml, err := os.ReadFile(filepath.Join("testdata", "basic", "mail", "support.eml"))
	if err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("A paragraph of handbook text that goes on for a while.\n\n", 40)
	for i := 0; i < 300; i++ {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", i%10))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		var name string
		var data []byte
		switch {
		case i < 200:
			name, data = fmt.Sprintf("doc%03d.md", i), []byte(fmt.Sprintf("# Doc %d\n\n%s", i, body))
		case i < 250:
			name, data = fmt.Sprintf("page%03d.html", i), []byte("<title>p</title><p>"+strings.ReplaceAll(body, "\n\n", "</p><p>")+"</p>")
		default:
			name, data = fmt.Sprintf("mail%03d.eml", i), eml
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	src := MustSource(b, "bench", "root: "+quote(root))
	b.ReportAllocs()
	for b.Loop() {
		rec := newPass()
		if err := src.Sync(context.Background(), rec); err != nil {
			b.Fatal(err)
		}
		if rec.LastTotal() != 300 {
			b.Fatalf("total %d", rec.LastTotal())
		}
	}
}
