package extract

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"context"
	"encoding/ascii85"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/carlos7ags/folio/core"

	"github.com/ingestd/ingestd"
)

// buildPDF writes a PDF whose objects are objs (object i+1 is objs[i],
// object 1 the catalog) with a classic cross-reference table.
func buildPDF(objs ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	offs := make([]int, len(objs))
	for i, o := range objs {
		offs[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	x := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, o := range offs {
		fmt.Fprintf(&b, "%010d 00000 n \n", o)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, x)
	return b.Bytes()
}

// prevLoop makes the trailer of a PDF built by buildPDF name its own
// cross-reference table as the previous one.
func prevLoop(pdf []byte) []byte {
	i := bytes.LastIndex(pdf, []byte("startxref\n"))
	x := strings.TrimSpace(strings.SplitN(string(pdf[i+len("startxref\n"):]), "\n", 2)[0])
	return bytes.Replace(pdf, []byte("/Root 1 0 R >>"), []byte("/Root 1 0 R /Prev "+x+" >>"), 1)
}

// stream returns a PDF stream object of data, Flate-compressed.
func stream(data []byte) string {
	var z bytes.Buffer
	w, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	w.Write(data)
	w.Close()
	return fmt.Sprintf("<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream", z.Len(), z.Bytes())
}

// onePage returns the objects of a one-page PDF showing text, with extra
// objects appended from object 5 on.
func onePage(text string, extra ...string) []string {
	content := fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", text)
	return append([]string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(content), content),
	}, extra...)
}

