package chunker_test

import (
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/chunker"
)

var fuzzFormats = []string{ingestd.FormatPlain, ingestd.FormatMarkdown, ingestd.FormatMail, ingestd.FormatHTML, ""}

// FuzzSplit checks the invariants of checkChunks on any text, format and
// budget: no panic, no empty or untrimmed chunk, every chunk within
// MaxTokens (strictly: words longer than the budget are cut, so no slack
// is needed), every non-space character covered in order, overlap only
// inside a section, and the same chunks on a second run.
func FuzzSplit(f *testing.F) {
	for _, c := range MustGoldenCases(f) {
		f.Add(c.input, formatIndex(c.format), uint16(40), int16(0))
	}
	for _, s := range []string{
		"", "x", "# a\n## b\n### c", "```\nunclosed", "> q\nOn x wrote:\n> y\nnew",
		"a. b. c. d. e. f. g.", "👩‍💻👩‍💻👩‍💻👩‍💻", "e\u0301e\u0301e\u0301e\u0301e\u0301",
		"- a\n\n  b\n- c\n\nd", "Title\n===\n\ntext", "\xff\xfe\xfd", "日本。東京。大阪。",
	} {
		f.Add(s, uint8(1), uint16(2), int16(1))
	}
	f.Fuzz(func(t *testing.T, text string, format uint8, maxTok uint16, overlap int16) {
		fm := fuzzFormats[int(format)%len(fuzzFormats)]
		opts := &chunker.Options{MaxTokens: int(maxTok % 600), OverlapTokens: int(overlap)}
		checkChunks(t, text, fm, opts, chunker.Split(text, fm, opts))
	})
}

func formatIndex(format string) uint8 {
	for i, f := range fuzzFormats {
		if f == format {
			return uint8(i)
		}
	}
	return 0
}
