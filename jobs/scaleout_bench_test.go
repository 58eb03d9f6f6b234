package jobs

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkScaleOut compares, in one run and on the same corpus, the
// deployment shapes of the real binary:
//
//   - embedded: one `serve --role all` process on the in-process NATS
//     server (the default deployment);
//   - cluster-1w: a three-node nats-server cluster (INGESTD_TEST_NATS_SERVER;
//     streams on three replicas, jobs signed) with one `--role api` and one
//     `--role worker`;
//   - cluster-2w: the same with two workers.
//
// For each it measures ingest throughput (a sync pass of 2,000 files from
// the POST that queues it until the last document is stored, per worker
// process; 1.5 KB and three chunks a document, 384-dimension lexical
// vectors), the CPU the worker processes and the nats-servers spent per
// document, on PostgreSQL the bytes the chunks table and its indexes take
// per chunk, and the latency from a webhook delivery's 202 to its document
// being retrievable (stored with its chunks, seen by polling the store
// every 5 ms) for 200 deliveries sent 20 a second to an otherwise idle
// deployment. The headline metrics are ratios against embedded, which runs
// first and last (their mean is the baseline).
//
// It needs nats-server, and runs per store: SQLite (a file the processes
// share) and PostgreSQL when INGESTD_TEST_POSTGRES_URL is set.
//
//	INGESTD_TEST_NATS_SERVER=$(command -v nats-server) \
//	INGESTD_TEST_POSTGRES_URL=postgres://... \
//	go test ./jobs -run '^$' -bench BenchmarkScaleOut -benchtime 1x
func BenchmarkScaleOut(b *testing.B) {
	for _, st := range []struct {
		name  string
		setup storeSetup
	}{{"postgres", postgresStore}, {"sqlite", sqliteStore}} {
		b.Run(st.name, func(b *testing.B) {
			for b.Loop() {
				benchScaleOut(b, st.setup)
			}
		})
	}
}

const (
	scaleDims     = 384 // the embedder's default
	scaleDocs     = 2000
	scaleHooks    = 200
	scaleInterval = 50 * time.Millisecond
)

// shapeResult is what one deployment shape measured.
type shapeResult struct {
	docsPerSec        float64 // whole deployment
	workers           int
	workerCPUPerDoc   time.Duration // ingestd worker processes, summed
	natsCPUPerDoc     time.Duration // nats-server processes, summed (embedded: inside the worker)
	latency           []time.Duration
	p50, p90, p99, mx time.Duration
}

func benchScaleOut(b *testing.B, store storeSetup) {
	embedded := clusterSpec{nodes: 0, docs: scaleDocs, webhooks: true, dims: scaleDims}
	shapes := []struct {
		name string
		spec clusterSpec
	}{
		// The baseline runs first and last, so drift in a shared machine's
		// load weighs on both sides.
		{"embedded", embedded},
		{"cluster-1w", clusterSpec{nodes: 3, docs: scaleDocs, webhooks: true, dims: scaleDims, workers: []string{"worker-1"}}},
		{"cluster-2w", clusterSpec{nodes: 3, docs: scaleDocs, webhooks: true, dims: scaleDims, workers: []string{"worker-1", "worker-2"}}},
		{"embedded", embedded},
	}
	res := map[string][]shapeResult{}
	for _, sh := range shapes {
		r := measureShape(b, store, sh.spec)
		res[sh.name] = append(res[sh.name], r)
		b.Logf("%-10s %6.1f docs/s (%d worker process(es): %.1f docs/s each), worker CPU %s/doc, nats-server CPU %s/doc; "+
			"webhook 202 → retrievable p50 %s p90 %s p99 %s max %s",
			sh.name, r.docsPerSec, r.workers, r.docsPerSec/float64(r.workers), r.workerCPUPerDoc, r.natsCPUPerDoc,
			r.p50, r.p90, r.p99, r.mx)
	}
	e := merge(res["embedded"])
	c1, c2 := res["cluster-1w"][0], res["cluster-2w"][0]
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(e.docsPerSec, "docs/s-embedded")
	b.ReportMetric(c1.docsPerSec, "docs/s/worker-cluster")
	b.ReportMetric(c1.docsPerSec/e.docsPerSec, "cluster/embedded-per-worker")
	b.ReportMetric(c2.docsPerSec/e.docsPerSec, "cluster-2w/embedded")
	b.ReportMetric(ms(e.p50), "p50-ms-embedded")
	b.ReportMetric(ms(e.p99), "p99-ms-embedded")
	b.ReportMetric(ms(c1.p50), "p50-ms-cluster")
	b.ReportMetric(ms(c1.p99), "p99-ms-cluster")
	b.ReportMetric(ms(c1.workerCPUPerDoc+c1.natsCPUPerDoc)/ms(e.workerCPUPerDoc), "cluster/embedded-cpu-per-doc")
}

