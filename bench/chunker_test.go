// Package bench compares package chunker with langchaingo's text splitters
// over the same real text at the same budget. It is a separate module so
// that langchaingo and its dependencies never enter ingestd's build.
package bench

import (
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/chunker"
	"github.com/tmc/langchaingo/textsplitter"
)

// The budget. ingestd counts tokens (chunker.CountTokens); langchaingo
// counts characters (utf8.RuneCountInString, its default LenFunc). English
// prose and markdown run at about 4 characters per token, so 400 tokens
// with 60 overlap map to 1600 characters with 240 overlap.
const (
	maxTokens     = 400
	overlapTokens = 60
	chunkChars    = 4 * maxTokens
	overlapChars  = 4 * overlapTokens
)

// splitter is one way to split a document.
type splitter func(text, format string) int

func ingestdSplitter() splitter {
	opts := &chunker.Options{MaxTokens: maxTokens, OverlapTokens: overlapTokens}
	return func(text, format string) int {
		return len(chunker.Split(text, format, opts))
	}
}

func langchainSplitter(tb testing.TB, s textsplitter.TextSplitter) splitter {
	return func(text, _ string) int {
		chunks, err := s.SplitText(text)
		if err != nil {
			tb.Fatal(err)
		}
		return len(chunks)
	}
}

// splitterText is a langchaingo splitter returning its chunks' text.
type splitterText func(text string) []string

func langchainText(tb testing.TB, s textsplitter.TextSplitter) splitterText {
	return func(text string) []string {
		chunks, err := s.SplitText(text)
		if err != nil {
			tb.Fatal(err)
		}
		return chunks
	}
}

func langchainMarkdownText(tb testing.TB) splitterText {
	return langchainText(tb, textsplitter.NewMarkdownTextSplitter(
		textsplitter.WithChunkSize(chunkChars), textsplitter.WithChunkOverlap(overlapChars)))
}

func langchainRecursiveText(tb testing.TB) splitterText {
	return langchainText(tb, textsplitter.NewRecursiveCharacter(
		textsplitter.WithChunkSize(chunkChars), textsplitter.WithChunkOverlap(overlapChars)))
}

func langchainMarkdown(tb testing.TB) splitter {
	return langchainSplitter(tb, textsplitter.NewMarkdownTextSplitter(
		textsplitter.WithChunkSize(chunkChars), textsplitter.WithChunkOverlap(overlapChars)))
}

func langchainRecursive(tb testing.TB) splitter {
	return langchainSplitter(tb, textsplitter.NewRecursiveCharacter(
		textsplitter.WithChunkSize(chunkChars), textsplitter.WithChunkOverlap(overlapChars)))
}

// benchSplit runs split over the markdown and the plain corpus.
func benchSplit(b *testing.B, split splitter) {
	c := MustCorpus(b)
	for _, set := range []struct {
		name   string
		format string
		docs   []doc
	}{
		{"markdown", ingestd.FormatMarkdown, c.markdown},
		{"plain", ingestd.FormatPlain, c.plain},
	} {
		b.Run(set.name, func(b *testing.B) {
			b.SetBytes(c.bytes(set.docs))
			b.ReportAllocs()
			chunks := 0
			loop(b, func() {
				chunks = 0
				for _, d := range set.docs {
					chunks += split(d.text, set.format)
				}
			})
			b.ReportMetric(float64(chunks), "chunks")
		})
	}
}

func BenchmarkChunkerIngestd(b *testing.B)           { benchSplit(b, ingestdSplitter()) }
func BenchmarkChunkerLangchainMarkdown(b *testing.B) { benchSplit(b, langchainMarkdown(b)) }
func BenchmarkChunkerLangchainRecursive(b *testing.B) {
	benchSplit(b, langchainRecursive(b))
}

// BenchmarkCountTokens is the approximate tokenizer alone, the chunker's
// inner loop.
func BenchmarkCountTokens(b *testing.B) {
	c := MustCorpus(b)
	for _, set := range []struct {
		name string
		docs []doc
	}{{"markdown", c.markdown}, {"plain", c.plain}} {
		b.Run(set.name, func(b *testing.B) {
			b.SetBytes(c.bytes(set.docs))
			loop(b, func() {
				for _, d := range set.docs {
					chunker.CountTokens(d.text)
				}
			})
		})
	}
}

// loop runs f b.N times and reports, beside the wall time, the process's
// CPU time per op (cpu-ns/op), which the neighbours on a shared machine do
// not inflate.
func loop(b *testing.B, f func()) {
	n := 0
	cpu := cpuTime()
	for b.Loop() {
		f()
		n++
	}
	if cpu := cpuTime() - cpu; cpu > 0 && n > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
	}
}