// zipOf builds a zip archive of the entries, in order, deflated.
func zipOf(tb testing.TB, entries ...[2]string) []byte {
	tb.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range entries {
		w, err := zw.Create(e[0])
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := io.WriteString(w, e[1]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

const (
	wNS       = `xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"`
	docxStart = `<?xml version="1.0" encoding="UTF-8"?><w:document ` + wNS + `><w:body>`
	docxEnd   = `</w:body></w:document>`
)

func docxOf(tb testing.TB, body string) []byte {
	return zipOf(tb, [2]string{"word/document.xml", docxStart + body + docxEnd})
}

func odtOf(tb testing.TB, content string) []byte {
	return zipOf(tb, [2]string{"mimetype", MediaTypeODT}, [2]string{"content.xml", content})
}

// extractBytes is Extract over data, with the stack of any panic in the
// error.
func extractBytes(ctx context.Context, f Format, data []byte, lim *Limits) (*Doc, error) {
	return extract(ctx, bytes.NewReader(data), int64(len(data)), f, lim, readerOf(f), true)
}

// TestHostile runs every crafted hostile input through Extract and checks
// it ends the way it should: with the named limit, an EINVALID error that
// says what was wrong, or a document with a defect.
func TestHostile(t *testing.T) {
	big := func(n int, s string) string { return strings.Repeat(s, n) }
	dagKids := func(ref string, n int) string { return "[" + big(n, ref+" ") + "]" }

	// A zip bomb: 20 MB of one letter in document.xml, about 20 KB zipped.
	bomb := docxOf(t, `<w:p><w:r><w:t>`+big(20<<20, "a")+`</w:t></w:r></w:p>`)

	// A DOCX of 100,000 entries.
	var many bytes.Buffer
	zw := zip.NewWriter(&many)
	for i := range 100_000 {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("word/media/%d", i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	zw.Close()

	// A PDF of a million objects.
	var million bytes.Buffer
	{
		objs := onePage("hello")
		million.WriteString("%PDF-1.7\n")
		offs := make([]int, 0, 1_000_000)
		for i, o := range objs {
			offs = append(offs, million.Len())
			fmt.Fprintf(&million, "%d 0 obj\n%s\nendobj\n", i+1, o)
		}
		for i := len(objs); i < 1_000_000; i++ {
			offs = append(offs, million.Len())
			fmt.Fprintf(&million, "%d 0 obj 0 endobj\n", i+1)
		}
		x := million.Len()
		fmt.Fprintf(&million, "xref\n0 %d\n0000000000 65535 f \n", len(offs)+1)
		for _, o := range offs {
			fmt.Fprintf(&million, "%010d 00000 n \n", o)
		}
		fmt.Fprintf(&million, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offs)+1, x)
	}

	inflated := stream(bytes.Repeat([]byte("BT /F1 12 Tf 72 720 Td (x) Tj ET\n"), 40_000)) // ~1.3 MB inflated

	secret := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP-SECRET-MARKER"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		format  Format
		data    []byte
		lim     *Limits
		limit   string // the *LimitError expected, or
		err     error  // an error errors.Is matches, or
		errText string // an EINVALID error containing this, or
		defect  string // a document with a defect containing this
		check   func(t *testing.T, d *Doc)
		alloc   uint64 // when set, the most Extract may allocate
	}{
		{name: "docx zip bomb", format: DOCX, data: bomb, limit: "MaxCompressionRatio"},
		{name: "docx zip bomb under a generous ratio", format: DOCX, data: bomb,
			lim: &Limits{MaxCompressionRatio: 1 << 20, MaxDecompressedBytes: 8 << 20}, limit: "MaxDecompressedBytes"},
		{name: "docx of 100k entries", format: DOCX, data: many.Bytes(), limit: "MaxZipEntries"},
		{name: "docx nested 100k deep", format: DOCX, data: docxOf(t, big(100_000, "<w:p>")), limit: "MaxXMLDepth"},
		{name: "docx over the token budget", format: DOCX, data: docxOf(t, big(10_000, "<w:p><w:r><w:t>x</w:t></w:r></w:p>")),
			lim: &Limits{MaxXMLTokens: 5000}, limit: "MaxXMLTokens"},
		{name: "docx not a zip", format: DOCX, data: []byte("this is not a zip archive at all"), errText: "not a DOCX: not a zip archive"},
		{name: "docx without a document", format: DOCX, data: zipOf(t, [2]string{"hello.txt", "hi"}), errText: "no word/document.xml"},
		{name: "docx truncated", format: DOCX, data: MustRead(t, "testdata/fixtures/handbook.docx")[:4000], errText: "not a zip archive"},
		{name: "docx broken xml keeps what was read", format: DOCX,
			data:   zipOf(t, [2]string{"word/document.xml", docxStart + `<w:p><w:r><w:t>kept</w:t></w:r></w:p><w:p><w:r><w:t>cut`}),
			defect: "XML syntax error",
			check: func(t *testing.T, d *Doc) {
				if got := d.Text(); !strings.Contains(got, "kept") {
					t.Errorf("text %q lost the paragraph before the error", got)
				}
			}},
		{name: "odt is a docx", format: ODT, data: MustRead(t, "testdata/fixtures/handbook.docx"), errText: "is a DOCX file"},
		{name: "odt xxe not resolved", format: ODT, data: odtOf(t, `<?xml version="1.0"?>
<!DOCTYPE office:document-content [<!ENTITY xxe SYSTEM "file://`+secret+`">]>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0">
<office:body><office:text><text:p>before &xxe; after</text:p></office:text></office:body></office:document-content>`),
			check: func(t *testing.T, d *Doc) {
				got := d.Text()
				if strings.Contains(got, "TOP-SECRET") {
					t.Fatalf("the external entity was resolved: %q", got)
				}
				if !strings.Contains(got, "before") || !strings.Contains(got, "after") {
					t.Errorf("text %q lost the paragraph around the entity", got)
				}
			}},
		{name: "odt billion laughs stays literal", format: ODT, data: odtOf(t, `<?xml version="1.0"?>
<!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0">
<office:body><office:text><text:p>&c;</text:p></office:text></office:body></office:document-content>`),
			check: func(t *testing.T, d *Doc) {
				if got := d.Text(); len(got) > 10 {
					t.Errorf("entities were expanded: %d bytes", len(got))
				}
			}},
		{name: "odt nested deep", format: ODT, data: odtOf(t, `<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"><office:body><office:text>`+big(50_000, "<x>")), limit: "MaxXMLDepth"},

		{name: "pdf of a million objects", format: PDF, data: million.Bytes(), limit: "MaxObjects"},
		{name: "pdf page tree listing one node 1000x1000 times", format: PDF, data: buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids "+dagKids("3 0 R", 1000)+" >>",
			"<< /Type /Pages /Kids "+dagKids("4 0 R", 1000)+" >>",
			"<< /Type /Page /MediaBox [0 0 10 10] >>"), limit: "MaxPages", alloc: 16 << 20},
		{name: "pdf page tree of a billion pages", format: PDF, data: buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids "+dagKids("3 0 R", 1000)+" >>",
			"<< /Type /Pages /Kids "+dagKids("4 0 R", 1000)+" >>",
			"<< /Type /Pages /Kids "+dagKids("5 0 R", 1000)+" >>",
			"<< /Type /Page /MediaBox [0 0 10 10] >>"), limit: "MaxPages", alloc: 16 << 20},
		{name: "pdf page tree with Kids by reference", format: PDF, data: buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids 5 0 R >>",
			"<< /Type /Pages /Kids 6 0 R >>",
			"<< /Type /Page /MediaBox [0 0 10 10] >>",
			dagKids("3 0 R", 1000),
			dagKids("4 0 R", 1000)), limit: "MaxPages", alloc: 16 << 20},
		{name: "pdf page tree cycle", format: PDF, data: buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] >>",
			"<< /Type /Pages /Kids [2 0 R 4 0 R] >>",
			"<< /Type /Page /MediaBox [0 0 10 10] >>"), errText: "page tree has a cycle"},
		{name: "pdf object that refers to itself", format: PDF, data: buildPDF(onePage("hello", "5 0 R")...),
			check: func(t *testing.T, d *Doc) {
				if got := d.Text(); !strings.Contains(got, "hello") {
					t.Errorf("text %q", got)
				}
			}},
		{name: "pdf xref whose Prev is itself", format: PDF, data: prevLoop(buildPDF(onePage("hello")...)), alloc: 16 << 20,
			check: func(t *testing.T, d *Doc) {
				if got := d.Text(); !strings.Contains(got, "hello") {
					t.Errorf("text %q", got)
				}
			}},
		{name: "pdf xref section starting at object 2000000000", format: PDF, alloc: 16 << 20,
			data: bytes.Replace(buildPDF(onePage("hello")...), []byte("xref\n0 5"), []byte("xref\n2000000000 5"), 1)},
		{name: "pdf contents that refer to themselves", format: PDF, data: buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] >>",
			"<< /Type /Page /MediaBox [0 0 10 10] /Contents 4 0 R >>",
			"4 0 R"),
			check: func(t *testing.T, d *Doc) {
				if d.Pages != 1 || d.Text() != "" {
					t.Errorf("pages %d, text %q", d.Pages, d.Text())
				}
			}},
		{name: "pdf stream length that refers to itself", format: PDF, data: buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] >>",
			"<< /Type /Page /MediaBox [0 0 10 10] /Contents 4 0 R >>",
			"<< /Length 4 0 R >>\nstream\nBT (x) Tj ET\nendstream")},
		{name: "pdf contents listing one stream 10000 times", format: PDF, data: buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] >>",
			"<< /Type /Page /MediaBox [0 0 10 10] /Contents "+dagKids("4 0 R", 10_000)+" >>",
			inflated), defect: "MaxPageContentBytes", alloc: 16 << 20},
		{name: "pdf page drawing one string 645277 times", format: PDF, data: buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] >>",
			"<< /Type /Page /MediaBox [0 0 10 10] /Contents 4 0 R >>",
			stream(bytes.Repeat([]byte("BT (x) Tj ET\n"), 645_277))), defect: "p. 1: page content of 8388601 bytes over the MaxPageContentBytes limit", alloc: 64 << 20},
		{name: "pdf small page drawing an 8 MiB form", format: PDF, data: buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] >>",
			"<< /Type /Page /MediaBox [0 0 10 10] /Contents 4 0 R /Resources << /XObject << /F0 5 0 R /F1 5 0 R >> >> >>",
			"<< /Length 13 >>\nstream\n/F0 Do /F1 Do\nendstream",
			strings.Replace(stream(bytes.Repeat([]byte("BT (x) Tj ET\n"), 645_277)), "<< ", "<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] ", 1)),
			defect: "MaxPageContentBytes", alloc: 64 << 20},
		{name: "pdf pages sharing content past the document's budget", format: PDF, lim: &Limits{MaxDecompressedBytes: 256 << 10},
			data: buildPDF(
				"<< /Type /Catalog /Pages 2 0 R >>",
				"<< /Type /Pages /Kids ["+strings.Repeat("3 0 R ", 20)+"] >>",
				"<< /Type /Page /MediaBox [0 0 10 10] /Contents 4 0 R >>",
				stream(bytes.Repeat([]byte("BT (x) Tj ET\n"), 4000))), // 52,000 bytes
			defect: "pages 6 to 20 not read: their content goes over the MaxDecompressedBytes limit",
			check: func(t *testing.T, d *Doc) {
				if !d.Truncated {
					t.Error("not marked truncated")
				}
			}},
		{name: "pdf stream inflating past the stream limit", format: PDF, data: buildPDF(
			"<< /Type /Catalog /Pages 2 0 R >>",
			"<< /Type /Pages /Kids [3 0 R] >>",
			"<< /Type /Page /MediaBox [0 0 10 10] /Contents 4 0 R >>",
			inflated), lim: &Limits{MaxStreamBytes: 1 << 20}, defect: "p. 1: PDF stream decompressing to more bytes over the MaxStreamBytes limit"},
		{name: "pdf nested a million arrays deep", format: PDF, data: buildPDF(onePage("hello", big(1_000_000, "["))...),
			check: func(t *testing.T, d *Doc) {
				if got := d.Text(); !strings.Contains(got, "hello") {
					t.Errorf("text %q", got)
				}
			}},
		{name: "pdf truncated", format: PDF, data: MustRead(t, "testdata/fixtures/handbook.pdf")[:20_000]},
		{name: "pdf over the page limit", format: PDF, data: MustRead(t, "testdata/fixtures/handbook.pdf"), lim: &Limits{MaxPages: 2}, limit: "MaxPages"},
		{name: "pdf not a pdf", format: PDF, data: []byte("hello, world"), errText: "not a PDF"},
		{name: "pdf encrypted with a password", format: PDF, data: MustRead(t, "testdata/hostile/encrypted-password.pdf"), err: ErrEncrypted},
		{name: "pdf encrypted without a user password", format: PDF, data: MustRead(t, "testdata/hostile/encrypted-empty-password.pdf"),
			check: func(t *testing.T, d *Doc) {
				if got := d.Text(); !strings.Contains(got, "Release Notes 4.2") {
					t.Errorf("text %q", got)
				}
			}},
		{name: "pdf encrypted with a password, RC4", format: PDF, data: MustRead(t, "testdata/hostile/encrypted-rc4.pdf"), err: ErrEncrypted},

		{name: "input over the size limit", format: PDF, data: MustRead(t, "testdata/fixtures/handbook.pdf"), lim: &Limits{MaxInputBytes: 1000}, limit: "MaxInputBytes"},
		{name: "negative limit", format: DOCX, data: MustRead(t, "testdata/fixtures/handbook.docx"), lim: &Limits{MaxXMLDepth: -1}, errText: "MaxXMLDepth is negative"},
		{name: "unknown format", format: Unknown, data: []byte("x"), err: ErrUnknownFormat},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			d, err := extractBytes(context.Background(), tt.format, tt.data, tt.lim)
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes in, %v, %d KiB allocated, err: %v", len(tt.data), time.Since(start).Round(time.Millisecond), alloc>>10, err)
			if tt.alloc > 0 && alloc > tt.alloc {
				t.Errorf("allocated %d KiB, want at most %d KiB", alloc>>10, tt.alloc>>10)
			}
			switch {
			case tt.limit != "":
				var le *LimitError
				if !errors.As(err, &le) || le.Limit != tt.limit {
					t.Fatalf("err = %v, want the %s limit", err, tt.limit)
				}
				if got := ingestd.ErrorCode(err); got != ingestd.ETOOLARGE {
					t.Errorf("code %q, want %q", got, ingestd.ETOOLARGE)
				}
				if !strings.Contains(err.Error(), tt.limit) {
					t.Errorf("error %q does not name the limit", err)
				}
			case tt.err != nil:
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errText)
				}
				if got := ingestd.ErrorCode(err); got != ingestd.EINVALID {
					t.Errorf("code %q, want %q", got, ingestd.EINVALID)
				}
			case err != nil:
				// No expectation but "no panic, no hang": an EINVALID
				// error is a fine end for a broken file.
				if got := ingestd.ErrorCode(err); got != ingestd.EINVALID && got != ingestd.ETOOLARGE {
					t.Fatalf("err = %v (code %q), want EINVALID or a document", err, got)
				}
				if tt.check != nil || tt.defect != "" {
					t.Fatalf("err = %v, want a document", err)
				}
			}
			if err != nil {
				if d != nil {
					t.Error("a document came back with the error")
				}
				return
			}
			if !utf8.ValidString(d.Text()) {
				t.Error("text is not valid UTF-8")
			}
			if tt.defect != "" && !strings.Contains(strings.Join(d.Defects, "\n"), tt.defect) {
				t.Errorf("defects %q, want one containing %q", d.Defects, tt.defect)
			}
			if tt.check != nil {
				tt.check(t, d)
			}
		})
	}
}

