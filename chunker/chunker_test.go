package chunker_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unsafe"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/chunker"
)

var update = flag.Bool("update", false, "rewrite the golden want.json files")

// goldenChunk is a Chunk as want.json spells it.
type goldenChunk struct {
	Text        string   `json:"text"`
	HeadingPath []string `json:"heading_path,omitempty"`
	Tokens      int      `json:"tokens"`
	Quoted      bool     `json:"quoted,omitempty"`
}

// goldenCase is one folder of testdata: input.<ext>, options.json and want.json.
type goldenCase struct {
	dir    string
	input  string
	format string
	opts   *chunker.Options
}

// formats maps an input file's extension to its format.
var formats = map[string]string{
	".md":       ingestd.FormatMarkdown,
	".txt":      ingestd.FormatPlain,
	".eml-body": ingestd.FormatMail,
}

// MustGoldenCases loads every case under testdata.
func MustGoldenCases(tb testing.TB) []goldenCase {
	tb.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "*"))
	if err != nil {
		tb.Fatal(err)
	}
	var cases []goldenCase
	for _, dir := range dirs {
		inputs, _ := filepath.Glob(filepath.Join(dir, "input.*"))
		if len(inputs) != 1 {
			continue // not a case folder (fuzz corpus)
		}
		format, ok := formats[filepath.Ext(inputs[0])]
		if !ok {
			tb.Fatalf("%s: unknown input extension", inputs[0])
		}
		b, err := os.ReadFile(inputs[0])
		if err != nil {
			tb.Fatal(err)
		}
		c := goldenCase{dir: dir, input: string(b), format: format}
		if ob, err := os.ReadFile(filepath.Join(dir, "options.json")); err == nil {
			var o struct {
				MaxTokens     int `json:"max_tokens"`
				OverlapTokens int `json:"overlap_tokens"`
			}
			if err := json.Unmarshal(ob, &o); err != nil {
				tb.Fatalf("%s/options.json: %v", dir, err)
			}
			c.opts = &chunker.Options{MaxTokens: o.MaxTokens, OverlapTokens: o.OverlapTokens}
		}
		cases = append(cases, c)
	}
	if len(cases) == 0 {
		tb.Fatal("no golden cases under testdata")
	}
	return cases
}

