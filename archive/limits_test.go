package archive_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/archive"
)

const manifestLine = `{"manifest":{"format":"ingestd-archive","version":1,"counts":{"embedders":{}}}}` + "\n"

// compress returns what write writes, compressed as comp says.
func compress(tb testing.TB, comp string, write func(w io.Writer)) []byte {
	tb.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch comp {
	case archive.Gzip:
		w = gzip.NewWriter(&buf)
	case archive.Zstd:
		z, err := zstd.NewWriter(&buf)
		if err != nil {
			tb.Fatal(err)
		}
		w = z
	}
	write(w)
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// hugeLine writes the manifest and one document record holding a string
// of n bytes: a few hundred KiB compressed.
func hugeLine(n int) func(w io.Writer) {
	return func(w io.Writer) {
		io.WriteString(w, manifestLine)
		io.WriteString(w, `{"document":{"id":"d","installation":"i","external_id":"e","source_kind":"files","content_hash":"h","status":"active","title":"`)
		block := bytes.Repeat([]byte("A"), 1<<20)
		for n > 0 {
			k := min(n, len(block))
			w.Write(block[:k])
			n -= k
		}
		io.WriteString(w, "\"}}\n")
	}
}

// manyObjects writes the manifest and one document record of n empty
// chunks: small in bytes, many Go values decoded.
func manyObjects(n int) func(w io.Writer) {
	return func(w io.Writer) {
		io.WriteString(w, manifestLine)
		io.WriteString(w, `{"document":{"id":"d","installation":"i","external_id":"e","source_kind":"files","content_hash":"h","status":"active","chunks":[{}`)
		io.WriteString(w, strings.Repeat(",{}", n-1))
		io.WriteString(w, "]}}\n")
	}
}

// manyRecords writes the manifest and n small cursor records.
func manyRecords(n int) func(w io.Writer) {
	return func(w io.Writer) {
		io.WriteString(w, manifestLine)
		rec := `{"cursor":{"installation":"i","key":"k","value":"` + strings.Repeat("v", 900) + `"}}` + "\n"
		for range n {
			io.WriteString(w, rec)
		}
	}
}

// readCounting reads the archive until it ends or is refused and returns
// the bytes allocated meanwhile (an upper bound of how far the heap grew),
// how far the live heap grew at most, sampled after each record with that
// record still held, and the error.
func readCounting(tb testing.TB, b []byte) (alloc, peak uint64, err error) {
	tb.Helper()
	runtime.GC()
	var before, now runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := archive.NewReader(bytes.NewReader(b))
	for n := 0; err == nil; n++ {
		var rec ingestd.ArchiveRecord
		rec, err = r.Next()
		if n%1024 == 0 || err != nil {
			runtime.ReadMemStats(&now)
			peak = max(peak, now.HeapAlloc-min(now.HeapAlloc, before.HeapAlloc))
		}
		runtime.KeepAlive(rec)
	}
	if r != nil {
		r.Close()
	}
	runtime.ReadMemStats(&now)
	return now.TotalAlloc - before.TotalAlloc, peak, err
}

// TestReaderBounds: an archive that decompresses to a record, a stream or
// a number of values beyond the reader's limits is refused while it is
// read, naming the limit and the line, and the heap grows by less than
// 100 MB meanwhile, whatever the record would have decoded to — the 383
// KiB gzip archive of one 384 MiB line that drove import to 1.3 GiB among
// them. A bomb of one record is held to all it allocated; one of many
// small records, which decodes 32 MiB of them before the ratio tells, to
// the live heap after each record.
func TestReaderBounds(t *testing.T) {
	if testing.Short() {
		t.Skip("decompresses 384 MiB; -short skips it")
	}
	const budget = 100 << 20
	for _, tt := range []struct {
		name  string
		write func(w io.Writer)
		comp  string
		want  []string
		many  bool // held to the live heap, not to all it allocated
	}{
		{"one 384 MiB line, gzip", hugeLine(384 << 20), archive.Gzip, []string{"line 2", "MaxRecordBytes", "32 MiB"}, false},
		{"one 384 MiB line, zstd", hugeLine(384 << 20), archive.Zstd, []string{"line 2", "MaxRecordBytes", "32 MiB"}, false},
		{"a line of a million objects", manyObjects(1 << 20), archive.Zstd, []string{"line 2", "MaxRecordObjects", "32768"}, false},
		{"a million small records", manyRecords(1 << 20), archive.Zstd, []string{"MaxRatio", "line"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := compress(t, tt.comp, tt.write)
			alloc, peak, err := readCounting(t, b)
			t.Logf("%d KiB archive read with %.1f MB allocated, the live heap %.1f MB above where it was at most: %v",
				len(b)>>10, float64(alloc)/1e6, float64(peak)/1e6, err)
			if tt.many {
				alloc = peak
			}
			if ingestd.ErrorCode(err) != ingestd.EINVALID {
				t.Fatalf("read a %d KiB archive: %v, want EINVALID", len(b)>>10, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not name %q", err, w)
				}
			}
			if alloc > budget {
				t.Fatalf("reading it grew the heap by up to %.0f MB, want less than %d MB", float64(alloc)/1e6, budget>>20)
			}
		})
	}
}

// TestReaderLimitsAreOptions: a record over a limit is refused, naming
// it, and reads under the default one.
func TestReaderLimitsAreOptions(t *testing.T) {
	b := compress(t, archive.Zstd, func(w io.Writer) {
		io.WriteString(w, manifestLine)
		fmt.Fprintf(w, `{"cursor":{"installation":"i","key":"k","value":"%s"}}`+"\n", strings.Repeat("v", 2<<20))
		io.WriteString(w, `{"end":{"counts":{"cursors":1,"embedders":{}}}}`+"\n")
	})
	small := archive.DefaultLimits
	small.MaxRecordBytes = 1 << 20
	r, err := archive.NewLimitedReader(bytes.NewReader(b), small)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("a 2 MiB record under a 1 MiB limit: %v", err)
	}
	r, err = archive.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := r.Next()
	if err != nil || rec.Cursor == nil || len(rec.Cursor.Value) != 2<<20 {
		t.Fatalf("the record under the default limit: %v", err)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last record: %v, want io.EOF", err)
	}
}

// TestWriterLargest: a Reader whose limits are the Writer's Largest reads
// the archive, and one byte or one object less refuses it.
func TestWriterLargest(t *testing.T) {
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Manifest{}, archive.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records() {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got := w.Largest()
	read := func(lim archive.Limits) error {
		r, err := archive.NewLimitedReader(bytes.NewReader(buf.Bytes()), lim)
		for err == nil {
			_, err = r.Next()
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	exact := archive.Limits{MaxRecordBytes: got.Bytes, MaxRecordObjects: got.Objects}
	if err := read(exact); err != nil {
		t.Fatalf("within Largest %+v: %v", got, err)
	}
	for _, lim := range []archive.Limits{{MaxRecordBytes: got.Bytes - 1, MaxRecordObjects: got.Objects}, {MaxRecordBytes: got.Bytes, MaxRecordObjects: got.Objects - 1}} {
		if err := read(lim); ingestd.ErrorCode(err) != ingestd.EINVALID {
			t.Fatalf("within %+v, below Largest %+v: %v, want EINVALID", lim, got, err)
		}
	}
}
