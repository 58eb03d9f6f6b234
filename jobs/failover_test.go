package jobs

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The failover test is the scale-out path under the failures a cluster
// sees: a three-node JetStream cluster of nats-server processes (the
// binary INGESTD_TEST_NATS_SERVER names; streams and buckets on three
// replicas), two `ingestd serve --role worker` processes and one
// `--role api`, sharing one store, a files installation of 3,000
// documents and 240 signed GitHub webhook deliveries. While they flow it
// SIGKILLs the node that leads the job stream and, during the election
// that follows, restarts the api and starts a third worker (both must
// wait for the stream and come up, not exit); makes the consumer's leader
// step down under the running workers; SIGKILLs a worker; and brings the
// killed node back. Then every document must be stored exactly once,
// every delivery that got its 202 stored, nothing left in the stream and
// nothing dead-lettered.

const (
	failoverDocs  = 3000
	failoverHooks = 240
)

func TestClusterFailover(t *testing.T) {
	forEachStore(t, testFailover)
}

func testFailover(t *testing.T, store storeSetup) {
	began := time.Now()
	c := startCluster(t, store, clusterSpec{nodes: 3, docs: failoverDocs, webhooks: true,
		workers: []string{"worker-1", "worker-2"}, spares: []string{"worker-3"}})
	c.waitReady(t, "worker-1")
	c.waitReady(t, "worker-2")
	js := c.jetstream(t)
	db := c.db(t)
	t.Logf("cluster up in %s", time.Since(began).Round(time.Millisecond))

	hooks := startDeliveries(t, c, "api", failoverHooks, 100*time.Millisecond)
	c.queueSync(t)
	c.waitStored(t, failoverDocs/10)

	// The node leading the job stream dies; while its replicas elect a
	// new leader the api restarts and a third worker starts.
	leader := c.streamLeader(t, js)
	t.Logf("SIGKILL %s, the leader of %s, with %d of %d documents and %d webhook documents stored",
		c.nodes[leader].name, JobsStream, c.stored(t, db), failoverDocs, c.count(t, db, "hooks"))
	c.nodes[leader].proc.kill(t, syscall.SIGKILL)
	c.procs["api"].kill(t, syscall.SIGTERM)
	c.start(t, "api", "api")
	c.start(t, "worker-3", "worker")
	restarted := time.Now()
	apiWaited := c.watchReady(t, "api")
	workerWaited := c.watchReady(t, "worker-3")
	t.Logf("during the election the new api was ready after %s (%s) and worker-3 (%s); new leader %s",
		time.Since(restarted).Round(time.Millisecond), apiWaited, workerWaited, c.nodes[c.streamLeader(t, js)].name)

	// The consumer's leader steps down under the running workers, then a
	// worker dies mid-load.
	c.waitStored(t, failoverDocs*4/10)
	before := c.jobsDone(t, "worker-2")
	if _, err := js.Conn().Request("$JS.API.CONSUMER.LEADER.STEPDOWN."+JobsStream+"."+WorkerConsumer, nil, 10*time.Second); err != nil {
		t.Fatalf("step down the consumer leader: %v", err)
	}
	c.waitStored(t, failoverDocs/2)
	t.Logf("SIGKILL worker-1 with %d of %d documents stored", c.stored(t, db), failoverDocs)
	c.procs["worker-1"].kill(t, syscall.SIGKILL)

	// The killed node comes back and catches up.
	c.startNode(t, leader)

	acked := hooks.wait(t)
	c.check(t, acked)
	if after := c.jobsDone(t, "worker-2"); after <= before {
		t.Errorf("worker-2 ran %d jobs before the consumer's leader stepped down and %d at the end: it stopped", before, after)
	}
	for _, name := range []string{"api", "worker-2", "worker-3"} {
		select {
		case <-c.procs[name].done:
			t.Errorf("%s exited on its own", name)
		default:
		}
	}
	if t.Failed() {
		c.dumpLogs(t)
	}
	t.Logf("%d documents and %d webhook deliveries (%d retried) stored once each, stream empty, no dead letters; %s in all",
		failoverDocs, acked, hooks.retried(), time.Since(began).Round(time.Second))
}

