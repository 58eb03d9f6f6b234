package chunker_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/chunker"
)

// pages cuts text at form feeds into sections "p. 1", "p. 2", ... that
// share text's memory, as a PDF's pages would come.
func pages(text string) []ingestd.Section {
	var out []ingestd.Section
	for i, p := range strings.Split(text, "\f") {
		out = append(out, ingestd.Section{Locator: fmt.Sprintf("p. %d", i+1), Text: p})
	}
	return out
}

// checkSections asserts what holds for every SplitSections result: each
// chunk is a non-empty, trimmed slice of one section's text within budget
// and carries that section's locator; chunks come in section order and in
// order within a section; every non-space character of every section is
// in a chunk of it; and a section cut on its own gives the same texts.
func checkSections(tb testing.TB, secs []ingestd.Section, format string, opts *chunker.Options, chunks []chunker.Chunk) {
	tb.Helper()
	maxTok := chunker.DefaultMaxTokens
	if opts != nil && opts.MaxTokens > 0 {
		maxTok = opts.MaxTokens
	}
	i := 0
	for si, s := range secs {
		covered := 0
		var own []string
		for ; i < len(chunks); i++ {
			c := chunks[i]
			start := offsetOf(s.Text, c.Text)
			if start < 0 {
				break // the next section's
			}
			if c.Text == "" || strings.TrimSpace(c.Text) != c.Text || c.Tokens > maxTok {
				tb.Fatalf("section %d chunk %q: empty, untrimmed or over %d tokens (%d)", si, c.Text, maxTok, c.Tokens)
			}
			if c.Locator != s.Locator {
				tb.Fatalf("chunk %q of section %d has locator %q, want %q", c.Text, si, c.Locator, s.Locator)
			}
			if start >= covered {
				if gap := s.Text[covered:start]; strings.TrimSpace(gap) != "" {
					tb.Fatalf("section %d: %q is in no chunk", si, gap)
				}
			}
			covered = max(covered, start+len(c.Text))
			own = append(own, c.Text)
		}
		if rest := s.Text[covered:]; strings.TrimFunc(rest, unicode.IsSpace) != "" {
			tb.Fatalf("section %d: %q after its last chunk is in no chunk", si, rest)
		}
		var alone []string
		for _, c := range chunker.Split(s.Text, format, opts) {
			alone = append(alone, c.Text)
		}
		if !reflect.DeepEqual(own, alone) {
			tb.Fatalf("section %d cut among others %q, alone %q", si, own, alone)
		}
	}
	if i != len(chunks) {
		tb.Fatalf("chunk %d %q is in no section, or out of order", i, chunks[i].Text)
	}
}

func TestSplitSections(t *testing.T) {
	type want struct {
		text, locator string
		path          []string
	}
	for _, tt := range []struct {
		name   string
		secs   []ingestd.Section
		format string
		opts   *chunker.Options
		want   []want
	}{
		{
			name: "a page ends a chunk that would fit",
			secs: pages("One short line.\fTwo short lines."), format: ingestd.FormatPlain,
			want: []want{{"One short line.", "p. 1", nil}, {"Two short lines.", "p. 2", nil}},
		},
		{
			name: "headings carry over a page",
			secs: pages("# Handbook\n\n## Refunds\n\nPaid back to the card.\f### Steps\n\nPress refund.\fStill on steps.\n\n## Contacts\n\nAsk Jonas."),
			opts: &chunker.Options{MaxTokens: 8}, format: ingestd.FormatMarkdown,
			want: []want{
				{"# Handbook\n\n## Refunds", "p. 1", []string{"Handbook", "Refunds"}},
				{"Paid back to the card.", "p. 1", []string{"Handbook", "Refunds"}},
				{"### Steps\n\nPress refund.", "p. 2", []string{"Handbook", "Refunds", "Steps"}},
				{"Still on steps.", "p. 3", []string{"Handbook", "Refunds", "Steps"}},
				{"## Contacts\n\nAsk Jonas.", "p. 3", []string{"Handbook", "Contacts"}},
			},
		},
		{
			name: "heading sections of a DOCX",
			secs: []ingestd.Section{
				{Locator: "", Text: "Before any heading."},
				{Locator: "Refunds", Text: "# Refunds\n\nPaid back."},
				{Locator: "Refunds > Steps", Text: "## Steps\n\nPress refund."},
			},
			format: ingestd.FormatMarkdown,
			want: []want{
				{"Before any heading.", "", nil},
				{"# Refunds\n\nPaid back.", "Refunds", []string{"Refunds"}},
				{"## Steps\n\nPress refund.", "Refunds > Steps", []string{"Refunds", "Steps"}},
			},
		},
		{
			name: "a section without text makes no chunk",
			secs: pages("First.\f \n\f\fLast."), format: ingestd.FormatPlain,
			want: []want{{"First.", "p. 1", nil}, {"Last.", "p. 4", nil}},
		},
		{name: "no sections", format: ingestd.FormatPlain},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := chunker.SplitSections(tt.secs, tt.format, tt.opts)
			checkSections(t, tt.secs, tt.format, tt.opts, got)
			if len(got) != len(tt.want) {
				t.Fatalf("%d chunks %+v, want %d", len(got), got, len(tt.want))
			}
			for i, w := range tt.want {
				if g := got[i]; g.Text != w.text || g.Locator != w.locator || !reflect.DeepEqual(g.HeadingPath, w.path) {
					t.Errorf("chunk %d = %q %q %q, want %q %q %q", i, g.Text, g.Locator, g.HeadingPath, w.text, w.locator, w.path)
				}
			}
		})
	}
}

// TestSplitSectionsOfOneIsSplit: one section without a locator is cut as
// Split cuts its text, golden cases included.
func TestSplitSectionsOfOneIsSplit(t *testing.T) {
	for _, c := range MustGoldenCases(t) {
		t.Run(c.dir, func(t *testing.T) {
			want := chunker.Split(c.input, c.format, c.opts)
			got := chunker.SplitSections([]ingestd.Section{{Text: c.input}}, c.format, c.opts)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("SplitSections of one section differs from Split:\n%+v\n%+v", got, want)
			}
		})
	}
}

// FuzzSplitSections checks checkSections on any text cut into pages at
// form feeds, in any format and budget.
func FuzzSplitSections(f *testing.F) {
	for _, c := range MustGoldenCases(f) {
		f.Add(strings.ReplaceAll(c.input, "\n\n", "\n\f"), formatIndex(c.format), uint16(40), int16(0))
	}
	f.Add("# a\f## b\ftext\f\f### c\fmore", uint8(1), uint16(3), int16(1))
	f.Fuzz(func(t *testing.T, text string, format uint8, maxTok uint16, overlap int16) {
		fm := fuzzFormats[int(format)%len(fuzzFormats)]
		opts := &chunker.Options{MaxTokens: int(maxTok % 600), OverlapTokens: int(overlap)}
		secs := pages(text)
		checkSections(t, secs, fm, opts, chunker.SplitSections(secs, fm, opts))
	})
}
