package pipeline_test

import (
	"context"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite"
)

// benchDocs returns n documents of about 2 KB of real text: the Markdown
// files of the Go distribution, cut into pieces, each made distinct by its
// number. It skips the benchmark when the distribution ships none.
func benchDocs(b *testing.B, n int) []ingestd.Item {
	b.Helper()
	var text strings.Builder
	_ = filepath.WalkDir(build.Default.GOROOT, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") || text.Len() > 4<<20 {
			return nil
		}
		if body, err := os.ReadFile(p); err == nil {
			text.Write(body)
			text.WriteString("\n\n")
		}
		return nil
	})
	corpus := text.String()
	if len(corpus) < 64<<10 {
		b.Skip("no Markdown text found in GOROOT to build documents from")
	}
	items := make([]ingestd.Item, n)
	off := 0
	for i := range items {
		if off+2048 > len(corpus) {
			off = 0
		}
		end := off + 2048
		for end < len(corpus) && corpus[end] != '\n' && end < off+2300 {
			end++
		}
		items[i] = ingestd.Item{
			ExternalID: fmt.Sprintf("doc-%05d.md", i),
			Title:      fmt.Sprintf("Document %d", i),
			Format:     ingestd.FormatMarkdown,
			Text:       fmt.Sprintf("# Document %d\n\n%s", i, corpus[off:end]),
		}
		off = end
	}
	return items
}

func openBenchStore(b *testing.B) *sqlite.Store {
	b.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close(context.Background()) })
	return st
}

// BenchmarkIngest10k is the whole pipeline — stamp, chunk, fence, embed
// (lexical), store — for 10,000 documents of ~2 KB into a SQLite file.
// Compare with BenchmarkInsertPrecomputed10k in the same run.
func BenchmarkIngest10k(b *testing.B) {
	items := benchDocs(b, 10_000)
	inst := ingestd.Installation{ID: "bench", Kind: "files", Tier: ingestd.TierTrustedInternal}
	ctx := context.Background()
	b.SetBytes(int64(len(items) * 2048))
	for b.Loop() {
		b.StopTimer()
		st := openBenchStore(b)
		p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewCached(embedder.NewLexical(384), nil)})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for _, it := range items {
			if _, err := p.Ingest(ctx, inst, it); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(items)*b.N)/b.Elapsed().Seconds(), "docs/s")
}

// BenchmarkInsertPrecomputed10k writes the same documents' chunks —
// chunked, fenced and embedded beforehand, outside the timer — straight
// into the store: the floor the pipeline is measured against.
func BenchmarkInsertPrecomputed10k(b *testing.B) {
	items := benchDocs(b, 10_000)
	inst := ingestd.Installation{ID: "bench", Kind: "files", Tier: ingestd.TierTrustedInternal}
	ctx := context.Background()

	// Precompute with the pipeline itself into a scratch store, then read
	// the rows back.
	scratch := openBenchStore(b)
	p, err := pipeline.New(pipeline.Options{Store: scratch, Embedder: embedder.NewLexical(384)})
	if err != nil {
		b.Fatal(err)
	}
	type row struct {
		doc    *ingestd.Document
		chunks []ingestd.Chunk
	}
	rows := make([]row, len(items))
	for i, it := range items {
		if _, err := p.Ingest(ctx, inst, it); err != nil {
			b.Fatal(err)
		}
		id := ingestd.DocumentID(inst.ID, it.ExternalID)
		d, err := scratch.Document(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		views, err := scratch.DocumentChunks(ctx, []string{id})
		if err != nil {
			b.Fatal(err)
		}
		cs := make([]ingestd.Chunk, len(views))
		for j, v := range views {
			cs[j] = v.Chunk
		}
		rows[i] = row{d, cs}
	}
	b.SetBytes(int64(len(items) * 2048))
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		st := openBenchStore(b)
		b.StartTimer()
		for _, r := range rows {
			if _, err := st.PutDocument(ctx, r.doc, r.chunks, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(items)*b.N)/b.Elapsed().Seconds(), "docs/s")
}
