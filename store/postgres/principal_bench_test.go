package postgres_test

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/store/postgres"
)

var benchReaderIndex = flag.Bool("pgbench.reader-index", true, "give the person's principal of BenchmarkRetrievePrincipal10pct a reader index")

// BenchmarkRetrievePrincipal10pct is BenchmarkRetrieve's whole call for
// a person who may read a tenth of the documents (every tenth alice's,
// the rest bob's, set once on the benchmark corpus) against the same
// call in the service view, alternating the two on the same queries:
// p50 and p99 of each and their ratios. The filter is the ranking
// query's own (c.readers && $n, the GIN index beside it); alice's vector
// search walks her reader index.
func BenchmarkRetrievePrincipal10pct(b *testing.B) {
	s, dbURL := benchStore(b, &postgres.Options{EfSearch: *benchEf})
	c := mustConnect(b, dbURL)
	for _, q := range []string{
		`UPDATE documents SET readers = CASE WHEN ('x' || substr(md5(id), 1, 8))::bit(32)::int % 10 = 0
			THEN '{user:alice@example.com}'::text[] ELSE '{user:bob@example.com}'::text[] END WHERE readers IS NULL`,
		`UPDATE chunks c SET readers = d.readers FROM documents d WHERE d.id = c.document_id AND c.readers IS DISTINCT FROM d.readers`,
		"VACUUM ANALYZE",
	} {
		if _, err := c.Exec(ctx(), q); err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	// alice's principal has a reader index (readerindex.go) unless
	// -pgbench.reader-index=false, which measures her search through the
	// whole graph.
	if *benchReaderIndex {
		if err := s.IndexReader(ctx(), "user:alice@example.com", postgres.RebuildOptions{MaintenanceWorkMem: "512MB"}); err != nil {
			b.Fatal(err)
		}
	} else if err := s.DropReaderIndex(ctx(), "user:alice@example.com"); err != nil {
		b.Fatal(err)
	}
	var share float64
	if err := c.QueryRow(ctx(), `SELECT avg(('user:alice@example.com' = ANY(readers))::int) FROM chunks`).Scan(&share); err != nil {
		b.Fatal(err)
	}
	vs, ts := newCorpus(2).queries()
	emb := lookupEmbedder{}
	for i, q := range ts {
		emb[q] = vs[i]
	}
	var insts []ingestd.Installation
	for i := range 5 {
		insts = append(insts, ingestd.Installation{ID: fmt.Sprintf("inst%d", i), Kind: "files", Tier: ingestd.TierTrustedInternal})
	}
	svc, err := retrieval.New(retrieval.Options{Store: s, Embedder: emb, Installations: insts})
	if err != nil {
		b.Fatal(err)
	}
	alice := ingestd.NewReader("user:alice@example.com")
	var service, person latencies
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := ts[i%len(ts)]
		for _, r := range []*ingestd.Reader{nil, alice} {
			t := time.Now()
			resp, err := svc.Retrieve(ctx(), ingestd.RetrieveRequest{Query: q, TopK: benchTopK, Reader: r})
			d := time.Since(t)
			if err != nil {
				b.Fatal(err)
			}
			if len(resp.Primary) == 0 {
				b.Fatalf("query %q (reader %v): no primary chunks", q, r)
			}
			if r == nil {
				service = append(service, d)
			} else {
				person = append(person, d)
			}
		}
	}
	b.StopTimer()
	service.report(b, "service-")
	person.report(b, "person-")
	q := func(l latencies, p float64) float64 { return float64(sortedQ(l, p)) }
	b.ReportMetric(q(person, 0.5)/q(service, 0.5), "p50-ratio")
	b.ReportMetric(q(person, 0.99)/q(service, 0.99), "p99-ratio")
	b.ReportMetric(share, "readable-share")
}

func sortedQ(l latencies, p float64) time.Duration {
	s := slices.Clone(l)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1))]
}
