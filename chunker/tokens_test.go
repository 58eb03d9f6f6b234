package chunker_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ingestd/ingestd/chunker"
)

func TestCountTokens(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   string
		want int
	}{
		{name: "empty", in: "", want: 0},
		{name: "one space is free", in: " ", want: 0},
		{name: "a whitespace run is one token", in: " \t\n\r\u00a0\u3000", want: 1},
		{name: "space between words", in: "a b", want: 2},
		{name: "two spaces between words", in: "a  b", want: 3},
		{name: "newline between words", in: "a\nb", want: 3},
		{name: "table padding", in: "|   10 |", want: 4},
		{name: "short words", in: "the cat sat", want: 3},
		{name: "five letters is one token", in: "words", want: 1},
		{name: "six letters is two", in: "letter", want: 2},
		{name: "long word per 5 letters", in: "internationalization", want: 4},
		{name: "digits per 3", in: "1234567", want: 3},
		{name: "letters then digits", in: "TLS13", want: 2},
		{name: "punctuation run", in: "...", want: 1},
		{name: "long punctuation run per 4", in: "----------", want: 3},
		{name: "word and punctuation", in: "Hello, world!", want: 4},
		{name: "snake case is one word", in: "max_tokens", want: 2},
		{name: "number with decimal point", in: "3.14", want: 3},
		{name: "code", in: "if err != nil {", want: 5},
		{name: "accented letters", in: "café", want: 1},
		{name: "combining mark joins its letter", in: "cafe\u0301", want: 1},
		{name: "lone combining mark", in: "\u0301", want: 1},
		{name: "cyrillic", in: "привет мир", want: 3},
		{name: "CJK one per rune", in: "検索ストア", want: 5},
		{name: "CJK punctuation", in: "はい。", want: 3},
		{name: "hangul", in: "한국어", want: 3},
		{name: "emoji", in: "🚀", want: 1},
		{name: "emoji with skin tone", in: "👍🏽", want: 1},
		{name: "ZWJ sequence", in: "👩‍💻", want: 2},
		{name: "flag is two regional indicators", in: "🇩🇪", want: 2},
		{name: "full-width letters", in: "ＡＢ", want: 2},
		{name: "invalid UTF-8 counts per byte", in: "\xff\xfe", want: 2},
		{name: "mixed", in: "Go 1.26 は速い 🚀", want: 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := chunker.CountTokens(tt.in); got != tt.want {
				t.Errorf("CountTokens(%q) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestCountTokensProse(t *testing.T) {
	// English prose should come out near one token per 4 bytes (what a
	// cl100k tokenizer gives), a little high rather than low.
	text := strings.Repeat("Retrieval answers every query with three blocks and a verdict, computed on the server. ", 20)
	got := chunker.CountTokens(text)
	if perToken := float64(len(text)) / float64(got); perToken < 3 || perToken > 5 {
		t.Errorf("%d bytes -> %d tokens (%.2f bytes/token), want 3..5", len(text), got, perToken)
	}
}

func TestCountTokensAllocs(t *testing.T) {
	text := "Go 1.26 は速い 🚀 café " + strings.Repeat("word ", 100)
	if n := testing.AllocsPerRun(10, func() { chunker.CountTokens(text) }); n != 0 {
		t.Errorf("CountTokens allocates %v times per call", n)
	}
}

// FuzzCountTokens checks CountTokens' bounds and how counts of the two
// sides of a split add up. Seeds: the golden inputs, split in the middle,
// and a few edge cases.
func FuzzCountTokens(f *testing.F) {
	for _, c := range MustGoldenCases(f) {
		f.Add(c.input, uint16(len(c.input)/2))
	}
	for _, s := range []string{"", "hello world", "a.b,c", "e\u0301x", "検索 ストア", "👩‍💻 ok", "\xff\xfe abc"} {
		f.Add(s, uint16(3))
	}
	f.Fuzz(func(t *testing.T, s string, at uint16) {
		whole := chunker.CountTokens(s)
		if whole < 0 || whole > utf8.RuneCountInString(s) {
			t.Fatalf("CountTokens(%q) = %d, outside 0..runes", s, whole)
		}
		// Split at a rune boundary: subadditive between non-spaces,
		// additive between a space and a non-space.
		i := 0
		for k := 0; k < int(at)%(len(s)+1) && i < len(s); k++ {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
		}
		a, b := chunker.CountTokens(s[:i]), chunker.CountTokens(s[i:])
		if i == 0 || i == len(s) {
			return
		}
		r1, _ := utf8.DecodeLastRuneInString(s[:i])
		r2, _ := utf8.DecodeRuneInString(s[i:])
		switch sp1, sp2 := isSpace(r1), isSpace(r2); {
		case !sp1 && !sp2 && a+b < whole:
			t.Fatalf("split %q|%q: %d+%d < %d", s[:i], s[i:], a, b, whole)
		case sp1 != sp2 && a+b != whole:
			t.Fatalf("split next to space %q|%q: %d+%d != %d", s[:i], s[i:], a, b, whole)
		}
	})
}

func isSpace(r rune) bool { return r != utf8.RuneError && strings.TrimSpace(string(r)) == "" }