// TestMaxTextBytes: the text stops at the limit, on a character boundary,
// and the document says it was cut.
func TestMaxTextBytes(t *testing.T) {
	for _, path := range MustFixtures(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			const limit = 500
			d := MustExtract(t, path, MustRead(t, path), &Limits{MaxTextBytes: limit})
			total := 0
			for _, s := range d.Sections {
				total += len(s.Text)
				if !utf8.ValidString(s.Text) {
					t.Errorf("section %q is not valid UTF-8", s.Locator)
				}
			}
			if total > limit {
				t.Errorf("%d bytes of text, limit %d", total, limit)
			}
			if !d.Truncated || !strings.Contains(strings.Join(d.Defects, "\n"), "MaxTextBytes") {
				t.Errorf("truncated %v, defects %q", d.Truncated, d.Defects)
			}
		})
	}
}

// TestContextEnded: an ended context stops every format at once.
func TestContextEnded(t *testing.T) {
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for _, path := range MustFixtures(t) {
		data := MustRead(t, path)
		_, err := extractBytes(ctx, Detect(path, "", data), data, nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: err = %v, want the deadline", path, err)
		}
	}
}

// TestParserPanicIsAnError: a panic inside the PDF parser comes back as an
// EINVALID error, not a crash.
func TestParserPanicIsAnError(t *testing.T) {
	data := MustRead(t, "testdata/fixtures/handbook.pdf")
	boom := func(context.Context, io.ReaderAt, int64, *Limits, *builder) error { panic("boom") }
	_, err := extract(context.Background(), bytes.NewReader(data), int64(len(data)), PDF, nil, boom, false)
	if err == nil || !strings.Contains(err.Error(), "parser panicked: boom") || ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Fatalf("err = %v", err)
	}
}

