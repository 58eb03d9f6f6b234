package embedder_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ingestd/ingestd/embedder"
)

var update = flag.Bool("update", false, "rewrite golden files")

// raceEnabled is set by race_test.go: the race detector makes sync.Pool
// drop items at random, so allocation counts mean nothing under it.
var raceEnabled bool

// MustEmbed embeds texts with e and fails the test on error.
func MustEmbed(tb testing.TB, e interface {
	Embed(context.Context, []string) ([][]float32, error)
}, texts ...string) [][]float32 {
	tb.Helper()
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		tb.Fatalf("embed: %v", err)
	}
	if got, want := len(vecs), len(texts); got != want {
		tb.Fatalf("embed returned %d vectors for %d texts", got, want)
	}
	return vecs
}

// MustReadFile returns the contents of a file under testdata/.
func MustReadFile(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func norm2(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestLexicalIDAndDims(t *testing.T) {
	tests := []struct {
		name     string
		dims     int
		wantDims int
		wantID   string
	}{
		{name: "default for zero", dims: 0, wantDims: 384, wantID: "lexical-v2/384"},
		{name: "default for negative", dims: -3, wantDims: 384, wantID: "lexical-v2/384"},
		{name: "explicit", dims: 256, wantDims: 256, wantID: "lexical-v2/256"},
		{name: "not a power of two", dims: 100, wantDims: 100, wantID: "lexical-v2/100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := embedder.NewLexical(tt.dims)
			if got := e.Dims(); got != tt.wantDims {
				t.Errorf("Dims() = %d, want %d", got, tt.wantDims)
			}
			if got := e.ID(); got != tt.wantID {
				t.Errorf("ID() = %q, want %q", got, tt.wantID)
			}
			for i, v := range MustEmbed(t, e, "hello world", "", "a longer text about retrieval") {
				if got := len(v); got != tt.wantDims {
					t.Errorf("len(vec[%d]) = %d, want %d", i, got, tt.wantDims)
				}
			}
		})
	}
}

func TestLexicalNorm(t *testing.T) {
	e := embedder.NewLexical(0)
	texts := []string{
		"x",
		"hello world",
		"the the the the",
		MustReadFile(t, "bench/en.txt"),
		MustReadFile(t, "bench/intl.txt"),
		strings.Repeat("spam ", 10000),
		"顧客",
	}
	for i, v := range MustEmbed(t, e, texts...) {
		if got := norm2(v); math.Abs(got-1) > 1e-5 {
			t.Errorf("text %d: norm = %v, want 1", i, got)
		}
	}
}

func TestLexicalNothingToEmbed(t *testing.T) {
	e := embedder.NewLexical(64)
	for _, text := range []string{"", "   ", "!?.,;: -- ()", "\u200b\u200d", "\x00\x01"} {
		v := MustEmbed(t, e, text)[0]
		if got, want := len(v), 64; got != want {
			t.Fatalf("%q: len = %d, want %d", text, got, want)
		}
		if n := norm2(v); n != 0 {
			t.Errorf("%q: norm = %v, want the zero vector", text, n)
		}
		if c := embedder.Cosine(v, MustEmbed(t, e, "hello")[0]); c != 0 {
			t.Errorf("%q: cosine with hello = %v, want 0", text, c)
		}
	}
}

func TestLexicalDeterministic(t *testing.T) {
	texts := []string{MustReadFile(t, "bench/en.txt"), MustReadFile(t, "bench/intl.txt"), "short", ""}
	a := MustEmbed(t, embedder.NewLexical(0), texts...)
	e := embedder.NewLexical(0)
	for round := range 3 {
		// One call per text, then all at once, in reverse: the scratch
		// buffers a call reuses must not leak into the next vector.
		for i := len(texts) - 1; i >= 0; i-- {
			if got := MustEmbed(t, e, texts[i])[0]; !slices.Equal(got, a[i]) {
				t.Fatalf("round %d text %d: vector differs between calls", round, i)
			}
		}
		b := MustEmbed(t, e, texts...)
		for i := range texts {
			if !slices.Equal(b[i], a[i]) {
				t.Fatalf("round %d text %d: vector differs in a batch", round, i)
			}
		}
	}
}

// TestLexicalGolden pins lexical-v2: vectors are stored and compared across
// processes and releases, so any change to normalisation, hashing or
// weighting must come with a new ID, not a silent drift.
func TestLexicalGolden(t *testing.T) {
	const path = "testdata/golden/lexical-v2-64.json"
	texts := []string{
		"Hello, World! The quick brown fox jumps over the lazy dog.",
		"Ｆｕｌｌ－ｗｉｄｔｈ ﬁle Größe Клиент 顧客がサポート",
	}
	got := MustEmbed(t, embedder.NewLexical(64), texts...)
	if *update {
		lines := make([]string, len(got))
		for i, v := range got {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			lines[i] = string(b)
		}
		if err := os.WriteFile(path, []byte("[\n"+strings.Join(lines, ",\n")+"\n]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var want [][]float32
	if err := json.Unmarshal([]byte(MustReadFile(t, "golden/lexical-v2-64.json")), &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(texts) {
		t.Fatalf("golden file has %d vectors, want %d (run with -update)", len(want), len(texts))
	}
	for i := range texts {
		for j := range want[i] {
			if math.Abs(float64(got[i][j]-want[i][j])) > 1e-6 {
				t.Fatalf("text %d: component %d = %v, golden %v: lexical-v2 changed", i, j, got[i][j], want[i][j])
			}
		}
	}
}

// Words the text index holds as one term (plurals and inflections, number
// words, synonyms: lexnorm.AppendTerm) are one word to the embedder too, so
// texts that differ only by them embed close; texts that share no term stay
// apart. lexical-v1 put the first pairs at cosine 0.17–0.56.
func TestLexicalSharesTextIndexTerms(t *testing.T) {
	e := embedder.NewLexical(0)
	for _, tt := range []struct {
		a, b string
		near bool
	}{
		{"refunds were issued", "refund was issue", true},
		{"rotating certificates", "rotate the certificate", true},
		{"thirty days", "30 days", true},
		{"buy a licence", "purchase a licence", true},
		{"send an e-mail", "send an email", true},
		{"thirty days", "sixty days", false},
		{"refunds were issued", "invoices were paid", false},
	} {
		v := MustEmbed(t, e, tt.a, tt.b)
		c := embedder.Cosine(v[0], v[1])
		if near := c >= 0.7; near != tt.near {
			t.Errorf("cosine(%q, %q) = %.3f, want near %v (>= 0.7)", tt.a, tt.b, c, tt.near)
		}
	}
}

func TestLexicalNormalisation(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{name: "case", a: "Hello World", b: "hello world"},
		{name: "punctuation and spacing", a: "hello, world!", b: "  hello\n\tworld "},
		{name: "full-width", a: "ＨＥＬＬＯ ｗｏｒｌｄ", b: "hello world"},
		{name: "ligature", a: "ﬁle ﬂow", b: "file flow"},
		{name: "non-ASCII case", a: "GRÖSSE ΚΑΛΗΜΕΡΑ", b: "grösse καλημερα"},
		{name: "decomposed accents", a: "cafe\u0301", b: "café"},
		{name: "invisible characters inside words", a: "pass\u200bword re\u00adset \u202eadmin", b: "password reset admin"},
	}
	e := embedder.NewLexical(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := MustEmbed(t, e, tt.a, tt.b)
			if !slices.Equal(v[0], v[1]) {
				t.Errorf("%q and %q embed differently (cosine %v)", tt.a, tt.b, embedder.Cosine(v[0], v[1]))
			}
		})
	}
}

func TestLexicalSimilarity(t *testing.T) {
	tests := []struct {
		name                      string
		query, similar, unrelated string
	}{
		{
			name:      "shared words",
			query:     "how do I reset my password",
			similar:   "To reset a forgotten password, open the login page and click reset password.",
			unrelated: "The quarterly invoice for the office lease is attached to this message.",
		},
		{
			name:      "inflection",
			query:     "embedding vectors",
			similar:   "the embedder embeds each chunk into a vector",
			unrelated: "the mailbox is synced every ten minutes",
		},
		{
			name:      "typo",
			query:     "retreival ranking",
			similar:   "retrieval ranks chunks by relevance",
			unrelated: "a webhook delivery is signed with a shared secret",
		},
		{
			name:      "function words do not make texts similar",
			query:     "the tool firewall of the agent",
			similar:   "agent tool firewall verdict",
			unrelated: "it is what it is and that is that, as it was for them",
		},
		{
			name:      "CJK",
			query:     "サポート窓口へのメール",
			similar:   "顧客がサポート窓口にメールを送る",
			unrelated: "株価が今日大きく下がった",
		},
		{
			name:      "Cyrillic",
			query:     "служба поддержки клиентов",
			similar:   "клиент пишет в службу поддержки",
			unrelated: "погода сегодня солнечная и тёплая",
		},
	}
	e := embedder.NewLexical(0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := MustEmbed(t, e, tt.query, tt.similar, tt.unrelated)
			sim, unrel := embedder.Cosine(v[0], v[1]), embedder.Cosine(v[0], v[2])
			if sim <= unrel {
				t.Errorf("cosine(query, similar) = %.3f, not above cosine(query, unrelated) = %.3f", sim, unrel)
			}
		})
	}
}

