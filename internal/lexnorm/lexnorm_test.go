package lexnorm

import "testing"

func TestTerm(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plural", "refunds", "refund"},
		{"past tense", "refunded", "refund"},
		{"gerund", "Rotating", "rotat"},
		{"porter stem", "generalizations", "gener"},
		{"number word", "thirty", "30"},
		{"number word, any case", "Fourteen", "14"},
		{"ordinal", "fifth", "5th"},
		{"plural number word is a word", "tens", "ten"},
		{"second is also time", "second", "second"},
		{"synonym", "buy", "purchas"},
		{"synonym, inflected", "buying", "purchas"},
		{"synonym head", "purchases", "purchas"},
		{"synonym of another group", "email", "mail"},
		{"synonym with digits", "2FA", "mfa"},
		{"other digits copied", "04471", "04471"},
		{"non-ASCII copied", "Größe", "größe"},
		{"short word copied", "on", "on"},
		{"unrelated", "invoice", "invoic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Term(tt.in); got != tt.want {
				t.Errorf("Term(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// AppendTerm appends: what dst held stays.
func TestAppendTermKeepsPrefix(t *testing.T) {
	for _, w := range []string{"thirty", "buy", "refunds", "x"} {
		got := string(AppendTerm([]byte("pre "), w))
		if want := "pre " + Term(w); got != want {
			t.Errorf("AppendTerm(%q, %q) = %q, want %q", "pre ", w, got, want)
		}
	}
}

// Every word of a group becomes its head's stem, and no head is itself
// folded into another group (folding is one step, not a chain).
func TestSynonymGroups(t *testing.T) {
	for stem, head := range synonyms {
		if _, chained := synonyms[head]; chained {
			t.Errorf("%q folds to %q, which folds again", stem, head)
		}
	}
	if len(synonyms) == 0 {
		t.Fatal("no synonyms")
	}
}

// Groups lists every number word once, and each group's words are one
// term.
func TestGroups(t *testing.T) {
	seen := map[string]bool{}
	for _, g := range Groups() {
		if len(g) < 2 {
			t.Errorf("group %v: fewer than two words", g)
			continue
		}
		for _, w := range g {
			if Term(w) != Term(g[0]) {
				t.Errorf("group %v: %q is %q, %q is %q", g, w, Term(w), g[0], Term(g[0]))
			}
		}
		if _, isNumber := numbers[g[0]]; isNumber {
			if seen[g[0]] {
				t.Errorf("%q listed twice", g[0])
			}
			seen[g[0]] = true
		}
	}
	if len(seen) != len(numbers) {
		t.Errorf("Groups lists %d number words, the table has %d", len(seen), len(numbers))
	}
}

func BenchmarkAppendTerm(b *testing.B) {
	words := []string{"the", "refunds", "Rotating", "thirty", "buying", "KS-2024-04471", "certificate", "Größe"}
	var buf []byte
	for i := 0; b.Loop(); i++ {
		buf = AppendTerm(buf[:0], words[i%len(words)])
	}
}

func BenchmarkAppendStem(b *testing.B) {
	words := []string{"the", "refunds", "Rotating", "thirty", "buying", "KS-2024-04471", "certificate", "Größe"}
	var buf []byte
	for i := 0; b.Loop(); i++ {
		buf = AppendStem(buf[:0], words[i%len(words)])
	}
}