// buildObjStmPDF writes a PDF (1.5) whose objects numbered in packed are
// stored in one object stream, encoded by the filter (flate, a85flate or
// lzw: an LZW stream the census cannot read), with a cross-reference
// stream. objs[i] is object i+1; the object stream and the
// cross-reference stream come after them.
func buildObjStmPDF(objs []string, packed map[int]bool, filter string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.5\n")
	n := len(objs)
	stmNum, xrefNum := n+1, n+2
	type entry struct{ typ, f2, f3 int }
	entries := make([]entry, xrefNum+1)
	entries[0] = entry{0, 0, 65535}
	var header, body bytes.Buffer
	idx := 0
	for i, o := range objs {
		num := i + 1
		if packed[num] {
			fmt.Fprintf(&header, "%d %d ", num, body.Len())
			body.WriteString(o + "\n")
			entries[num] = entry{2, stmNum, idx}
			idx++
			continue
		}
		entries[num] = entry{1, b.Len(), 0}
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", num, o)
	}
	raw := append(bytes.Clone(header.Bytes()), body.Bytes()...)
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(raw)
	w.Close()
	data, filt := z.Bytes(), "/FlateDecode"
	switch filter {
	case "a85flate":
		var a bytes.Buffer
		e := ascii85.NewEncoder(&a)
		e.Write(z.Bytes())
		e.Close()
		a.WriteString("~>")
		data, filt = a.Bytes(), "[/ASCII85Decode /FlateDecode]"
	case "lzw":
		filt = "/LZWDecode"
	}
	entries[stmNum] = entry{1, b.Len(), 0}
	fmt.Fprintf(&b, "%d 0 obj\n<< /Type /ObjStm /N %d /First %d /Length %d /Filter %s >>\nstream\n%s\nendstream\nendobj\n",
		stmNum, idx, header.Len(), len(data), filt, data)
	entries[xrefNum] = entry{1, b.Len(), 0}
	var x bytes.Buffer
	for _, e := range entries {
		x.WriteByte(byte(e.typ))
		x.Write([]byte{byte(e.f2 >> 24), byte(e.f2 >> 16), byte(e.f2 >> 8), byte(e.f2)})
		x.Write([]byte{byte(e.f3 >> 8), byte(e.f3)})
	}
	xoff := b.Len()
	fmt.Fprintf(&b, "%d 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n%s\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n",
		xrefNum, xrefNum+1, x.Len(), x.Bytes(), xoff)
	return b.Bytes()
}

