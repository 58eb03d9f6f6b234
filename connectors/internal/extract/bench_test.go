package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/carlos7ags/folio/reader"
)

// BenchmarkExtract reads every fixture of one format per op and reports
// Extract's own time per op, MB/s of input and, for PDF, pages/s. Each op
// also runs the baselines on the same bytes right after, so the ratios
// ("x-...") compare timings taken under the same load:
//
//   - DOCX, ODT: x-unzip, opening the zip and inflating every entry with
//     archive/zip — the floor under any reader of these formats;
//   - PDF: x-streams, folio opening the file and inflating each page's
//     content (no text), and x-folio-text, folio's own ExtractText per page
//     (text without our census, layout and sections).
//
// go test ./connectors/internal/extract -run '^$' -bench Extract -benchtime 3s -count 3
func BenchmarkExtract(b *testing.B) {
	for _, ext := range []string{"pdf", "docx", "odt"} {
		b.Run(ext, func(b *testing.B) {
			files, size := benchFiles(b, ext)
			f := Detect("x."+ext, "", files[0])
			baselines := map[string]func([]byte) error{"x-unzip": unzipAll}
			if f == PDF {
				baselines = map[string]func([]byte) error{"x-streams": folioStreams, "x-folio-text": folioText}
			}
			b.ReportAllocs()
			var own time.Duration
			spent := map[string]time.Duration{}
			pages := 0
			for b.Loop() {
				start := time.Now()
				for _, data := range files {
					d, err := Extract(context.Background(), bytes.NewReader(data), int64(len(data)), f, nil)
					if err != nil {
						b.Fatal(err)
					}
					pages += d.Pages
				}
				own += time.Since(start)
				for name, base := range baselines {
					start := time.Now()
					for _, data := range files {
						if err := base(data); err != nil {
							b.Fatal(err)
						}
					}
					spent[name] += time.Since(start)
				}
			}
			b.ReportMetric(float64(own.Nanoseconds())/float64(b.N), "ns/op")
			b.ReportMetric(float64(size)*float64(b.N)/own.Seconds()/1e6, "MB/s")
			if pages > 0 {
				b.ReportMetric(float64(pages)/own.Seconds(), "pages/s")
			}
			for name, d := range spent {
				b.ReportMetric(own.Seconds()/d.Seconds(), name)
			}
		})
	}
}

// BenchmarkCensus is the census alone: the share of a PDF's Extract that
// guards the parser against hostile page trees.
func BenchmarkCensus(b *testing.B) {
	files, size := benchFiles(b, "pdf")
	lim, _ := (*Limits)(nil).withDefaults()
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, data := range files {
			if _, err := takeCensus(context.Background(), data, &lim); err != nil {
				b.Fatal(err)
			}
		}
	}
}

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

func unzipAll(data []byte) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	for _, e := range zr.File {
		rc, err := e.Open()
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func folioStreams(data []byte) error {
	pr, err := reader.Parse(data)
	if err != nil {
		return err
	}
	for i := range pr.PageCount() {
		p, _ := pr.Page(i)
		if _, err := p.ContentStream(); err != nil {
			return err
		}
	}
	return nil
}

func folioText(data []byte) error {
	pr, err := reader.Parse(data)
	if err != nil {
		return err
	}
	for i := range pr.PageCount() {
		p, _ := pr.Page(i)
		if _, err := p.ExtractText(); err != nil {
			return err
		}
	}
	return nil
}
