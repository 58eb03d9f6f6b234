package retrieval_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

var principalOnce sync.Map // chunks -> *sync.Once

// mustPrincipalStore is mustBenchStore's corpus with readers: every
// tenth document alice's, the others bob's. The other benchmarks read
// as the service view, which readers do not change.
func mustPrincipalStore(b *testing.B, n int) (ingestd.Store, *retrievaltest.Synthetic) {
	s, syn := mustBenchStore(b, n)
	v, _ := principalOnce.LoadOrStore(n, &sync.Once{})
	var err error
	v.(*sync.Once).Do(func() {
		ctx := context.Background()
		for i, d := range syn.Docs {
			doc, e := s.Document(ctx, d.ID())
			if e != nil {
				err = e
				return
			}
			doc.Readers = ingestd.ReadersOf("user:bob@example.com")
			if i%10 == 0 {
				doc.Readers = ingestd.ReadersOf("user:alice@example.com")
			}
			if _, e := s.PutDocument(ctx, doc, nil, nil); e != nil {
				err = e
				return
			}
		}
		err = s.Warm(ctx)
	})
	if err != nil {
		b.Fatal(err)
	}
	return s, syn
}

// BenchmarkRetrievePrincipal10pct measures the full call for a person
// who may read a tenth of the documents against the same call in the
// service view (unfiltered), alternating the two in one run: p50 and
// p99 of each and their ratios. The person's filter runs inside the
// store (the in-memory mirror's allowed rows), never after it.
//
// INGESTD_BENCH_PRINCIPAL_CHUNKS, a comma-separated list of corpus sizes,
// replaces the default 10k and 100k (1000000 builds the 1M-chunk
// corpus, about a quarter of an hour on two cores).
func BenchmarkRetrievePrincipal10pct(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if v := os.Getenv("INGESTD_BENCH_PRINCIPAL_CHUNKS"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 100 {
				b.Fatalf("INGESTD_BENCH_PRINCIPAL_CHUNKS=%q: %q is not a corpus size of at least 100 chunks", v, f)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			s, syn := mustPrincipalStore(b, n)
			svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: embedder.NewLexical(retrievaltest.Dims),
				Installations: retrievaltest.SyntheticInstallations(false)})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			alice := ingestd.NewReader("user:alice@example.com")
			for _, r := range []*ingestd.Reader{nil, alice} { // warm both filters
				if _, err := svc.Retrieve(ctx, ingestd.RetrieveRequest{Query: syn.Queries[0], Reader: r}); err != nil {
					b.Fatal(err)
				}
			}
			var service, person []time.Duration
			served := 0
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				q := syn.Queries[i%len(syn.Queries)]
				for _, r := range []*ingestd.Reader{nil, alice} {
					start := time.Now()
					resp, err := svc.Retrieve(ctx, ingestd.RetrieveRequest{Query: q, Reader: r})
					d := time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					if r == nil {
						service = append(service, d)
						continue
					}
					person = append(person, d)
					served += len(resp.Primary)
				}
			}
			b.StopTimer()
			slices.Sort(service)
			slices.Sort(person)
			p := func(ds []time.Duration, q int) time.Duration { return ds[min(len(ds)-1, len(ds)*q/100)] }
			b.ReportMetric(ms(p(service, 50)), "service-p50-ms")
			b.ReportMetric(ms(p(person, 50)), "person-p50-ms")
			b.ReportMetric(ms(p(service, 99)), "service-p99-ms")
			b.ReportMetric(ms(p(person, 99)), "person-p99-ms")
			b.ReportMetric(float64(p(person, 50))/float64(p(service, 50)), "p50-ratio")
			b.ReportMetric(float64(p(person, 99))/float64(p(service, 99)), "p99-ratio")
			b.ReportMetric(float64(served)/float64(len(person)), "person-primary/op")
		})
	}
}
