package vecindex_test

import (
	"fmt"
	"math"
	"slices"
	"sort"
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

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

// exact is the baseline: the k keys of vecs (allowed by group) with the
// highest cosine to q, ties by lower key.
func exact(vecs map[int64][]float32, groups map[int64]int32, allowed []bool, q []float32, k int) []int64 {
	type hit struct {
		key int64
		s   float64
	}
	var hits []hit
	for key, v := range vecs {
		if allowed != nil {
			g := groups[key]
			if int(g) >= len(allowed) || !allowed[g] {
				continue
			}
		}
		hits = append(hits, hit{key, cosine(q, v)})
	}
	sort.Slice(hits, func(i, j int) bool {
		return hits[i].s > hits[j].s || (hits[i].s == hits[j].s && hits[i].key < hits[j].key)
	})
	var out []int64
	for _, h := range hits[:min(k, len(hits))] {
		out = append(out, h.key)
	}
	return out
}

func TestAddRemoveGroups(t *testing.T) {
	c := corpus.New(1, 2000)
	x := vecindex.New(16)
	defer x.Free()
	vecs := map[int64][]float32{}
	groups := map[int64]int32{}
	for k := int64(1); k <= 5000; k++ { // three blocks
		v := c.Gaussian(16)
		vecs[k], groups[k] = v, int32(k%3)
		if !x.Add(k, int32(k%3), v) {
			t.Fatalf("Add(%d) refused", k)
		}
	}
	if x.Add(99999, 0, make([]float32, 16)) {
		t.Fatal("Add of the zero vector accepted")
	}
	if x.Add(99998, 0, make([]float32, 15)) {
		t.Fatal("Add of a 15-d vector to a 16-d index accepted")
	}
	for k := int64(1); k <= 5000; k += 2 {
		if !x.Remove(k) {
			t.Fatalf("Remove(%d) = false", k)
		}
		delete(vecs, k)
		delete(groups, k)
	}
	if x.Remove(1) {
		t.Fatal("Remove of a removed key = true")
	}
	if got, want := x.Len(), 2500; got != want {
		t.Fatalf("Len = %d, want %d", got, want)
	}
	x.SetGroup(2, 7)
	groups[2] = 7
	x.Add(4, 1, vecs[1001]) // replace key 4's vector and group
	vecs[4], groups[4] = vecs[1001], 1
	q := vecs[2]
	allowed := []bool{true, false, false, false, false, false, false, true}
	for _, o := range []*vecindex.Options{nil, {Parallel: 3}} {
		got := x.Search(q, allowed, 40, o)
		if len(got) == 0 || got[0].Key != 2 {
			t.Fatalf("options %+v: top = %v, want key 2 first", o, got)
		}
		for _, r := range got {
			if r.Key%2 == 1 {
				t.Fatalf("removed key %d returned", r.Key)
			}
			if g := groups[r.Key]; g != 0 && g != 7 {
				t.Fatalf("key %d of group %d returned with only groups 0 and 7 allowed", r.Key, g)
			}
			if got, want := float64(r.Score), cosine(q, vecs[r.Key]); math.Abs(got-want) > 0.01 {
				t.Fatalf("key %d: estimate %.4f, cosine %.4f", r.Key, got, want)
			}
		}
		// The exact top 10 is inside the top 40 estimates.
		for _, k := range exact(vecs, groups, allowed, q, 10) {
			if !slices.Contains(keys(got), k) {
				t.Fatalf("options %+v: exact hit %d not among the top 40 estimates", o, k)
			}
		}
	}
	if got := x.Search(q, make([]bool, 8), 5, nil); len(got) != 0 {
		t.Fatalf("nothing allowed: %v", got)
	}
	if got := x.Search(q, []bool{}, 5, nil); len(got) != 0 {
		t.Fatalf("empty allowed: %v", got)
	}
	if got := x.Search(make([]float32, 16), nil, 5, nil); len(got) != 0 {
		t.Fatalf("zero query: %v", got)
	}
	// Vector gives the stored vector back, normalised, within the
	// quantisation.
	v := x.Vector(2)
	if got := cosine(v, vecs[2]); got < 0.999 {
		t.Fatalf("Vector(2) cosine with the original %.5f", got)
	}
	if x.Vector(1) != nil {
		t.Fatal("Vector of a removed key")
	}
	for x.Len() > 0 { // remove everything, blocks included
		for k := range vecs {
			x.Remove(k)
		}
	}
	if got := x.Search(q, nil, 5, nil); len(got) != 0 {
		t.Fatalf("empty index: %v", got)
	}
}

// MoveTo carries a row to another index as it was held: the moved rows
// score the same there, and leave no trace behind.
func TestKeysOfMoveTo(t *testing.T) {
	c := corpus.New(2, 2000)
	src, dst := vecindex.New(16), vecindex.New(16)
	defer src.Free()
	defer dst.Free()
	for k := int64(1); k <= 3000; k++ { // two blocks
		src.Add(k, int32(k%5), c.Gaussian(16))
	}
	q := c.Gaussian(16)
	before := map[int64]float32{}
	for _, r := range src.Search(q, nil, 3000, nil) {
		before[r.Key] = r.Score
	}
	keys := src.KeysOf([]bool{false, false, true}) // group 2
	if got, want := len(keys), 600; got != want {
		t.Fatalf("KeysOf(group 2) = %d keys, want %d", got, want)
	}
	for _, k := range keys {
		if !src.MoveTo(dst, k) {
			t.Fatalf("MoveTo(%d) = false", k)
		}
	}
	if src.MoveTo(dst, keys[0]) {
		t.Fatal("MoveTo of a key moved already = true")
	}
	if got, want := src.Len()+dst.Len(), 3000; got != want {
		t.Fatalf("%d + %d rows after the moves, want %d", src.Len(), dst.Len(), want)
	}
	if got := src.KeysOf([]bool{false, false, true}); len(got) != 0 {
		t.Fatalf("group 2 still in the source: %v", got)
	}
	for _, x := range []*vecindex.Index{src, dst} {
		for _, r := range x.Search(q, nil, 3000, nil) {
			if (r.Group == 2) != (x == dst) {
				t.Fatalf("key %d of group %d in the wrong index", r.Key, r.Group)
			}
			if got, want := r.Score, before[r.Key]; got != want {
				t.Fatalf("key %d scores %v after the move, %v before", r.Key, got, want)
			}
		}
	}
}

// recall is the share of the exact top k that the index finds when asked
// for cand rows that are then rescored exactly (what package store/sqlite
// does), and when its own top k is taken as is.
func recall(ds dataset, k, cand int) (rescored, estimate float64) {
	hitR, hitE, total := 0, 0, 0
	for _, q := range ds.queries {
		want := map[int64]bool{}
		for _, key := range exact(ds.vecs, nil, nil, q, k) {
			want[key] = true
		}
		res := ds.x.Search(q, nil, cand, nil)
		for _, r := range res[:min(k, len(res))] {
			if want[r.Key] {
				hitE++
			}
		}
		var keysR []int64
		for _, r := range res {
			keysR = append(keysR, r.Key)
		}
		sub := map[int64][]float32{}
		for _, key := range keysR {
			sub[key] = ds.vecs[key]
		}
		for _, key := range exact(sub, nil, nil, q, k) {
			if want[key] {
				hitR++
			}
		}
		total += len(want)
	}
	return float64(hitR) / float64(total), float64(hitE) / float64(total)
}

type dataset struct {
	name    string
	x       *vecindex.Index
	vecs    map[int64][]float32
	queries [][]float32
}

// datasets builds n rows of lexical-like vectors of Zipf text (queried by a
// few words of a row's text, or by a passage) and of random unit vectors.
func datasets(n, dims, nq int) []dataset {
	c := corpus.New(7, 30000)
	lex := vecindex.New(dims)
	lexVecs := map[int64][]float32{}
	var texts []string
	for i := range n {
		text := c.Text(40 + c.Intn(60))
		texts = append(texts, text)
		v := corpus.Vector(text, dims)
		lexVecs[int64(i)] = v
		lex.Add(int64(i), 0, v)
	}
	var lq, lqLong, gq [][]float32
	for range nq {
		lq = append(lq, corpus.Vector(strings.Join(c.Query(texts[c.Intn(n)], 2+c.Intn(5)), " "), dims))
		t := texts[c.Intn(n)]
		lqLong = append(lqLong, corpus.Vector(c.Text(40)+" "+t[:min(len(t), 200)], dims))
	}
	gauss := vecindex.New(dims)
	gaussVecs := map[int64][]float32{}
	for i := range n {
		v := c.Gaussian(dims)
		gaussVecs[int64(i)] = v
		gauss.Add(int64(i), 0, v)
	}
	for range nq {
		gq = append(gq, c.Gaussian(dims))
	}
	return []dataset{
		{"lexical short queries", lex, lexVecs, lq},
		{"lexical passage queries", lex, lexVecs, lqLong},
		{"gaussian", gauss, gaussVecs, gq},
	}
}

// Every estimate is within its Err of the exact cosine, and every Err
// within the index's ErrBound for the query: the store prunes its
// rescoring by the first and knows from the second when a row Search
// left out could still rank.
func TestErrBound(t *testing.T) {
	sets := datasets(3000, 384, 40)
	defer sets[0].x.Free()
	defer sets[2].x.Free()
	for _, ds := range sets {
		worst, mean, n := 0.0, 0.0, 0
		for _, q := range ds.queries {
			bound := ds.x.ErrBound(q)
			for _, r := range ds.x.Search(q, nil, ds.x.Len(), nil) {
				if r.Err > bound {
					t.Fatalf("%s: key %d: Err %.3g over ErrBound %.3g", ds.name, r.Key, r.Err, bound)
				}
				off := math.Abs(cosine(q, ds.vecs[r.Key]) - float64(r.Score))
				if off > float64(r.Err) {
					t.Fatalf("%s: key %d estimated %.6f, cosine %.6f: off by %.2g, Err %.2g", ds.name, r.Key, r.Score, cosine(q, ds.vecs[r.Key]), off, r.Err)
				}
				worst = max(worst, off/float64(r.Err))
				mean += float64(r.Err)
				n++
			}
		}
		t.Logf("%s: the largest error was %.2f of its bound; mean bound %.4f", ds.name, worst, mean/float64(n))
	}
}

// TestRecall measures recall@10 against exact cosine: of the estimates
// alone, and of the top 20 estimates rescored exactly (what the store
// serves).
func TestRecall(t *testing.T) {
	n := 20000
	if testing.Short() {
		n = 5000
	}
	sets := datasets(n, 384, 100)
	defer sets[0].x.Free()
	defer sets[2].x.Free()
	for _, ds := range sets {
		rescored, estimate := recall(ds, 10, 20)
		t.Logf("%s, %d rows: recall@10 %.3f rescoring the top 20, %.3f from the estimates alone", ds.name, n, rescored, estimate)
		if rescored < 0.99 {
			t.Errorf("%s: recall@10 = %.3f rescoring the top 20, want >= 0.99", ds.name, rescored)
		}
		if estimate < 0.95 {
			t.Errorf("%s: recall@10 = %.3f from the estimates, want >= 0.95", ds.name, estimate)
		}
	}
}

func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		ds := datasets(n, 384, 64)
		for _, d := range ds {
			if strings.Contains(d.name, "passage") {
				continue
			}
			b.Run(fmt.Sprintf("%s/rows=%d", strings.Fields(d.name)[0], n), func(b *testing.B) {
				i := 0
				for b.Loop() {
					d.x.Search(d.queries[i%len(d.queries)], nil, 20, nil)
					i++
				}
			})
		}
		ds[0].x.Free()
		ds[2].x.Free()
	}
}
