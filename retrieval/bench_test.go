package retrieval_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
	"github.com/ingestd/ingestd/store/sqlite"
)

// timedStore measures the time spent in TierFacts, the store half of the
// verdict, and in the rankers.
type timedStore struct {
	ingestd.Store
	mu               sync.Mutex
	tiers, text, vec time.Duration
}

func (s *timedStore) add(d *time.Duration, start time.Time) {
	s.mu.Lock()
	*d += time.Since(start)
	s.mu.Unlock()
}

func (s *timedStore) SearchText(ctx context.Context, q string, f ingestd.Filter, limit int) ([]ingestd.Hit, error) {
	defer s.add(&s.text, time.Now())
	return s.Store.SearchText(ctx, q, f, limit)
}

func (s *timedStore) SearchVector(ctx context.Context, v []float32, f ingestd.Filter, limit int) ([]ingestd.Hit, error) {
	defer s.add(&s.vec, time.Now())
	return s.Store.SearchVector(ctx, v, f, limit)
}

func (s *timedStore) TierFacts(ctx context.Context, ids, keys []string) (map[string]ingestd.TierFacts, error) {
	defer s.add(&s.tiers, time.Now())
	return s.Store.TierFacts(ctx, ids, keys)
}

var benchStores sync.Map // chunks -> *benchStore

type benchStore struct {
	once sync.Once
	s    *sqlite.Store
	syn  *retrievaltest.Synthetic
	err  error
}

// mustBenchStore builds (once per size and process) a store holding a
// synthetic corpus of about n chunks in a temporary directory.
func mustBenchStore(b *testing.B, n int) (*sqlite.Store, *retrievaltest.Synthetic) {
	b.Helper()
	v, _ := benchStores.LoadOrStore(n, &benchStore{})
	bs := v.(*benchStore)
	bs.once.Do(func() {
		dir, err := os.MkdirTemp("", "ingestd-bench")
		if err != nil {
			bs.err = err
			return
		}
		benchDirs = append(benchDirs, dir)
		// As serve opens it: the mirror keeps what the tier_by rules read.
		bs.s, bs.err = sqlite.Open(context.Background(), filepath.Join(dir, "bench.db"),
			&sqlite.Options{MetaKeys: provenance.Declare(retrievaltest.SyntheticInstallations(true)).MetaKeys()})
		if bs.err != nil {
			return
		}
		bs.syn = retrievaltest.NewSynthetic(n, 1)
		bs.err = retrievaltest.Put(context.Background(), bs.s, embedder.NewLexical(retrievaltest.Dims), bs.syn.Docs...)
		if bs.err == nil {
			// As serve and sync do after bulk writes: merge the full-text
			// index, then load the in-memory indexes.
			if bs.err = bs.s.Optimize(context.Background()); bs.err == nil {
				bs.err = bs.s.Warm(context.Background())
			}
		}
	})
	if bs.err != nil {
		b.Fatalf("bench store: %v", bs.err)
	}
	return bs.s, bs.syn
}

var benchDirs []string

func TestMain(m *testing.M) {
	code := m.Run()
	benchStores.Range(func(_, v any) bool {
		if s := v.(*benchStore).s; s != nil {
			s.Close(context.Background())
		}
		return true
	})
	for _, d := range benchDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// BenchmarkRetrieve measures the full call (three blocks and the verdict,
// default options, top_k 8) over a synthetic corpus, and reports p50/p99
// latency and the verdict's share: the time in the store's TierFacts
// (the facts the tiers in force are judged from) plus firewall.Decide over
// the served documents, against the whole call. rules=tier_by declares one
// installation with a tier_by_author_association rule, so every lookup
// reads metadata too. grounding=auto asks with grounding auto, and
// trusted_view adds the trusted view: their cost against the default
// request.
func BenchmarkRetrieve(b *testing.B) {
	plain := func(q string) ingestd.RetrieveRequest { return ingestd.RetrieveRequest{Query: q} }
	auto := func(q string) ingestd.RetrieveRequest {
		return ingestd.RetrieveRequest{Query: q, Grounding: ingestd.GroundingAuto}
	}
	view := func(q string) ingestd.RetrieveRequest {
		return ingestd.RetrieveRequest{Query: q, Grounding: ingestd.GroundingAuto, TrustedView: true}
	}
	for _, n := range []int{10_000, 100_000} {
		for _, v := range []struct {
			name   string
			tierBy bool
			req    func(q string) ingestd.RetrieveRequest
		}{
			{"", false, plain},
			{",rules=tier_by", true, plain},
			{",grounding=auto", false, auto},
			{",grounding=auto,trusted_view", false, view},
		} {
			b.Run(fmt.Sprintf("chunks=%d", n)+v.name, func(b *testing.B) { benchRetrieve(b, n, v.tierBy, v.req) })
		}
	}
}

func benchRetrieve(b *testing.B, n int, tierBy bool, req func(q string) ingestd.RetrieveRequest) {
	s, syn := mustBenchStore(b, n)
	ts := &timedStore{Store: s}
	svc, err := retrieval.New(retrieval.Options{Store: ts, Embedder: embedder.NewLexical(retrievaltest.Dims),
		Installations: retrievaltest.SyntheticInstallations(tierBy)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// Warm the store's indexes.
	if _, err := svc.Retrieve(ctx, ingestd.RetrieveRequest{Query: syn.Queries[0]}); err != nil {
		b.Fatal(err)
	}
	ts.tiers, ts.text, ts.vec = 0, 0, 0
	durs := make([]time.Duration, 0, b.N)
	var total, decide time.Duration
	var blocked, served int
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		resp, err := svc.Retrieve(ctx, req(syn.Queries[i%len(syn.Queries)]))
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		durs = append(durs, d)
		total += d
		// Decide again over the same input, to time it alone.
		ids := docIDs(resp)
		tiers := map[string]ingestd.Tier{}
		for _, blk := range [][]ingestd.ServedChunk{resp.Primary, resp.Expanded, resp.Rejected} {
			for _, c := range blk {
				tiers[c.DocumentID] = ingestd.Tier(c.Tier)
			}
		}
		ds := time.Now()
		firewall.Decide(ingestd.ModeEnforce, ids, tiers)
		decide += time.Since(ds)
		served += len(resp.Primary) + len(resp.Expanded) + len(resp.Rejected)
		if !resp.Verdict.ToolsAllowed {
			blocked++
		}
	}
	b.StopTimer()
	slices.Sort(durs)
	b.ReportMetric(ms(durs[len(durs)/2]), "p50-ms")
	b.ReportMetric(ms(durs[min(len(durs)-1, len(durs)*99/100)]), "p99-ms")
	b.ReportMetric(100*float64(ts.tiers+decide)/float64(total), "verdict-%")
	b.ReportMetric(float64(served)/float64(len(durs)), "chunks/op")
	// Time inside the store's rankers, summed over calls (they run
	// concurrently, so these overlap).
	b.ReportMetric(ms(ts.text)/float64(len(durs)), "text-search-ms/op")
	b.ReportMetric(ms(ts.vec)/float64(len(durs)), "vector-search-ms/op")
	b.ReportMetric(100*float64(blocked)/float64(len(durs)), "blocked-%")
}

func docIDs(resp *ingestd.RetrieveResponse) []string {
	var ids []string
	for _, blk := range [][]ingestd.ServedChunk{resp.Primary, resp.Expanded, resp.Rejected} {
		for _, c := range blk {
			ids = append(ids, c.DocumentID)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
