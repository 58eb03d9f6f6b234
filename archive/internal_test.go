package archive

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/ingestd/ingestd"
)

// benchArchive is an archive like `ingestd-bench archive` writes: 2000
// documents of four chunks of 200 words, their fenced text and
// 384-dimension vectors.
func benchArchive(b *testing.B, compression string) []byte {
	b.Helper()
	rnd := rand.New(rand.NewPCG(1, 2))
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Manifest{}, compression)
	if err != nil {
		b.Fatal(err)
	}
	for i := range 2000 {
		d := &ingestd.ArchivedDocument{Document: ingestd.Document{ID: fmt.Sprint("d", i), Installation: "bench", ExternalID: fmt.Sprint(i),
			SourceKind: "files", ContentHash: "h", Status: ingestd.StatusActive, Meta: map[string]string{"path": "x.md"}}}
		for k := range 4 {
			var sb strings.Builder
			for range 200 {
				sb.WriteString(fmt.Sprint("w", rnd.IntN(5000), " "))
			}
			v := make([]float32, 384)
			for j := range v {
				v[j] = rnd.Float32()
			}
			d.Chunks = append(d.Chunks, ingestd.Chunk{ID: fmt.Sprint("c", i, k), Ordinal: k, Text: sb.String(), Fenced: "<<<" + sb.String() + ">>>", Embedding: v, EmbedderID: "e"})
		}
		if err := w.Write(ingestd.ArchiveRecord{Document: d}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkReader reads the archive with Reader and, as the baseline in
// the same run, with what Reader did before it was bounded: one
// json.Decoder over the decompressed stream, no limit.
func BenchmarkReader(b *testing.B) {
	for _, comp := range []string{None, Zstd} {
		data := benchArchive(b, comp)
		b.Run(comp+"/unbounded", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				var src io.Reader = bytes.NewReader(data)
				if comp == Zstd {
					z, _ := zstd.NewReader(src, zstd.WithDecoderConcurrency(1))
					defer z.Close()
					src = z
				}
				dec := json.NewDecoder(bufio.NewReaderSize(src, 1<<20))
				for {
					var l line
					if err := dec.Decode(&l); err != nil {
						break
					}
					if l.Document != nil {
						decodeDocument(l.Document)
					}
				}
			}
		})
		b.Run(comp+"/reader", func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				r, err := NewReader(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := r.Next(); errors.Is(err, io.EOF) {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
				r.Close()
			}
		})
	}
}

// TestObjects: objects counts the objects outside strings, escaped
// quotes and backslashes included.
func TestObjects(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{`{}`, 1},
		{`{"a":{"b":"{"}}`, 2},
		{`{"a":"\"{","b":[{},{}]}`, 3},
		{`{"a":"\\","b":{}}`, 2},
		{`{"a":"\\\"{"}`, 1},
		{`{"a":"x`, 1},
	} {
		if got := objects([]byte(tt.in)); got != tt.want {
			t.Errorf("objects(%s) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
