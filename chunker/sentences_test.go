package chunker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// countSlow is CountTokens one rune at a time, without the fast loop.
func countSlow(s string) int {
	n, st := 0, uint8(stStart)
	for i := 0; i < len(s); {
		var e uint8
		if c := s[i]; c < utf8.RuneSelf {
			e = next[st][asciiClass[c]]
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			e = next[st][runeClass(r)]
		}
		n += int(e & 1)
		st = e >> 1
	}
	return n
}

// sentencesSlow is what the packer did before sentences: nextUnit at
// lvSentences, each sentence counted on its own.
func sentencesSlow(s string) []sentence {
	var out []sentence
	for pos := 0; pos < len(s); {
		a, b, next := nextUnit(s, lvSentences, pos, len(s))
		if a < b {
			out = append(out, sentence{a, b, CountTokens(s[a:b])})
		}
		pos = next
	}
	return out
}

// checkSentences fails t unless the one-pass scan of s agrees with
// sentencesSlow and CountTokens.
func checkSentences(t *testing.T, s string) {
	t.Helper()
	bs, be := trimSpan(s, 0, len(s))
	if bs >= be {
		return
	}
	s = s[:be] // the scan sees src up to the paragraph's end, as block gives it
	p := &packer{src: s}
	if got, want := p.sentences(bs, be), CountTokens(s[bs:be]); got != want {
		t.Errorf("sentences(%q) counts %d tokens, CountTokens %d", s[bs:be], got, want)
	}
	want := sentencesSlow(s[:be])
	if len(p.sents) != len(want) {
		t.Fatalf("sentences(%q) = %v, want %v", s[bs:be], p.sents, want)
	}
	for i, got := range p.sents {
		w := want[i]
		if got.a != w.a || got.b != w.b || got.tok >= 0 && got.tok != w.tok {
			t.Errorf("sentence %d of %q = %d:%d %d tokens, want %d:%d %d", i, s[bs:be], got.a, got.b, got.tok, w.a, w.b, w.tok)
		}
		if got.tok < 0 && (got.a == bs || isSpaceBefore(s, got.a)) {
			t.Errorf("sentence %d of %q follows whitespace but is not counted", i, s[bs:be])
		}
	}
}

func isSpaceBefore(s string, i int) bool {
	sp, _ := spaceBefore(s, i)
	return sp
}

func TestSentences(t *testing.T) {
	long := strings.Repeat("The light of the Sun consists of rays differently refrangible, e.g. red and violet. ", 20)
	for _, tt := range []struct {
		name string
		text string
	}{
		{name: "empty", text: "  "},
		{name: "one sentence", text: "One two three."},
		{name: "three sentences", text: "One two three. Four five six! Seven eight nine?"},
		{name: "abbreviations", text: "Use e.g. Go 1.26 here. Dr. Who met Mr. X. Next one."},
		{name: "lowercase after a stop", text: "It is 3 p.m. and late. ok? yes."},
		{name: "closers", text: "He said \"stop.\" Then (he left.) And _so._ on."},
		{name: "terminator runs", text: "What?! Really... Yes."},
		{name: "no terminator", text: "a line without an end\nand another"},
		{name: "CJK without spaces", text: "日本。東京。大阪。"},
		{name: "CJK closer then punctuation", text: "日本。」,x「東京？”!y"},
		{name: "mark after a CJK stop", text: "日本。\u0301x"},
		{name: "full-width stops", text: "ＡＢ！ＣＤ？ＥＦ｡ＧＨ"},
		{name: "non-ASCII space", text: "One.\u00a0Two.\u3000Three."},
		{name: "invalid UTF-8", text: "a.\xff b.\xe3 c\xe3\x80\x82d"},
		{name: "long prose", text: long},
		{name: "terminator at each offset", text: "ab.Cd. Ef gh. Ijk. Lmnop. Qrstuv. Wxyzabc. D."},
	} {
		t.Run(tt.name, func(t *testing.T) { checkSentences(t, tt.text) })
	}
}

// FuzzSentences checks the one-pass token count and sentence cut against
// the slow ones on any text. Seeds: the golden inputs and a few edge cases.
func FuzzSentences(f *testing.F) {
	for _, s := range append(goldenInputs(f), "One two three. Four five six.", "日本。東京。", "a.\u0301 b! c? 「x。」y", "e.g. Dr. Who. A. B. c.") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := CountTokens(s), countSlow(s); got != want {
			t.Fatalf("CountTokens(%q) = %d, one rune at a time %d", s, got, want)
		}
		for _, limit := range []int{0, 1, 5, 17} {
			if got, want := countTokens(s, limit), countSlow(s); got <= limit && got != want || got > limit && want <= limit {
				t.Fatalf("countTokens(%q, %d) = %d, want %d", s, limit, got, want)
			}
		}
		checkSentences(t, s)
	})
}

// goldenInputs returns the input of every golden case under testdata.
func goldenInputs(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*", "input.*"))
	if err != nil || len(files) == 0 {
		tb.Fatalf("no golden inputs under testdata: %v", err)
	}
	var out []string
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}
