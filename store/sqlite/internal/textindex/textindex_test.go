package textindex

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"fold and stem", "Rotating the DB Passwords", "rotat the db password"},
		{"underscore joins", "foo_bar baz-qux", "foo_bar baz qux"},
		{"non-ASCII kept, not folded", "Grüße Über 東京 naïve—thing", "grüße Über 東京 naïve—thing"},
		{"short words copied", "Is a GO", "is a go"},
		{"long word truncated", "Antidisestablishmentarianism", "antidisestntarianism"},
		{"digits truncate at 6", "abc1234567 x12345", "abc567 x12345"},
		{"punctuation splits", `"disk" OR NEAR/3 -full*`, "disk or near 3 full"},
		{"number words and synonyms folded", "Buying thirty e-mails", "purchas 30 e mail"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			Tokenize(tt.in, func(tok []byte) { got = append(got, string(tok)) })
			if g := strings.Join(got, " "); g != tt.want {
				t.Fatalf("Tokenize(%q) = %q, want %q", tt.in, g, tt.want)
			}
		})
	}
}

// Stems of the original Porter algorithm as SQLite's porter tokenizer
// gives them (store/sqlite checks many more words against SQLite itself).
func TestTerm(t *testing.T) {
	for in, want := range map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "ti", "cats": "cat", "feed": "feed",
		"agreed": "agre", "plastered": "plaster", "motoring": "motor", "sing": "sing",
		"conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
		"filing": "file", "happy": "happi", "relational": "relat", "connections": "connect",
		"connected": "connect", "generalizations": "gener", "database": "databas", "deploying": "deploi",
	} {
		if got := Term(in); got != want {
			t.Errorf("Term(%q) = %q, want %q", in, got, want)
		}
	}
}

// A query word finds rows that hold its inflections, its digits or a
// synonym, as the lexical embedder's vectors bring them near.
func TestSearchFoldsWords(t *testing.T) {
	x := New()
	x.Add(1, 0, "Refunds are paid within 30 days.")
	x.Add(2, 0, "We buy laptops for new staff.")
	x.Add(3, 0, "Send the form by email.")
	x.Add(4, 0, "Nothing to see here.")
	for _, tt := range []struct {
		words []string
		want  int64
	}{
		{[]string{"refunded", "thirty"}, 1},
		{[]string{"purchase"}, 2},
		{[]string{"mail"}, 3},
	} {
		res := x.Search(tt.words, nil, 1)
		if len(res) != 1 || res[0].Key != tt.want {
			t.Errorf("Search(%q) = %v, want row %d", tt.words, res, tt.want)
		}
	}
}

// doc is a row of the reference model.
type doc struct {
	key    int64
	group  int32
	fields [NumFields]string
}

// refModel ranks by brute force: every live row is tokenized from scratch
// and scored with the formula of store/sqlite's bm25.
type refModel struct {
	rows  []refRow
	total [NumFields]int
	df    map[string][NumFields]int
	n     map[string]int
}

type refRow struct {
	d    doc
	tf   map[string][NumFields]int
	lens [NumFields]int
}

func newRef(docs map[int64]doc) *refModel {
	m := &refModel{df: map[string][NumFields]int{}, n: map[string]int{}}
	for _, d := range docs {
		r := refRow{d: d, tf: map[string][NumFields]int{}}
		for f, s := range d.fields {
			Tokenize(s, func(tok []byte) {
				v := r.tf[string(tok)]
				v[f]++
				r.tf[string(tok)] = v
				r.lens[f]++
				m.total[f]++
			})
		}
		for t, v := range r.tf {
			m.n[t]++
			c := m.df[t]
			for f := range v {
				if v[f] > 0 {
					c[f]++
				}
			}
			m.df[t] = c
		}
		m.rows = append(m.rows, r)
	}
	return m
}

func (m *refModel) search(words []string, allowed []bool, k int) []Result {
	var terms []string
	for _, w := range words {
		if t := Term(w); m.n[t] > 0 {
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 || len(m.rows) == 0 {
		return nil
	}
	slices.SortStableFunc(terms, func(a, b string) int { return cmp.Compare(m.n[a], m.n[b]) })
	N := float64(len(m.rows))
	var res []Result
	for _, r := range m.rows {
		if allowed != nil && (int(r.d.group) >= len(allowed) || !allowed[r.d.group]) {
			continue
		}
		score, matched := 0.0, 0
		for _, t := range terms {
			hit := false
			for f := 0; f < NumFields; f++ {
				tf := float64(r.tf[t][f])
				if tf == 0 {
					continue
				}
				d := float64(m.df[t][f])
				idf := math.Log(1 + (N-d+0.5)/(d+0.5))
				al := float64((m.total[f] + len(m.rows)/2) / len(m.rows))
				if al <= 0 {
					al = 1
				}
				l := float64(r.lens[f])
				score += weights[f] * idf * tf * (1.2 + 1) / (tf + 1.2*(1-0.75+0.75*l/al))
				hit = true
			}
			if hit {
				matched++
			}
		}
		if matched > 0 {
			res = append(res, Result{Key: r.d.key, Group: r.d.group, Score: score * float64(matched) / float64(len(terms))})
		}
	}
	slices.SortFunc(res, func(a, b Result) int { return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Key, b.Key)) })
	return res[:min(k, len(res))]
}

