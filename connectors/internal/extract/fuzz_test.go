package extract

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzLimits are small so that a fuzzed input reaches them.
var fuzzLimits = Limits{
	MaxInputBytes:        4 << 20,
	MaxTextBytes:         64 << 10,
	MaxPages:             50,
	MaxObjects:           20_000,
	MaxDecompressedBytes: 16 << 20,
	MaxStreamBytes:       4 << 20,
	MaxPageContentBytes:  256 << 10,
	MaxZipEntries:        200,
	MaxXMLTokens:         500_000,
}

// checkExtract runs Extract on data and checks what must hold for any
// input: no panic (a recovered parser panic fails the fuzz run so that it
// is seen), an error that is ours, the text limit, valid UTF-8
// everywhere, and an ended context honoured.
func checkExtract(t *testing.T, f Format, data []byte) {
	lim := fuzzLimits
	ctx, cancel := context.WithTimeout(context.Background(), fuzzDeadline)
	defer cancel()
	if fuzzing() {
		// While fuzzing (not in go test), an input that keeps Extract
		// well past its deadline is a failure: it is saved under
		// testdata/fuzz with the stacks of the moment.
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-done:
			case <-time.After(fuzzDeadline + 10*time.Second):
				buf := make([]byte, 1<<20)
				n := runtime.Stack(buf, true)
				panic(fmt.Sprintf("Extract still running 10 s past its deadline\n%s", buf[:n]))
			}
		}()
	}
	d, err := Extract(ctx, bytes.NewReader(data), int64(len(data)), f, &lim)
	if err != nil {
		if strings.Contains(err.Error(), "panicked") {
			t.Fatalf("parser panic: %v", err)
		}
		var le *LimitError
		if !errors.As(err, &le) && !errors.Is(err, context.DeadlineExceeded) && !strings.Contains(err.Error(), "invalid: ") {
			t.Fatalf("error of an unexpected kind: %v", err)
		}
		if d != nil {
			t.Fatal("a document came back with the error")
		}
		if msg := err.Error(); !utf8.ValidString(msg) || len(msg) > 2*maxMessage {
			t.Fatalf("error message not fit to store: %q", msg)
		}
	} else {
		total := 0
		for _, s := range d.Sections {
			total += len(s.Text)
			for _, str := range append([]string{s.Text, s.Locator}, s.Headings...) {
				if !utf8.ValidString(str) {
					t.Fatalf("invalid UTF-8 in section %q: %q", s.Locator, str)
				}
			}
			if f == PDF && (s.Page < 1 || s.Page > d.Pages || s.Locator == "") {
				t.Fatalf("PDF section with page %d of %d, locator %q", s.Page, d.Pages, s.Locator)
			}
		}
		if int64(total) > lim.MaxTextBytes {
			t.Fatalf("%d bytes of text over the limit of %d", total, lim.MaxTextBytes)
		}
		for _, str := range append([]string{d.Title, d.Author}, d.Defects...) {
			if !utf8.ValidString(str) {
				t.Fatalf("invalid UTF-8 in metadata or defects: %q", str)
			}
		}
		if len(d.Defects) > maxDefects {
			t.Fatalf("%d defects", len(d.Defects))
		}
	}
	ended, stop := context.WithCancel(context.Background())
	stop()
	if _, err := Extract(ended, bytes.NewReader(data), int64(len(data)), f, &lim); !errors.Is(err, context.Canceled) && !IsLimit(err, "MaxInputBytes") {
		t.Fatalf("with an ended context: err = %v", err)
	}
}

const fuzzDeadline = 5 * time.Second

// fuzzing reports whether the test binary runs with -test.fuzz.
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// seedFixtures adds every fixture of the extension as a seed.
func seedFixtures(f *testing.F, ext string, add func([]byte)) {
	m, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*."+ext))
	if err != nil || len(m) == 0 {
		f.Fatalf("no %s fixtures: %v", ext, err)
	}
	for _, p := range m {
		add(MustRead(f, p))
	}
}

func FuzzExtractPDF(f *testing.F) {
	seedFixtures(f, "pdf", func(b []byte) { f.Add(b) })
	f.Add(buildPDF(onePage("hello (world) \\050 <3")...))
	f.Add(buildPDF(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R 3 0 R 2 0 R] >>",
		"<< /Type /Page /MediaBox [0 0 10 10] /Contents [4 0 R 4 0 R] >>",
		stream([]byte("BT /F1 12 Tf 0 0 Td [(a) -200 (b)] TJ ET"))))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkExtract(t, PDF, data)
	})
}

// The DOCX and ODT targets take either a whole file (zipped false) or the
// main XML part, which the target zips with the other parts of a real
// fixture: mutating XML inside a zip would mostly break its checksums.

func FuzzExtractDOCX(f *testing.F) {
	seedFixtures(f, "docx", func(b []byte) {
		f.Add(b, false)
		f.Add(mustEntry(f, b, "word/document.xml"), true)
	})
	f.Add([]byte(docxStart+`<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>T</w:t></w:r></w:p><w:tbl><w:tr><w:tc><w:p><w:r><w:t>a|b</w:t></w:r></w:p></w:tc></w:tr></w:tbl>`+docxEnd), true)
	base := MustRead(f, filepath.Join("testdata", "fixtures", "notes.docx"))
	f.Fuzz(func(t *testing.T, data []byte, zipped bool) {
		if zipped {
			data = replaceEntry(t, base, "word/document.xml", data)
		}
		checkExtract(t, DOCX, data)
	})
}

func FuzzExtractODT(f *testing.F) {
	seedFixtures(f, "odt", func(b []byte) {
		f.Add(b, false)
		f.Add(mustEntry(f, b, "content.xml"), true)
	})
	base := MustRead(f, filepath.Join("testdata", "fixtures", "notes.odt"))
	f.Fuzz(func(t *testing.T, data []byte, zipped bool) {
		if zipped {
			data = replaceEntry(t, base, "content.xml", data)
		}
		checkExtract(t, ODT, data)
	})
}

// mustEntry returns the named entry of a zip archive.
func mustEntry(tb testing.TB, archive []byte, name string) []byte {
	tb.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		tb.Fatal(err)
	}
	rc, err := zr.Open(name)
	if err != nil {
		tb.Fatal(err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// replaceEntry returns archive with the named entry's content replaced.
func replaceEntry(tb testing.TB, archive []byte, name string, content []byte) []byte {
	tb.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		tb.Fatal(err)
	}
	var out bytes.Buffer
	zw := zip.NewWriter(&out)
	for _, e := range zr.File {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: e.Name, Method: e.Method})
		if err != nil {
			tb.Fatal(err)
		}
		if e.Name == name {
			w.Write(content)
			continue
		}
		rc, err := e.Open()
		if err != nil {
			tb.Fatal(err)
		}
		io.Copy(w, rc)
		rc.Close()
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return out.Bytes()
}
