package retrieval_test

import (
	"context"
	"testing"

	"github.com/ingestd/ingestd/provenance"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// BenchmarkVerdictTiers measures the verdict's tier lookup alone: the tiers
// in force of 30 documents (an answer's three blocks) from the warm SQLite
// store of 10k chunks, without and with a tier_by rule to judge.
func BenchmarkVerdictTiers(b *testing.B) {
	s, syn := mustBenchStore(b, 10_000)
	var ids []string
	for i := 0; len(ids) < 30; i += 11 {
		ids = append(ids, syn.Docs[i%len(syn.Docs)].ID())
	}
	for _, tierBy := range []bool{false, true} {
		name := "rules=none"
		if tierBy {
			name = "rules=tier_by"
		}
		b.Run(name, func(b *testing.B) {
			d := provenance.Declare(retrievaltest.SyntheticInstallations(tierBy))
			ctx := context.Background()
			for b.Loop() {
				tiers, err := d.Tiers(ctx, s, ids)
				if err != nil || len(tiers) != len(ids) {
					b.Fatalf("tiers = %d of %d, %v", len(tiers), len(ids), err)
				}
			}
		})
	}
}
