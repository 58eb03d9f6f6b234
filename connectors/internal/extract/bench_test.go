package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/carlos7ags/folio/reader"
)

// The benchmarks read every fixture of one format per op and report MB/s
// (of input) and, for PDF, pages/s. Each Extract benchmark has a baseline
// beside it, measured in the same run on the same bytes:
//
//   - DOCX, ODT: opening the zip and inflating every entry (archive/zip),
//     the floor under any reader of these formats;
//   - PDF: folio opening the file and inflating each page's content
//     (no text), and folio's own ExtractText per page (text without our
//     census, layout and sections).
//
// go test ./connectors/internal/extract -run '^$' -bench . -benchtime 2s -count 3

func benchFiles(b *testing.B, ext string) ([][]byte, int64) {
	m, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*."+ext))
	if err != nil || len(m) == 0 {
		b.Fatalf("no %s fixtures", ext)
	}
	var files [][]byte
	var size int64
	for _, p := range m {
		data := MustRead(b, p)
		files = append(files, data)
		size += int64(len(data))
	}
	return files, size
}

func BenchmarkExtract(b *testing.B) {
	for _, ext := range []string{"pdf", "docx", "odt"} {
		b.Run(ext, func(b *testing.B) {
			files, size := benchFiles(b, ext)
			f := Detect("x."+ext, "", files[0])
			b.SetBytes(size)
			b.ReportAllocs()
			pages := 0
			for b.Loop() {
				for _, data := range files {
					d, err := Extract(context.Background(), bytes.NewReader(data), int64(len(data)), f, nil)
					if err != nil {
						b.Fatal(err)
					}
					pages += d.Pages
				}
			}
			if pages > 0 {
				b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
			}
		})
	}
}

// BenchmarkBaseline is the floor each format's Extract is compared with.
func BenchmarkBaseline(b *testing.B) {
	for _, ext := range []string{"docx", "odt"} {
		b.Run(ext+"-unzip", func(b *testing.B) {
			files, size := benchFiles(b, ext)
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				for _, data := range files {
					zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
					if err != nil {
						b.Fatal(err)
					}
					for _, e := range zr.File {
						rc, err := e.Open()
						if err != nil {
							b.Fatal(err)
						}
						io.Copy(io.Discard, rc)
						rc.Close()
					}
				}
			}
		})
	}
	b.Run("pdf-content-streams", func(b *testing.B) {
		files, size := benchFiles(b, "pdf")
		b.SetBytes(size)
		b.ReportAllocs()
		pages := 0
		for b.Loop() {
			for _, data := range files {
				pr, err := reader.Parse(data)
				if err != nil {
					b.Fatal(err)
				}
				for i := range pr.PageCount() {
					p, _ := pr.Page(i)
					if _, err := p.ContentStream(); err != nil {
						b.Fatal(err)
					}
					pages++
				}
			}
		}
		b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
	})
	b.Run("pdf-folio-text", func(b *testing.B) {
		files, size := benchFiles(b, "pdf")
		b.SetBytes(size)
		b.ReportAllocs()
		pages := 0
		for b.Loop() {
			for _, data := range files {
				pr, err := reader.Parse(data)
				if err != nil {
					b.Fatal(err)
				}
				for i := range pr.PageCount() {
					p, _ := pr.Page(i)
					if _, err := p.ExtractText(); err != nil {
						b.Fatal(err)
					}
					pages++
				}
			}
		}
		b.ReportMetric(float64(pages)/b.Elapsed().Seconds(), "pages/s")
	})
}