func TestSplitGolden(t *testing.T) {
	for _, c := range MustGoldenCases(t) {
		t.Run(filepath.Base(c.dir), func(t *testing.T) {
			chunks := chunker.Split(c.input, c.format, c.opts)
			checkChunks(t, c.input, c.format, c.opts, chunks)

			got := make([]goldenChunk, len(chunks))
			for i, ch := range chunks {
				got[i] = goldenChunk{ch.Text, ch.HeadingPath, ch.Tokens, ch.Quoted}
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(got); err != nil {
				t.Fatal(err)
			}
			b := buf.Bytes()
			path := filepath.Join(c.dir, "want.json")
			if *update {
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -run TestSplitGolden -update to create it)", err)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("chunks differ from %s (rerun with -update and review the diff):\n%s", path, b)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	for _, tt := range []struct {
		name   string
		text   string
		format string
		opts   *chunker.Options
		want   []goldenChunk
	}{
		{name: "empty", text: "", want: nil},
		{name: "whitespace only", text: " \n\t\u3000\n", format: ingestd.FormatMarkdown, want: nil},
		{name: "trimmed", text: "\n\n  Hello world.  \n", want: []goldenChunk{{Text: "Hello world.", Tokens: 3}}},
		{name: "unknown format is plain", text: "# Not a heading", format: "rtf", want: []goldenChunk{{Text: "# Not a heading", Tokens: 5}}},
		{name: "html is plain", text: "# Not a heading", format: ingestd.FormatHTML, want: []goldenChunk{{Text: "# Not a heading", Tokens: 5}}},
		{
			name: "small paragraphs pack", text: "One.\n\nTwo.\n\nThree.",
			want: []goldenChunk{{Text: "One.\n\nTwo.\n\nThree.", Tokens: 8}},
		},
		{
			name: "headings split sections", text: "# A\n\nx\n\n# B\n\ny", format: ingestd.FormatMarkdown,
			want: []goldenChunk{
				{Text: "# A\n\nx", HeadingPath: []string{"A"}, Tokens: 4},
				{Text: "# B\n\ny", HeadingPath: []string{"B"}, Tokens: 4},
			},
		},
		{
			name: "heading stays with deeper heading", text: "# A\n## B\ntext", format: ingestd.FormatMarkdown,
			want: []goldenChunk{{Text: "# A\n## B\ntext", HeadingPath: []string{"A", "B"}, Tokens: 7}},
		},
		{
			name: "empty section heading kept", text: "## A\n# B\ntext", format: ingestd.FormatMarkdown,
			want: []goldenChunk{
				{Text: "## A", HeadingPath: []string{"A"}, Tokens: 2},
				{Text: "# B\ntext", HeadingPath: []string{"B"}, Tokens: 4},
			},
		},
		{
			name: "a deeper heading that does not fit after the gap starts a chunk", text: "# A\n## B", format: ingestd.FormatMarkdown,
			opts: &chunker.Options{MaxTokens: 4},
			want: []goldenChunk{{Text: "# A", HeadingPath: []string{"A"}, Tokens: 2}, {Text: "## B", HeadingPath: []string{"A", "B"}, Tokens: 2}},
		},
		{
			// A heading over budget is split like a block; its last piece
			// (here with one token of overlap, the default 15% of 13)
			// must not take the next heading's path (issue 21).
			name: "a piece of a split heading ends its chunk", text: "# 0A000AA0000A00000000 0 0A\n## 0", format: ingestd.FormatMarkdown,
			opts: &chunker.Options{MaxTokens: 13},
			want: []goldenChunk{
				{Text: "# 0A000AA0000A00000000 0", HeadingPath: []string{"0A000AA0000A00000000 0 0A"}, Tokens: 12},
				{Text: "0 0A", HeadingPath: []string{"0A000AA0000A00000000 0 0A"}, Tokens: 3},
				{Text: "## 0", HeadingPath: []string{"0A000AA0000A00000000 0 0A", "0"}, Tokens: 2},
			},
		},
		{
			name: "heading inside fence is code", text: "```\n# not a heading\n```\nafter", format: ingestd.FormatMarkdown,
			want: []goldenChunk{{Text: "```\n# not a heading\n```\nafter", Tokens: 11}},
		},
		{
			name: "no overlap between whole blocks", text: "Alpha beta gamma.\n\nDelta epsilon zeta.",
			opts: &chunker.Options{MaxTokens: 5},
			want: []goldenChunk{{Text: "Alpha beta gamma.", Tokens: 4}, {Text: "Delta epsilon zeta.", Tokens: 5}},
		},
		{
			name: "sentences overlap when a paragraph is split", text: "One two three. Four five six. Seven eight nine.",
			opts: &chunker.Options{MaxTokens: 8, OverlapTokens: 4},
			want: []goldenChunk{
				{Text: "One two three. Four five six.", Tokens: 8},
				{Text: "Four five six. Seven eight nine.", Tokens: 8},
			},
		},
		{
			name: "negative overlap disables it", text: "One two three. Four five six. Seven eight nine.",
			opts: &chunker.Options{MaxTokens: 8, OverlapTokens: -1},
			want: []goldenChunk{
				{Text: "One two three. Four five six.", Tokens: 8},
				{Text: "Seven eight nine.", Tokens: 4},
			},
		},
		{
			name: "abbreviations and decimals do not end sentences", text: "Use e.g. Go 1.26 here. Next one.",
			opts: &chunker.Options{MaxTokens: 11, OverlapTokens: -1},
			want: []goldenChunk{{Text: "Use e.g. Go 1.26 here.", Tokens: 11}, {Text: "Next one.", Tokens: 3}},
		},
		{
			name: "word longer than the budget is cut", text: "abcdefghijklmnopqrstuvwxyz",
			opts: &chunker.Options{MaxTokens: 3, OverlapTokens: -1},
			want: []goldenChunk{{Text: "abcdefghijkl", Tokens: 3}, {Text: "mnopqrstuvwx", Tokens: 3}, {Text: "yz", Tokens: 1}},
		},
		{
			name: "mail quote lines", text: "new\n> old\nnew again", format: ingestd.FormatMail,
			want: []goldenChunk{{Text: "new", Tokens: 1}, {Text: "> old", Tokens: 2, Quoted: true}, {Text: "new again", Tokens: 2}},
		},
		{
			name: "mail top posting", text: "Sure.\n\nOn Tue, Ann wrote:\nplain old text\n\nmore", format: ingestd.FormatMail,
			want: []goldenChunk{{Text: "Sure.", Tokens: 2}, {Text: "On Tue, Ann wrote:\nplain old text\n\nmore", Tokens: 12, Quoted: true}},
		},
		{
			name: "wrote: without quotes after is new text", text: "Here is what she wrote:\nnothing", format: ingestd.FormatMail,
			want: []goldenChunk{{Text: "Here is what she wrote:\nnothing", Tokens: 9}},
		},
		{
			name: "quote marks are text outside mail", text: "> quoted", format: ingestd.FormatPlain,
			want: []goldenChunk{{Text: "> quoted", Tokens: 3}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chunks := chunker.Split(tt.text, tt.format, tt.opts)
			checkChunks(t, tt.text, tt.format, tt.opts, chunks)
			var got []goldenChunk
			for _, c := range chunks {
				got = append(got, goldenChunk{c.Text, c.HeadingPath, c.Tokens, c.Quoted})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Split(%q)\n got %+v\nwant %+v", tt.text, got, tt.want)
			}
		})
	}
}

func TestSplitDefaults(t *testing.T) {
	text := strings.Repeat("A sentence of five words. ", 400)
	got := chunker.Split(text, "", nil)
	if len(got) < 2 {
		t.Fatalf("got %d chunks, want several", len(got))
	}
	for i, c := range got {
		if c.Tokens > chunker.DefaultMaxTokens {
			t.Errorf("chunk %d has %d tokens, over the default budget", i, c.Tokens)
		}
	}
	if !reflect.DeepEqual(got, chunker.Split(text, "", &chunker.Options{})) {
		t.Error("nil options and zero options differ")
	}
	// The second chunk repeats about 15% of the budget from the first.
	a, b := offsetOf(text, got[0].Text), offsetOf(text, got[1].Text)
	ov := chunker.CountTokens(text[b : a+len(got[0].Text)])
	if max := chunker.DefaultMaxTokens * chunker.DefaultOverlapPercent / 100; ov <= 0 || ov > max {
		t.Errorf("overlap %d tokens, want 1..%d", ov, max)
	}
}

// offsetOf returns where sub starts in s. Chunk texts are documented to be
// slices of the input, so this is a pointer difference; -1 if sub is not
// inside s's memory.
func offsetOf(s, sub string) int {
	if len(sub) == 0 || len(s) == 0 {
		return -1
	}
	d := int(uintptr(unsafe.Pointer(unsafe.StringData(sub))) - uintptr(unsafe.Pointer(unsafe.StringData(s))))
	if d < 0 || d+len(sub) > len(s) {
		return -1
	}
	return d
}

// checkChunks asserts what holds for every Split result: chunks are
// non-empty trimmed slices of the input, in order, within budget, counted
// right, covering every non-space character; a markdown chunk's heading
// path does not name a heading after it; chunks overlap only within one
// section and quotedness and by at most the overlap budget; and splitting
// again gives the same chunks.
func checkChunks(tb testing.TB, text, format string, opts *chunker.Options, chunks []chunker.Chunk) {
	tb.Helper()
	maxTok, overlap := chunker.DefaultMaxTokens, 0
	if opts != nil && opts.MaxTokens > 0 {
		maxTok = opts.MaxTokens
	}
	switch {
	case opts == nil || opts.OverlapTokens == 0:
		overlap = maxTok * chunker.DefaultOverlapPercent / 100
	case opts.OverlapTokens > 0:
		overlap = opts.OverlapTokens
	}
	overlap = min(overlap, maxTok/2)

	covered, prevStart := 0, -1
	for i, c := range chunks {
		if c.Text == "" {
			tb.Fatalf("chunk %d is empty", i)
		}
		if strings.TrimSpace(c.Text) != c.Text {
			tb.Errorf("chunk %d is not trimmed: %q", i, c.Text)
		}
		if got := chunker.CountTokens(c.Text); c.Tokens != got {
			tb.Errorf("chunk %d: Tokens = %d, CountTokens = %d", i, c.Tokens, got)
		}
		if c.Tokens > maxTok {
			tb.Errorf("chunk %d: %d tokens, budget %d: %q", i, c.Tokens, maxTok, c.Text)
		}
		start := offsetOf(text, c.Text)
		if start < 0 {
			tb.Fatalf("chunk %d is not a slice of the input: %q", i, c.Text)
		}
		if start <= prevStart {
			tb.Fatalf("chunk %d starts at %d, not after chunk %d at %d", i, start, i-1, prevStart)
		}
		if n := len(c.HeadingPath); format == ingestd.FormatMarkdown && n > 0 {
			// The deepest heading of the path is on a line the chunk
			// reaches (a piece of a split heading line can be its marks).
			end := start + len(c.Text)
			if nl := strings.IndexByte(text[end:], '\n'); nl >= 0 {
				end += nl
			} else {
				end = len(text)
			}
			if h := strings.Fields(c.HeadingPath[n-1])[0]; !strings.Contains(text[:end], h) {
				tb.Errorf("chunk %d %q has heading path %q, whose last heading comes after it", i, c.Text, c.HeadingPath)
			}
		}
		if start < covered { // overlaps the previous chunk
			prev := chunks[i-1]
			if ov := chunker.CountTokens(text[start:covered]); ov > overlap {
				tb.Errorf("chunk %d repeats %d tokens, overlap budget %d", i, ov, overlap)
			}
			if prev.Quoted != c.Quoted || !reflect.DeepEqual(prev.HeadingPath, c.HeadingPath) {
				tb.Errorf("chunk %d overlaps chunk %d across a section or quote boundary", i, i-1)
			}
		} else if gap := text[covered:start]; strings.TrimSpace(gap) != "" {
			tb.Fatalf("text before chunk %d is in no chunk: %q", i, gap)
		}
		covered = max(covered, start+len(c.Text))
		prevStart = start
	}
	if rest := text[covered:]; strings.TrimFunc(rest, unicode.IsSpace) != "" {
		tb.Fatalf("text after the last chunk is in no chunk: %q", rest)
	}
	if again := chunker.Split(text, format, opts); !reflect.DeepEqual(again, chunks) {
		tb.Fatal("splitting the same text again gives different chunks")
	}
}

// TestSplitSectionBoundaries splits texts where a block too long for its
// chunk meets a section or quote boundary, at every small budget and with
// overlap off, default and on, and checks them with checkChunks: no
// overlap across a boundary, no heading path naming a later heading.
func TestSplitSectionBoundaries(t *testing.T) {
	const long = "alpha beta gamma delta epsilon zeta eta"
	for _, tt := range []struct {
		name, text, format string
	}{
		{"atx 1 then 2", "# " + long + "\n## Omega\ntext", ingestd.FormatMarkdown},
		{"atx 2 then 4", "## " + long + "\n#### Omega\ntext", ingestd.FormatMarkdown},
		{"atx 5 then 6", "##### " + long + "\n###### Omega\ntext", ingestd.FormatMarkdown},
		{"atx closed then deeper", "# " + long + " #\n\n## Omega ##\n\ntext", ingestd.FormatMarkdown},
		{"atx then same level", "## " + long + "\n## Omega\ntext", ingestd.FormatMarkdown},
		{"atx chain", "# " + long + "\n## Omega\n### Sigma\ntext", ingestd.FormatMarkdown},
		{"setext 1 then atx 2", long + "\n===\n## Omega\ntext", ingestd.FormatMarkdown},
		{"setext 2 then atx 3", long + "\n---\n### Omega\ntext", ingestd.FormatMarkdown},
		{"setext two lines", "alpha beta gamma\ndelta epsilon zeta eta\n===\nOmega\n---\ntext", ingestd.FormatMarkdown},
		{"short headings", "# A\n## Omega", ingestd.FormatMarkdown},
		{"block quote then heading", "> " + long + "\n## Omega\ntext", ingestd.FormatMarkdown},
		{"code then heading", "```\nalpha beta\ngamma delta\nepsilon zeta\n```\n## Omega\ntext", ingestd.FormatMarkdown},
		{"heading then code", "# Omega\n```\nalpha beta\ngamma delta\nepsilon zeta\n```\n## Sigma", ingestd.FormatMarkdown},
		{"unclosed fence", "# Omega\n~~~\nalpha beta\ngamma delta\n## not a heading", ingestd.FormatMarkdown},
		{"quote then new text", "> " + long + "\nnew text here", ingestd.FormatMail},
		{"new text then quote", "new " + long + "\n> quoted text here", ingestd.FormatMail},
		{"attribution", long + "\nOn Tue, Ann wrote:\n> " + long, ingestd.FormatMail},
	} {
		for _, overlap := range []int{-1, 0, 1, 3} {
			for maxTok := 1; maxTok <= 12; maxTok++ {
				opts := &chunker.Options{MaxTokens: maxTok, OverlapTokens: overlap}
				t.Run(fmt.Sprintf("%s/max%d/overlap%d", tt.name, maxTok, overlap), func(t *testing.T) {
					checkChunks(t, tt.text, tt.format, opts, chunker.Split(tt.text, tt.format, opts))
				})
			}
		}
	}
}