// TestPageTreeInObjectStream: the census reads page-tree nodes stored in
// object streams, and refuses a file whose object streams it cannot read
// rather than let the parser walk a tree it has not counted.
func TestPageTreeInObjectStream(t *testing.T) {
	kids := func(ref string) string { return "[" + strings.Repeat(ref+" ", 1000) + "]" }
	dag := []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids " + kids("3 0 R") + " >>",
		"<< /Type /Pages /Kids " + kids("4 0 R") + " >>",
		"<< /Type /Page /MediaBox [0 0 10 10] >>",
	}
	small := onePage("packed")
	packed := map[int]bool{2: true, 3: true}
	tests := []struct {
		name  string
		data  []byte
		limit string
		err   string
		text  string
	}{
		{"readable and small", buildObjStmPDF(small, map[int]bool{2: true}, "flate"), "", "", "packed"},
		{"flate", buildObjStmPDF(dag, packed, "flate"), "MaxPages", "", ""},
		{"ascii85 then flate", buildObjStmPDF(dag, packed, "a85flate"), "MaxPages", "", ""},
		{"a filter the census does not read", buildObjStmPDF(small, map[int]bool{2: true}, "lzw"), "", "object stream 5", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			d, err := extractBytes(context.Background(), PDF, tt.data, nil)
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("allocated %d KiB", alloc>>10)
			}
			switch {
			case tt.limit != "":
				if !IsLimit(err, tt.limit) {
					t.Fatalf("err = %v, want the %s limit", err, tt.limit)
				}
			case tt.err != "":
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
			default:
				if err != nil {
					t.Fatal(err)
				}
				if got := d.Text(); !strings.Contains(got, tt.text) {
					t.Errorf("text %q", got)
				}
			}
		})
	}
}

// TestContextEndsWhileCounting: a context that ends while the census
// counts a large PDF's objects stops it there, before the parser runs.
func TestContextEndsWhileCounting(t *testing.T) {
	objs := onePage("hello")
	for range 200_000 {
		objs = append(objs, "0")
	}
	data := buildPDF(objs...)
	ctx, cancel := context.WithCancel(context.Background())
	c := &census{objects: map[int]struct{}{}, nodes: map[int][]int{}, arrays: map[int][]int{},
		kidsRef: map[int]int{}, encDicts: map[int]*core.PdfDictionary{}, nextNeg: -1, lim: &Limits{MaxObjects: 1 << 30}, ctx: ctx}
	cancel()
	if err := c.scan(data); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := len(c.objects); n > ctxEvery {
		t.Errorf("counted %d objects after the context ended, want at most %d", n, ctxEvery)
	}
}