func reference(docs map[int64]doc, words []string, allowed []bool, k int) []Result {
	return newRef(docs).search(words, allowed, k)
}

// randomCorpus draws words by Zipf's law from a small vocabulary, with a
// few stems shared by several words.
type randomCorpus struct {
	rng   *rand.Rand
	zipf  *rand.Zipf
	vocab []string
}

func newRandomCorpus(seed uint64) *randomCorpus {
	rng := rand.New(rand.NewPCG(seed, 7))
	vocab := strings.Fields(`the of and to connect connected connection connections deploy deploying deployed
		server servers database password rotate rotating token tokens error errors build builds cluster
		node nodes queue search searching index indexes vector store stored query queries mail issue`)
	for i := 0; len(vocab) < 400; i++ {
		vocab = append(vocab, fmt.Sprintf("w%dx", i))
	}
	return &randomCorpus{rng: rng, zipf: rand.NewZipf(rng, 1.1, 2, uint64(len(vocab)-1)), vocab: vocab}
}

func (c *randomCorpus) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = c.vocab[c.zipf.Uint64()]
		if c.rng.IntN(20) == 0 {
			w[i] = strings.ToUpper(w[i])
		}
	}
	return strings.Join(w, " ")
}

func (c *randomCorpus) doc(key int64, groups int) doc {
	d := doc{key: key, group: int32(c.rng.IntN(groups))}
	d.fields[FieldText] = c.words(c.rng.IntN(60))
	if c.rng.IntN(3) > 0 {
		d.fields[FieldTitle] = c.words(1 + c.rng.IntN(5))
	}
	if c.rng.IntN(2) == 0 {
		d.fields[FieldHeading] = `["` + c.words(1+c.rng.IntN(3)) + `"]`
	}
	return d
}

func (c *randomCorpus) query() []string {
	q := make([]string, 1+c.rng.IntN(5))
	for i := range q {
		q[i] = c.vocab[c.zipf.Uint64()]
		if c.rng.IntN(8) == 0 {
			q[i] = "absent"
		}
	}
	return q
}

// MustIndex builds an index of the docs.
func MustIndex(tb testing.TB, docs map[int64]doc) *Index {
	tb.Helper()
	x := New()
	keys := make([]int64, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		d := docs[k]
		x.Add(d.key, d.group, d.fields[:]...)
	}
	if x.Len() != len(docs) {
		tb.Fatalf("Len = %d, want %d", x.Len(), len(docs))
	}
	return x
}

func checkSame(t *testing.T, what string, got, want []Result) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d results, want %d\ngot  %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: result %d = %+v, want %+v\ngot  %v\nwant %v", what, i, got[i], want[i], got, want)
		}
	}
}

func TestSearchMatchesBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			c := newRandomCorpus(seed)
			docs := map[int64]doc{}
			for i := range 300 + int(seed)*150 {
				docs[int64(i*3+1)] = c.doc(int64(i*3+1), 5)
			}
			x := MustIndex(t, docs)
			ref := newRef(docs)
			filters := [][]bool{nil, {true, false, true, false, false}, {false, false, false, false, true}, {}}
			for qi := range 120 {
				q := c.query()
				f := filters[qi%len(filters)]
				k := []int{1, 5, 10, 40}[qi%4]
				checkSame(t, fmt.Sprintf("query %q filter %v k %d", q, f, k), x.Search(q, f, k), ref.search(q, f, k))
			}
		})
	}
}

// Long rows (text lengths the postings carry only as a lower bound), many
// rows against small k (so that pruning decides most rows) and title and
// heading hits: the pruned search returns exactly what scoring every
// posting returns.
func TestPrunedSearchMatchesExhaustive(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			c := newRandomCorpus(100 + seed)
			docs := map[int64]doc{}
			for i := range 4000 {
				d := c.doc(int64(i), 4)
				if i%3 == 0 {
					d.fields[FieldText] = c.words(100 + c.rng.IntN(600))
				}
				docs[int64(i)] = d
			}
			x := MustIndex(t, docs)
			ref := newRef(docs)
			filters := [][]bool{nil, {true, true, true, false}, {false, true, false, false}}
			for qi := range 90 {
				q := c.query()
				f := filters[qi%len(filters)]
				k := []int{1, 3, 10, 50}[qi%4]
				checkSame(t, fmt.Sprintf("query %q filter %v k %d", q, f, k), x.Search(q, f, k), ref.search(q, f, k))
			}
		})
	}
}

