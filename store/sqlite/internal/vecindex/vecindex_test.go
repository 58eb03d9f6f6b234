package vecindex_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd/store/internal/corpus"
	"github.com/ingestd/ingestd/store/sqlite/internal/vecindex"
)

func keys(rs []vecindex.Result) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = r.Key
	}
	return out
}

func TestAddRemoveGroups(t *testing.T) {
	c := corpus.New(1, 2000)
	x := vecindex.New(16)
	vecs := map[int64][]float32{}
	for k := int64(1); k <= 300; k++ {
		v := c.Gaussian(16)
		vecs[k] = v
		if !x.Add(k, int32(k%3), v) {
			t.Fatalf("Add(%d) refused", k)
		}
	}
	if x.Add(999, 0, make([]float32, 16)) {
		t.Fatal("Add of the zero vector accepted")
	}
	if x.Add(998, 0, make([]float32, 15)) {
		t.Fatal("Add of a 15-d vector to a 16-d index accepted")
	}
	for k := int64(1); k <= 300; k += 2 {
		if !x.Remove(k) {
			t.Fatalf("Remove(%d) = false", k)
		}
	}
	if x.Remove(1) {
		t.Fatal("Remove of a removed key = true")
	}
	if got, want := x.Len(), 150; got != want {
		t.Fatalf("Len = %d, want %d", got, want)
	}
	x.SetGroup(2, 7)
	x.Add(4, 1, vecs[1]) // replace key 4's vector and group
	vecs[4] = vecs[1]
	q := vecs[2]
	allowed := []bool{true, false, false, false, false, false, false, true}
	for _, o := range []*vecindex.Options{nil, {Candidates: 20}, {Candidates: 20, Parallel: 3}, {Candidates: 20, Planes: 1}} {
		got := x.Search(q, allowed, 5, o)
		want := x.Exact(q, allowed, 5)
		if len(got) == 0 || got[0].Key != 2 {
			t.Fatalf("options %+v: top = %v, want key 2 first", o, got)
		}
		for _, r := range got {
			if r.Key%2 == 1 {
				t.Fatalf("removed key %d returned", r.Key)
			}
			if r.Key != 2 && r.Group != 0 {
				t.Fatalf("key %d of group %d returned with only groups 0 and 7 allowed", r.Key, r.Group)
			}
		}
		if o == nil && !slices.Equal(keys(got), keys(want)) {
			t.Fatalf("small index: Search = %v, Exact = %v", keys(got), keys(want))
		}
	}
	if got := x.Search(q, make([]bool, 8), 5, nil); len(got) != 0 {
		t.Fatalf("nothing allowed: %v", got)
	}
	if got := x.Search(make([]float32, 16), nil, 5, nil); len(got) != 0 {
		t.Fatalf("zero query: %v", got)
	}
}

// recall is the share of the exact top k that Search also returns.
func recall(x *vecindex.Index, queries [][]float32, k int, o *vecindex.Options) float64 {
	hit, total := 0, 0
	for _, q := range queries {
		want := map[int64]bool{}
		for _, r := range x.Exact(q, nil, k) {
			want[r.Key] = true
		}
		for _, r := range x.Search(q, nil, k, o) {
			if want[r.Key] {
				hit++
			}
		}
		total += len(want)
	}
	return float64(hit) / float64(total)
}

type dataset struct {
	name    string
	x       *vecindex.Index
	queries [][]float32
}

// datasets builds n rows of lexical-like vectors of Zipf text (queried by a
// few words of a row's text) and of random unit vectors.
func datasets(n, dims, nq int) []dataset {
	c := corpus.New(7, 30000)
	lex := vecindex.New(dims)
	var texts []string
	for i := range n {
		text := c.Text(120 + c.Intn(200))
		texts = append(texts, text)
		lex.Add(int64(i), 0, corpus.Vector(text, dims))
	}
	var lq, lqLong, gq [][]float32
	for range nq {
		lq = append(lq, corpus.Vector(strings.Join(c.Query(texts[c.Intn(n)], 2+c.Intn(5)), " "), dims))
		lqLong = append(lqLong, corpus.Vector(c.Text(40)+" "+texts[c.Intn(n)][:200], dims))
	}
	gauss := vecindex.New(dims)
	for i := range n {
		gauss.Add(int64(i), 0, c.Gaussian(dims))
	}
	for range nq {
		gq = append(gq, c.Gaussian(dims))
	}
	return []dataset{
		{"lexical short queries", lex, lq},
		{"lexical passage queries", lex, lqLong},
		{"gaussian", gauss, gq},
	}
}

// TestRecall measures recall@10 of the quantised search against exact
// cosine. The bar is for the lexical-like data retrieval serves; random
// Gaussian vectors (no structure at all) are the worst case and are only
// reported.
func TestRecall(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 5000
	}
	for _, ds := range datasets(n, 384, 100) {
		for _, o := range []vecindex.Options{{}, {Planes: 6}, {Candidates: n / 10}} {
			r := recall(ds.x, ds.queries, 10, &o)
			t.Logf("%s, %d rows, options %+v: recall@10 = %.3f", ds.name, n, o, r)
			// The bar holds for short queries (the sparse path) and for
			// dense vectors without structure (the signature path); long
			// lexical passages as queries are only reported.
			if o == (vecindex.Options{}) && !strings.Contains(ds.name, "passage") && r < 0.95 {
				t.Errorf("%s: recall@10 = %.3f with default options, want >= 0.95", ds.name, r)
			}
		}
	}
}

func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		for _, ds := range datasets(n, 384, 64) {
			if strings.Contains(ds.name, "passage") {
				continue
			}
			b.Run(fmt.Sprintf("%s/rows=%d/quantised", strings.Fields(ds.name)[0], n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					ds.x.Search(ds.queries[i%len(ds.queries)], nil, 10, nil)
					i++
				}
			})
			b.Run(fmt.Sprintf("%s/rows=%d/exact", strings.Fields(ds.name)[0], n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					ds.x.Exact(ds.queries[i%len(ds.queries)], nil, 10)
					i++
				}
			})
		}
	}
}