func TestLexicalWordOrder(t *testing.T) {
	e := embedder.NewLexical(0)
	v := MustEmbed(t, e, "dog bites man", "man bites dog", "dog bites man")
	if slices.Equal(v[0], v[1]) {
		t.Error("word pairs should tell 'dog bites man' from 'man bites dog'")
	}
	if c := embedder.Cosine(v[0], v[1]); c < 0.5 {
		t.Errorf("same words in another order: cosine = %.3f, want it high", c)
	}
}

func TestLexicalCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := embedder.NewLexical(0).Embed(ctx, []string{"a"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestLexicalConcurrent(t *testing.T) {
	e := embedder.NewLexical(0)
	texts := []string{MustReadFile(t, "bench/en.txt"), MustReadFile(t, "bench/intl.txt"), "x y z"}
	want := MustEmbed(t, e, texts...)
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(texts))
	for g := range 8 {
		wg.Go(func() {
			for k := range 20 {
				i := (g + k) % len(texts)
				v, err := e.Embed(context.Background(), texts[i:i+1])
				if err != nil || !slices.Equal(v[0], want[i]) {
					errs <- "concurrent embed differs"
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for msg := range errs {
		t.Fatal(msg)
	}
}

// TestLexicalAllocations guards "no allocation per word": a warm embedder
// allocates the result and little else, however long the text.
func TestLexicalAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are meaningless under the race detector")
	}
	e := embedder.NewLexical(0)
	texts := []string{MustReadFile(t, "bench/en.txt")}
	MustEmbed(t, e, texts...)
	allocs := testing.AllocsPerRun(50, func() {
		if _, err := e.Embed(context.Background(), texts); err != nil {
			t.Fatal(err)
		}
	})
	// Two for the result; the rest is headroom for a pool emptied by GC.
	if allocs > 6 {
		t.Errorf("embedding 2 KB allocates %v times, want at most 6", allocs)
	}
}
