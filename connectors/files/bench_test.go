package files_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/extract"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite"
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

// BenchmarkSyncPDFs is a whole files pass over 20 copies of a 3-page PDF
// (testdata/rich/handbook.pdf) into a fresh SQLite store with the lexical
// embedder — read through the root, extracted, chunked by page, fenced,
// embedded, stored — against extraction alone of the same bytes, timed in
// the same op: "pages/s" is the pass's, "x-extract" how many times the
// extraction's time the pass takes (opening the store is not timed).
//
// go test ./connectors/files -run '^$' -bench SyncPDFs -benchtime 20x -count 3
func BenchmarkSyncPDFs(b *testing.B) {
	const copies = 20
	pdf := mustReadRich(b, "handbook.pdf")
	root := b.TempDir()
	for i := range copies {
		mustWrite(b, root, fmt.Sprintf("d%d/handbook-%02d.pdf", i%4, i), pdf)
	}
	src := MustSource(b, "bench", "root: "+quote(root))
	inst := ingestd.Installation{ID: "bench", Kind: "files", Tier: ingestd.TierTrustedInternal}
	var syncTime, extractTime time.Duration
	pages := 0
	for b.Loop() {
		b.StopTimer()
		st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "ingestd.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewLexical(384)})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		sum, err := p.Sync(context.Background(), inst, src, nil)
		syncTime += time.Since(start)
		if err != nil || sum.Added != copies {
			b.Fatalf("sync = %s, %v", sum, err)
		}
		start = time.Now()
		for range copies {
			d, err := extract.Config{}.Read(context.Background(), pdf, extract.PDF, int64(len(pdf)))
			if err != nil {
				b.Fatal(err)
			}
			pages += d.Pages
		}
		extractTime += time.Since(start)
		b.StopTimer()
		st.Close(context.Background())
		b.StartTimer()
	}
	b.ReportMetric(float64(pages)/syncTime.Seconds(), "pages/s")
	b.ReportMetric(float64(pages)/extractTime.Seconds(), "extract-pages/s")
	b.ReportMetric(syncTime.Seconds()/extractTime.Seconds(), "x-extract")
}
