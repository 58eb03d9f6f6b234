package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

const benchDocs = 10_000

// benchItems are n deterministic markdown documents of a few paragraphs.
func benchItems(n int) []ingestd.Item {
	words := strings.Fields("refund invoice deploy rollback on-call escalation customer ticket outage " +
		"database migration release checklist incident postmortem pager latency budget quota " +
		"mailbox support handbook policy approval transfer account webhook retry backoff")
	r := rand.New(rand.NewPCG(1, 2))
	items := make([]ingestd.Item, n)
	for i := range items {
		var b strings.Builder
		fmt.Fprintf(&b, "# Document %d\n\n", i)
		for p := range 3 {
			fmt.Fprintf(&b, "## Part %d\n\n", p)
			for range 40 + r.IntN(40) {
				b.WriteString(words[r.IntN(len(words))])
				b.WriteByte(' ')
			}
			b.WriteString("\n\n")
		}
		items[i] = ingestd.Item{ExternalID: fmt.Sprintf("doc-%05d.md", i), ItemKind: "file",
			Title: fmt.Sprintf("Document %d", i), Format: ingestd.FormatMarkdown, Text: b.String()}
	}
	return items
}

type benchSource struct{ items []ingestd.Item }

func (s benchSource) Sync(ctx context.Context, pass ingestd.Pass) error {
	pass.Total(len(s.items))
	for _, it := range s.items {
		if err := pass.Put(ctx, it); err != nil {
			return err
		}
	}
	pass.Complete()
	return nil
}

// BenchmarkIngest compares ingesting the same 10,000 documents with the
// in-process library call (pipeline.Sync) and through JetStream on the
// embedded server (SyncDispatch publishes item jobs, a worker ingests
// them, stored events are published), unsigned and signed. Run with
// -benchtime=1x.
func BenchmarkIngest(b *testing.B) {
	items := benchItems(benchDocs)
	inst := ingestd.Installation{ID: "bench", Kind: "files", Tier: ingestd.TierTrustedInternal}
	newPipeline := func(b *testing.B, onStored func(context.Context, *ingestd.Document)) (*pipeline.Pipeline, ingestd.Store) {
		st := sqlitetest.MustOpenPath(b, filepath.Join(b.TempDir(), "ingestd.db"), nil)
		p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewLexical(384), OnStored: onStored})
		if err != nil {
			b.Fatal(err)
		}
		return p, st
	}

	b.Run("inprocess", func(b *testing.B) {
		var elapsed time.Duration
		for range b.N {
			b.StopTimer()
			p, _ := newPipeline(b, nil)
			b.StartTimer()
			start := time.Now()
			sum, err := p.Sync(context.Background(), inst, benchSource{items}, nil)
			if err != nil || sum.Added != benchDocs {
				b.Fatalf("sync: %+v, %v", sum, err)
			}
			elapsed += time.Since(start)
		}
		b.ReportMetric(float64(benchDocs*b.N)/elapsed.Seconds(), "docs/s")
	})

	// signed runs the same with a job key: every job signed by Publish
	// and verified by the worker.
	for _, run := range []struct {
		conc   int
		signed bool
	}{{1, false}, {4, false}, {4, true}} {
		name := fmt.Sprintf("jetstream-embedded/concurrency=%d", run.conc)
		if run.signed {
			name = fmt.Sprintf("jetstream-embedded-signed/concurrency=%d", run.conc)
		}
		conc := run.conc
		b.Run(name, func(b *testing.B) {
			var elapsed time.Duration
			for range b.N {
				b.StopTimer()
				e := MustEmbedded(b)
				var o *Options
				if run.signed {
					o = &Options{JobKey: testKey}
				}
				q := MustQueue(b, e, o)
				var stored atomic.Int64
				p, _ := newPipeline(b, func(ctx context.Context, doc *ingestd.Document) {
					if err := q.PublishStored(ctx, doc); err != nil {
						b.Error(err)
					}
					stored.Add(1)
				})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- q.RunWorker(ctx, func(ctx context.Context, job ingestd.Job) error {
						if job.Kind == ingestd.JobSync {
							_, err := p.SyncDispatch(ctx, inst, benchSource{items}, nil, q.Publish)
							return err
						}
						_, err := p.Ingest(ctx, inst, *job.Item)
						return err
					}, WorkerOptions{Concurrency: conc})
				}()
				b.StartTimer()
				start := time.Now()
				if err := q.Publish(ctx, ingestd.Job{Kind: ingestd.JobSync, Installation: inst.ID}, "bench-pass"); err != nil {
					b.Fatal(err)
				}
				deadline := time.Now().Add(10 * time.Minute)
				for stored.Load() < benchDocs {
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d documents stored after 10 minutes", stored.Load(), benchDocs)
					}
					time.Sleep(time.Millisecond)
				}
				elapsed += time.Since(start)
				b.StopTimer()
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(benchDocs*b.N)/elapsed.Seconds(), "docs/s")
		})
	}
}

// BenchmarkJobSignature sets the cost of signing and verifying one item
// job (a benchmark document, about 3 KB of JSON) against encoding it,
// which every publish does anyway.
func BenchmarkJobSignature(b *testing.B) {
	it := benchItems(1)[0]
	job := ingestd.Job{Kind: ingestd.JobItem, Installation: "bench", Item: &it}
	subject := JobsPrefix + "item.bench"
	k := keys{testKey}
	b.Run("encode", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(job); err != nil {
				b.Fatal(err)
			}
		}
	})
	data, _ := json.Marshal(job)
	b.Run("sign+verify", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for range b.N {
			if r := k.verify(subject, "m", data, k.sign(subject, "m", data)); r != "" {
				b.Fatal(r)
			}
		}
	})
}