// merge averages runs of one shape and pools their latencies.
func merge(runs []shapeResult) shapeResult {
	var m shapeResult
	for _, r := range runs {
		m.docsPerSec += r.docsPerSec / float64(len(runs))
		m.workerCPUPerDoc += r.workerCPUPerDoc / time.Duration(len(runs))
		m.natsCPUPerDoc += r.natsCPUPerDoc / time.Duration(len(runs))
		m.workers = r.workers
		m.latency = append(m.latency, r.latency...)
	}
	m.percentiles()
	return m
}

// percentiles sorts the latencies and sets p50, p90, p99 and the max.
func (r *shapeResult) percentiles() {
	slices.Sort(r.latency)
	pct := func(p float64) time.Duration { return r.latency[min(len(r.latency)-1, int(p*float64(len(r.latency))))] }
	r.p50, r.p90, r.p99, r.mx = pct(0.50), pct(0.90), pct(0.99), r.latency[len(r.latency)-1]
}

// measureShape runs one deployment shape on a fresh store and returns
// what it measured.
func measureShape(b *testing.B, store storeSetup, spec clusterSpec) shapeResult {
	b.Helper()
	c := startCluster(b, store, spec)
	workers := spec.workers
	if spec.nodes == 0 {
		workers = []string{"api"} // --role all
	}
	for _, w := range workers {
		c.waitReady(b, w)
	}
	cpu := func() (worker, nats time.Duration) {
		for _, w := range workers {
			worker += procCPU(b, c.procs[w])
		}
		for _, n := range c.nodes {
			nats += procCPU(b, n.proc)
		}
		return worker, nats
	}
	db := c.db(b)

	w0, n0 := cpu()
	start := time.Now()
	c.queueSync(b)
	for c.stored(b, db) < spec.docs {
		if time.Since(start) > 10*time.Minute {
			c.dumpLogs(b)
			b.Fatalf("%d of %d documents stored after 10 minutes", c.stored(b, db), spec.docs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	w1, n1 := cpu()
	if strings.Contains(c.storeYAML, "postgres") {
		var chunks, heap, indexes, total int64
		if err := db.QueryRow(`SELECT count(*), pg_relation_size('chunks'), pg_indexes_size('chunks'), pg_total_relation_size('chunks') FROM chunks`).
			Scan(&chunks, &heap, &indexes, &total); err == nil && chunks > 0 {
			b.Logf("postgres: %d chunks; per chunk: table %d B, its indexes %d B, total with TOAST %d B", chunks, heap/chunks, indexes/chunks, total/chunks)
		}
	}
	r := shapeResult{
		docsPerSec:      float64(spec.docs) / took.Seconds(),
		workers:         len(workers),
		workerCPUPerDoc: (w1 - w0) / time.Duration(spec.docs),
		natsCPUPerDoc:   (n1 - n0) / time.Duration(spec.docs),
	}

	// Webhook latency on the now idle deployment: the store is polled for
	// each delivery's document with its chunks.
	seen := make([]time.Time, scaleHooks)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pollStored(b, c, seen, stop)
	}()
	d := startDeliveries(b, c, "api", scaleHooks, scaleInterval)
	acked := d.wait(b)
	deadline := time.Now().Add(2 * time.Minute)
	for c.count(b, db, "hooks") < acked && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // one more poll
	close(stop)
	wg.Wait()
	for i, at := range d.accepted {
		if at.IsZero() || seen[i].IsZero() {
			b.Fatalf("delivery %d: accepted %v, stored %v", i, at, seen[i])
		}
		r.latency = append(r.latency, max(seen[i].Sub(at), 0))
	}
	r.percentiles()
	return r
}

// pollStored records, every 5 ms until stop, when each webhook
// delivery's document (issue 1000+i) is first in the store with chunks.
func pollStored(b *testing.B, c *cluster, seen []time.Time, stop <-chan struct{}) {
	db := c.db(b)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		rows, err := db.QueryContext(context.Background(), `SELECT d.external_id FROM documents d
			WHERE d.installation = 'hooks' AND EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id)`)
		if err != nil {
			continue // busy
		}
		now := time.Now()
		for rows.Next() {
			var id string
			if rows.Scan(&id) != nil {
				continue
			}
			n, err := strconv.Atoi(id[strings.LastIndexByte(id, '#')+1:])
			if i := n - 1000; err == nil && i >= 0 && i < len(seen) && seen[i].IsZero() {
				seen[i] = now
			}
		}
		rows.Close()
	}
}

// procCPU is the user and system CPU a running process has used, from
// /proc (Linux); 0 where /proc is missing.
func procCPU(b *testing.B, p *proc) time.Duration {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	// Fields after the command name (which may hold spaces) start at ")".
	fields := strings.Fields(line[strings.LastIndexByte(line, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const clockTicks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / clockTicks
}