// packLen's byte unpacks to a lower bound of the length, exact below 128.
func TestPackLen(t *testing.T) {
	for l := uint32(0); l < 2000; l++ {
		got := unpackLen(packLen(l))
		if got > l || l < 128 && got != l || l >= 128 && l < 636 && l-got >= 4 {
			t.Fatalf("unpackLen(packLen(%d)) = %d", l, got)
		}
	}
}

// Removal withdraws a row's statistics at once and its postings at
// compaction; rows added after keep ranking exactly.
func TestRemoveAndCompact(t *testing.T) {
	c := newRandomCorpus(42)
	docs := map[int64]doc{}
	x := New()
	next := int64(0)
	add := func(n int) {
		for range n {
			d := c.doc(next, 3)
			docs[next] = d
			x.Add(d.key, d.group, d.fields[:]...)
			next++
		}
	}
	check := func(what string) {
		t.Helper()
		ref := newRef(docs)
		for range 40 {
			q := c.query()
			checkSame(t, fmt.Sprintf("%s: query %q", what, q), x.Search(q, nil, 10), ref.search(q, nil, 10))
		}
		if x.Len() != len(docs) {
			t.Fatalf("%s: Len = %d, want %d", what, x.Len(), len(docs))
		}
	}
	add(3000)
	check("initial")
	// Remove a few (no compaction yet), then replace some keys.
	for k := int64(0); k < 600; k += 3 {
		if !x.Remove(k) {
			t.Fatalf("Remove(%d) = false", k)
		}
		delete(docs, k)
	}
	if x.Remove(0) {
		t.Fatal("second Remove(0) = true")
	}
	for k := int64(1); k < 100; k += 3 {
		d := c.doc(k, 3)
		docs[k] = d
		x.Add(k, d.group, d.fields[:]...)
	}
	if x.nDead == 0 {
		t.Fatal("no tombstones before compaction")
	}
	check("after removals")
	// Enough removals to compact.
	for k := int64(600); k < 2400; k++ {
		if _, ok := docs[k]; ok {
			x.Remove(k)
			delete(docs, k)
		}
	}
	if len(x.keys) >= int(next) || (x.nDead > 1024 && x.nDead > x.live/4) {
		t.Fatalf("%d row slots, %d tombstones over %d rows: not compacted", len(x.keys), x.nDead, x.live)
	}
	check("after compaction")
	add(500)
	x.Compact()
	check("after adding and compacting again")
	for k := range docs {
		x.Remove(k)
	}
	if got := x.Search([]string{"the"}, nil, 5); got != nil {
		t.Fatalf("search of an empty index: %v", got)
	}
}

// Big term frequencies (>= 255) are kept exactly.
func TestBigTermFrequency(t *testing.T) {
	docs := map[int64]doc{
		1: {key: 1, fields: [NumFields]string{strings.Repeat("spam ", 300) + "eggs"}},
		2: {key: 2, fields: [NumFields]string{strings.Repeat("spam ", 254) + "ham", "spam"}},
		3: {key: 3, fields: [NumFields]string{"spam eggs ham"}},
		// Frequencies just over what a posting's packed byte holds, one
		// field at a time, and just at it.
		4: {key: 4, fields: [NumFields]string{strings.Repeat("eggs ", 32), "eggs eggs", "eggs"}},
		5: {key: 5, fields: [NumFields]string{strings.Repeat("eggs ", 31), "eggs eggs eggs", "eggs"}},
		6: {key: 6, fields: [NumFields]string{"eggs", "eggs", "eggs eggs"}},
		7: {key: 7, fields: [NumFields]string{strings.Repeat("ham ", 31), "ham ham", "ham"}},
	}
	x := MustIndex(t, docs)
	for _, q := range [][]string{{"spam"}, {"spam", "eggs"}, {"ham"}, {"eggs"}, {"eggs", "ham"}} {
		checkSame(t, fmt.Sprint(q), x.Search(q, nil, 3), reference(docs, q, nil, 3))
	}
	x.Remove(3)
	delete(docs, 3)
	x.Compact()
	for _, q := range [][]string{{"spam"}, {"eggs"}, {"ham"}} {
		checkSame(t, "after compaction", x.Search(q, nil, 7), reference(docs, q, nil, 7))
	}
}

func BenchmarkSearch(b *testing.B) {
	c := newRandomCorpus(9)
	x := New()
	for i := range 100000 {
		d := c.doc(int64(i), 3)
		x.Add(d.key, d.group, d.fields[:]...)
	}
	qs := make([][]string, 64)
	for i := range qs {
		qs[i] = c.query()
	}
	i := 0
	for b.Loop() {
		x.Search(qs[i%len(qs)], nil, 10)
		i++
	}
	b.ReportMetric(float64(x.Bytes())/float64(x.Len()), "index-bytes/row")
}