// streamLeader returns the index of the node leading the job stream,
// waiting while it has none.
func (c *cluster) streamLeader(t testing.TB, js jetstream.JetStream) int {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s, err := js.Stream(ctx, JobsStream)
		cancel()
		if err == nil && s.CachedInfo().Cluster != nil {
			for i, n := range c.nodes {
				if n.name == s.CachedInfo().Cluster.Leader {
					return i
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has no leader after a minute (last error: %v)", JobsStream, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// watchReady polls the process's /readyz until it is 200 and says what
// it answered before: whether it was seen waiting for the job stream.
// It fails the test if the process exits or is not ready in two minutes.
func (c *cluster) watchReady(t testing.TB, name string) string {
	t.Helper()
	waiting := 0
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case <-c.procs[name].done:
			c.dumpLogs(t)
			t.Fatalf("%s exited while starting", name)
		default:
		}
		code, body := c.get(name, "/readyz")
		switch {
		case code == http.StatusOK:
			log, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
			return fmt.Sprintf("%d answers \"waiting for the job stream\", %d jobs.waiting attempts logged",
				waiting, strings.Count(string(log), `"msg":"jobs.waiting"`))
		case code == http.StatusServiceUnavailable && strings.Contains(body, "waiting for the job stream"):
			waiting++
			if code, _ := c.get(name, "/healthz"); code != http.StatusOK {
				t.Errorf("%s: /healthz = %d while waiting for the job stream, want 200", name, code)
			}
		}
		if time.Now().After(deadline) {
			c.dumpLogs(t)
			t.Fatalf("%s not ready after 2 minutes: %d %s", name, code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jobsDone reads from the process's /metrics how many jobs it ran to an ack.
func (c *cluster) jobsDone(t testing.TB, name string) int {
	t.Helper()
	code, body := c.get(name, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("%s /metrics: %d %s", name, code, body)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "ingestd_jobs_processed_total{") || !strings.Contains(line, `result="ok"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%s /metrics: %q: %v", name, line, err)
		}
		n += int(v)
	}
	return n
}

// deliveries sends signed GitHub "issues" deliveries to a process, one
// every interval, each retried as GitHub's redelivery would: on a
// connection error or a 5xx, the same delivery id and body again.
type deliveries struct {
	done     chan struct{}
	mu       sync.Mutex
	acked    int         // answered 202 (or 200 duplicate after a lost 202)
	retries  int         // attempts beyond the first
	accepted []time.Time // when each acked delivery got its answer, by delivery
	failures []string    // deliveries that ended otherwise
}

func startDeliveries(t testing.TB, c *cluster, to string, n int, interval time.Duration) *deliveries {
	t.Helper()
	tmpl := readIssuePayload(t)
	d := &deliveries{done: make(chan struct{}), accepted: make([]time.Time, n)}
	go func() {
		defer close(d.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		var wg sync.WaitGroup
		for i := range n {
			<-tick.C
			wg.Add(1)
			go func() {
				defer wg.Done()
				d.deliver(c, to, i, tmpl)
			}()
		}
		wg.Wait()
	}()
	return d
}

// deliver sends delivery i until it is answered 202 or 200 duplicate, or
// three minutes pass.
func (d *deliveries) deliver(c *cluster, to string, i int, tmpl map[string]any) {
	body := issuePayload(tmpl, i)
	mac := hmac.New(sha256.New, []byte(multiprocWebhookSecret))
	mac.Write(body)
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	id := fmt.Sprintf("failover-delivery-%04d", i)
	client := http.Client{Timeout: 30 * time.Second}
	deadline := time.Now().Add(3 * time.Minute)
	for attempt := 0; ; attempt++ {
		req, _ := http.NewRequest("POST", "http://"+c.listen[to]+"/v1/webhooks/hooks", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "GitHub-Hookshot/failover-test")
		req.Header.Set("X-GitHub-Event", "issues")
		req.Header.Set("X-GitHub-Delivery", id)
		req.Header.Set("X-Hub-Signature-256", sig)
		resp, err := client.Do(req)
		status, answer := 0, ""
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			status, answer = resp.StatusCode, string(b)
		}
		switch {
		case status == http.StatusAccepted || (status == http.StatusOK && strings.Contains(answer, "duplicate")):
			d.mu.Lock()
			d.acked++
			d.retries += attempt
			d.accepted[i] = time.Now()
			d.mu.Unlock()
			return
		case (err != nil || status >= 500) && time.Now().Before(deadline):
			time.Sleep(250 * time.Millisecond)
		default:
			d.mu.Lock()
			d.failures = append(d.failures, fmt.Sprintf("%s: %d %s %v after %d attempts", id, status, strings.TrimSpace(answer), err, attempt+1))
			d.mu.Unlock()
			return
		}
	}
}

// wait waits for every delivery to end, fails the test for any that did
// not get its 202, and returns how many did.
func (d *deliveries) wait(t testing.TB) int {
	t.Helper()
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, f := range d.failures {
		t.Errorf("delivery not accepted: %s", f)
	}
	return d.acked
}

func (d *deliveries) retried() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.retries
}

// readIssuePayload reads the real "issues" delivery in testdata.
func readIssuePayload(t testing.TB) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "github-webhooks", "issues.opened.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// issuePayload is the template delivery as issue number 1000+i, with its
// own id, title and body, so every delivery is its own document.
func issuePayload(tmpl map[string]any, i int) []byte {
	v := map[string]any{}
	for k, x := range tmpl {
		v[k] = x
	}
	issue := map[string]any{}
	for k, x := range tmpl["issue"].(map[string]any) {
		issue[k] = x
	}
	num := 1000 + i
	issue["number"] = num
	issue["id"] = 444500041 + i
	issue["title"] = fmt.Sprintf("Failover issue %d: the deploy checklist skips the rollback step", num)
	issue["body"] = fmt.Sprintf("Issue %d. When the release fails the checklist does not say how to roll back; step %d is missing.", num, i%7)
	issue["html_url"] = fmt.Sprintf("https://github.com/Codertocat/Hello-World/issues/%d", num)
	issue["url"] = fmt.Sprintf("https://api.github.com/repos/Codertocat/Hello-World/issues/%d", num)
	v["issue"] = issue
	b, _ := json.Marshal(v)
	return b
}
