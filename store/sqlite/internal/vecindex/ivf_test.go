package vecindex_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkIVFRecall measures what an inverted-file index (IVF: k-means
// into sqrt(n) lists, a query scanning the lists of its nearest
// centroids) would keep of the exact top 10, against the share of rows it
// would scan, on the lexical vectors of Zipf text that the store's
// benchmark corpus is made of and on Gaussian vectors. It is why the store
// scans every row: these vectors have no clusters for the lists to
// follow, so recall@10 reaches 0.98 only when most lists are scanned.
// Run it with go test -run '^$' -bench IVFRecall (it reports metrics, its
// time is the k-means).
func BenchmarkIVFRecall(b *testing.B) {
	const n, dims, k = 40_000, 384, 10
	sets := datasets(n, dims, 50)
	defer sets[0].x.Free()
	defer sets[2].x.Free()
	for _, ds := range sets {
		if ds.name == "lexical passage queries" {
			continue
		}
		b.Run(ds.name, func(b *testing.B) {
			for b.Loop() {
				ivf := trainIVF(ds.vecs, int(math.Sqrt(n)))
				for _, frac := range []float64{0.05, 0.25, 0.5} {
					recall, scanned := ivf.recall(ds, k, max(1, int(frac*float64(len(ivf.centroids)))))
					b.ReportMetric(recall, fmt.Sprintf("recall@10/probe-%.0f%%", 100*frac))
					b.ReportMetric(scanned, fmt.Sprintf("scanned/probe-%.0f%%", 100*frac))
				}
			}
		})
	}
}

type ivf struct {
	centroids [][]float32
	lists     [][]int64
}

func unit(v []float32) []float32 {
	n := 0.0
	for _, f := range v {
		n += float64(f) * float64(f)
	}
	out := make([]float32, len(v))
	for i, f := range v {
		out[i] = float32(float64(f) / math.Sqrt(n))
	}
	return out
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// trainIVF runs spherical k-means (8 rounds on a sample of 30 rows a
// list) and assigns every row to its nearest centroid.
func trainIVF(vecs map[int64][]float32, lists int) *ivf {
	keys := make([]int64, 0, len(vecs))
	for k := range vecs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	rng := rand.New(rand.NewPCG(1, 2))
	var sample [][]float32
	for _, i := range rng.Perm(len(keys))[:min(len(keys), 30*lists)] {
		sample = append(sample, unit(vecs[keys[i]]))
	}
	x := &ivf{centroids: slices.Clone(sample[:lists])}
	for range 8 {
		sums := make([][]float32, lists)
		for c := range sums {
			sums[c] = make([]float32, len(sample[0]))
		}
		for _, v := range sample {
			c := x.nearest(v)
			for j, f := range v {
				sums[c][j] += f
			}
		}
		for c, s := range sums {
			if dot(s, s) > 0 {
				x.centroids[c] = unit(s)
			}
		}
	}
	x.lists = make([][]int64, lists)
	for _, k := range keys {
		c := x.nearest(unit(vecs[k]))
		x.lists[c] = append(x.lists[c], k)
	}
	return x
}

func (x *ivf) nearest(v []float32) int {
	best, score := 0, float32(math.Inf(-1))
	for c, cv := range x.centroids {
		if s := dot(v, cv); s > score {
			best, score = c, s
		}
	}
	return best
}

// recall is the share of the exact top k found by scanning the probe
// lists nearest the query, and the share of rows scanned.
func (x *ivf) recall(ds dataset, k, probe int) (recall, scanned float64) {
	hit, seen := 0, 0
	for _, q := range ds.queries {
		u := unit(q)
		order := make([]int, len(x.centroids))
		for c := range order {
			order[c] = c
		}
		slices.SortFunc(order, func(a, b int) int {
			sa, sb := dot(u, x.centroids[a]), dot(u, x.centroids[b])
			switch {
			case sa > sb:
				return -1
			case sa < sb:
				return 1
			}
			return 0
		})
		sub := map[int64][]float32{}
		for _, c := range order[:probe] {
			for _, key := range x.lists[c] {
				sub[key] = ds.vecs[key]
			}
		}
		seen += len(sub)
		got := map[int64]bool{}
		for _, key := range exact(sub, nil, nil, q, k) {
			got[key] = true
		}
		for _, key := range exact(ds.vecs, nil, nil, q, k) {
			if got[key] {
				hit++
			}
		}
	}
	return float64(hit) / float64(k*len(ds.queries)), float64(seen) / float64(len(ds.vecs)*len(ds.queries))
}
