package mail_test

import (
	"bytes"
	"testing"

	"github.com/ingestd/ingestd/connectors/internal/mail"
)

// BenchmarkParse parses every message of the shared corpus once per op.
func BenchmarkParse(b *testing.B) {
	var msgs [][]byte
	size := 0
	for _, f := range MustCorpus(b) {
		raw := MustRead(b, f)
		msgs = append(msgs, raw)
		size += len(raw)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, raw := range msgs {
			mail.Parse(raw, nil)
		}
	}
}

// BenchmarkHTMLToText converts one larger HTML body per op.
func BenchmarkHTMLToText(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteString("<html><head><title>t</title><style>x{}</style></head><body>")
	for i := 0; i < 500; i++ {
		buf.WriteString(`<div><h2>Section</h2><p>Some <a href="#">linked</a> text &amp; more.</p><ul><li>a</li><li>b</li></ul></div>`)
	}
	buf.WriteString("</body></html>")
	html := buf.Bytes()
	b.SetBytes(int64(len(html)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := mail.HTMLToText(bytes.NewReader(html)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFingerprint fingerprints every message of the shared corpus
// once per op; compare with BenchmarkParse, which a sync runs on the same
// bytes.
func BenchmarkFingerprint(b *testing.B) {
	var msgs [][]byte
	size := 0
	for _, f := range MustCorpus(b) {
		raw := MustRead(b, f)
		msgs = append(msgs, raw)
		size += len(raw)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, raw := range msgs {
			mail.Fingerprint(raw)
		}
	}
}
