package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the test reads the shared Postgres database
	_ "github.com/mattn/go-sqlite3"    // the test reads the shared store file
	"github.com/nats-io/nats.go/jetstream"

	"github.com/ingestd/ingestd/store/postgres/pgtest"
)

// The multi-process tests run the real binary: a nats-server started by
// the test (the binary named by INGESTD_TEST_NATS_SERVER, e.g. Debian's
// nats-server package), three `ingestd serve --role worker` processes and
// one `--role api` sharing one store, and a files installation of 2,000
// documents. They disrupt the run and check, by reading the store's
// database themselves, that every document is stored exactly once and the
// dead letters are empty. Each runs twice: with a SQLite file the
// processes share, and with a PostgreSQL database of its own on the server
// named by INGESTD_TEST_POSTGRES_URL (skipped when that is unset).

const multiprocDocs = 2000

// multiprocPostgresEnv is the variable the processes' config names
// (store.url_env) for the URL of the test's Postgres database.
const multiprocPostgresEnv = "INGESTD_MULTIPROC_POSTGRES_URL"

// The nats-server of the test authenticates a user with a password, and
// the processes sign their jobs, as a deployment must (nats.url needs
// job_key_env): the variables their config names and the values.
const (
	multiprocNATSUser     = "ingestd"
	multiprocPasswordEnv  = "INGESTD_MULTIPROC_NATS_PASSWORD"
	multiprocNATSPassword = "multiproc-nats-password"
	multiprocJobKeyEnv    = "INGESTD_MULTIPROC_JOB_KEY"
	multiprocJobKey       = "multiproc-job-key-0123456789abcdef0123456789"
	// The hooks installation's GitHub webhook secret.
	multiprocWebhookSecretEnv = "INGESTD_MULTIPROC_WEBHOOK_SECRET"
	multiprocWebhookSecret    = "multiproc-webhook-secret"
)

// storeSetup points a cluster's processes at a store and gives the test a
// way to read it.
type storeSetup func(t testing.TB, c *cluster)

func sqliteStore(t testing.TB, c *cluster) {
	c.storeYAML = "{driver: sqlite}"
	path := filepath.Join(c.dir, "data", "ingestd.db")
	c.openDB = func() (*sql.DB, error) { return sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000") }
}

func postgresStore(t testing.TB, c *cluster) {
	dbURL := pgtest.MustCreateDB(t, pgtest.SkipUnlessServer(t, os.Getenv(pgtest.EnvURL)))
	c.storeYAML = "{driver: postgres, url_env: " + multiprocPostgresEnv + "}"
	c.env = append(os.Environ(), multiprocPostgresEnv+"="+dbURL)
	c.openDB = func() (*sql.DB, error) { return sql.Open("pgx", dbURL) }
}

// forEachStore runs test as a subtest per store.
func forEachStore(t *testing.T, test func(t *testing.T, store storeSetup)) {
	t.Run("sqlite", func(t *testing.T) { test(t, sqliteStore) })
	t.Run("postgres", func(t *testing.T) { test(t, postgresStore) })
}

func TestMultiProcessWorkerKilled(t *testing.T) {
	forEachStore(t, testWorkerKilled)
}

func TestMultiProcessNATSRestarted(t *testing.T) {
	forEachStore(t, testNATSRestarted)
}

func testWorkerKilled(t *testing.T, store storeSetup) {
	c := startCluster(t, store, multiprocSpec)
	c.ingestd(t, "sync", "docs", "--queue", "--config", c.config("api"))
	c.waitStored(t, multiprocDocs/10)
	t.Logf("SIGKILL worker-1 with %d of %d documents stored", c.stored(t, c.db(t)), multiprocDocs)
	c.procs["worker-1"].kill(t, syscall.SIGKILL)
	c.start(t, "worker-4", "worker")
	c.check(t, 0)
}

func testNATSRestarted(t *testing.T, store storeSetup) {
	c := startCluster(t, store, multiprocSpec)
	c.queueSync(t)
	c.waitStored(t, multiprocDocs/10)
	t.Logf("restarting nats-server with %d of %d documents stored", c.stored(t, c.db(t)), multiprocDocs)
	c.nodes[0].proc.kill(t, syscall.SIGTERM)
	c.startNode(t, 0)
	c.check(t, 0)
}

// queueSync asks the api to queue a sync pass of the docs installation.
func (c *cluster) queueSync(t testing.TB) {
	t.Helper()
	resp, err := http.Post("http://"+c.listen["api"]+"/v1/installations/docs/sync", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST sync: %s", resp.Status)
	}
}

type cluster struct {
	dir, bin, natsBin string
	nodes             []*natsNode // one, or three forming a JetStream cluster
	spec              clusterSpec
	listen            map[string]string
	procs             map[string]*proc
	storeYAML         string                  // the config's store: value
	env               []string                // the processes' environment
	openDB            func() (*sql.DB, error) // opens the store's database for reading
}

// clusterSpec says what startCluster runs.
type clusterSpec struct {
	nodes    int      // nats-server processes: 1, or 3 routed into a cluster (replicas 3); 0 runs the api as --role all on the embedded server
	docs     int      // files in the docs installation
	workers  []string // worker processes started with the api
	spares   []string // further worker configs, for processes the test starts later
	natsYAML string   // more keys for the nats block
	webhooks bool     // configure the hooks installation (GitHub flavour)
	dims     int      // the lexical embedder's dimensions (default 64)
}

// natsNode is one nats-server process and its ports.
type natsNode struct {
	name              string
	port, clusterPort int
	proc              *proc
}

// multiprocSpec is what the multi-process tests run: one nats-server,
// three workers (a fourth config for a replacement) and the api.
var multiprocSpec = clusterSpec{nodes: 1, docs: multiprocDocs,
	workers: []string{"worker-1", "worker-2", "worker-3"}, spares: []string{"worker-4"}}

// needNATSServer returns the nats-server binary the test runs, or skips.
func needNATSServer(t testing.TB) string {
	t.Helper()
	natsBin := os.Getenv("INGESTD_TEST_NATS_SERVER")
	if natsBin == "" {
		t.Skip("set INGESTD_TEST_NATS_SERVER to a nats-server binary to run the multi-process test")
	}
	if testing.Short() {
		t.Skip("multi-process test: not in -short mode")
	}
	return natsBin
}

func startCluster(t testing.TB, store storeSetup, spec clusterSpec) *cluster {
	natsBin := needNATSServer(t)
	dir := t.TempDir()
	c := &cluster{dir: dir, natsBin: natsBin, spec: spec, listen: map[string]string{}, procs: map[string]*proc{}}
	store(t, c)
	if c.env == nil {
		c.env = os.Environ()
	}
	c.env = append(c.env, multiprocPasswordEnv+"="+multiprocNATSPassword, multiprocJobKeyEnv+"="+multiprocJobKey,
		multiprocWebhookSecretEnv+"="+multiprocWebhookSecret)
	c.bin = ingestdBinary(t)
	writeDocs(t, filepath.Join(dir, "docs"), spec.docs)
	for i := range spec.nodes {
		c.nodes = append(c.nodes, &natsNode{name: fmt.Sprintf("nats-%d", i+1), port: freePort(t), clusterPort: freePort(t)})
	}
	for i := range c.nodes {
		c.startNode(t, i)
	}
	names := append(append([]string{"api"}, spec.workers...), spec.spares...)
	for _, name := range names {
		c.writeConfig(t, name)
	}
	c.ingestd(t, "migrate", "--config", c.config("api"))
	if spec.nodes == 0 {
		c.start(t, "api", "all")
	} else {
		c.start(t, "api", "api")
	}
	for _, w := range spec.workers {
		c.start(t, w, "worker")
	}
	c.waitReady(t, "api")
	return c
}

// waitReady waits until the process answers /readyz with 200.
func (c *cluster) waitReady(t testing.TB, name string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if code, _ := c.get(name, "/readyz"); code == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			c.dumpLogs(t)
			t.Fatalf("%s not ready after 2 minutes", name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get fetches path from the process's HTTP listener: the status (0 when
// it does not answer) and the body.
func (c *cluster) get(name, path string) (int, string) {
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + c.listen[name] + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// startNode starts (or restarts, on the same ports and store) nats-server
// node i: with three nodes, routed to the other two as cluster "ingestd".
func (c *cluster) startNode(t testing.TB, i int) {
	t.Helper()
	n := c.nodes[i]
	args := []string{"-n", n.name, "-js", "-sd", filepath.Join(c.dir, n.name), "-a", "127.0.0.1", "-p", strconv.Itoa(n.port),
		"--user", multiprocNATSUser, "--pass", multiprocNATSPassword}
	if len(c.nodes) > 1 {
		var routes []string
		for j, o := range c.nodes {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", o.clusterPort))
			}
		}
		args = append(args, "--cluster_name", "ingestd", "--cluster", fmt.Sprintf("nats://127.0.0.1:%d", n.clusterPort),
			"--routes", strings.Join(routes, ","))
	}
	n.proc = startProc(t, filepath.Join(c.dir, n.name+".log"), nil, c.natsBin, args...)
	eventually(t, n.name+" to accept connections", func() bool {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", n.port), time.Second)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
}

// natsURL lists every node, as a deployment's nats.url does.
func (c *cluster) natsURL() string {
	var urls []string
	for _, n := range c.nodes {
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", n.port))
	}
	return strings.Join(urls, ",")
}

func (c *cluster) config(name string) string { return filepath.Join(c.dir, name+".yaml") }

func (c *cluster) writeConfig(t testing.TB, name string) {
	t.Helper()
	c.listen[name] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	replicas := 1
	if len(c.nodes) > 1 {
		replicas = 3
	}
	hooks := ""
	if c.spec.webhooks {
		hooks = fmt.Sprintf(`  - id: hooks
    kind: webhook
    tier: untrusted-external
    webhook: {flavor: github, secret_env: %s}
`, multiprocWebhookSecretEnv)
	}
	natsYAML := fmt.Sprintf(`{url: %q, user: %s, password_env: %s, job_key_env: %s, replicas: %d,
       max_deliver: 10, ack_wait: 5s, lease_ttl: 10s, concurrency: 4%s}`,
		c.natsURL(), multiprocNATSUser, multiprocPasswordEnv, multiprocJobKeyEnv, replicas, c.spec.natsYAML)
	if len(c.nodes) == 0 {
		natsYAML = "{max_deliver: 10, ack_wait: 5s, lease_ttl: 10s, concurrency: 4" + c.spec.natsYAML + "}"
	}
	dims := c.spec.dims
	if dims == 0 {
		dims = 64
	}
	cfg := fmt.Sprintf(`data_dir: ./data
listen: %s
store: %s
nats: %s
embedder: {kind: lexical, dims: %d}
firewall: {mode: enforce}
log: {format: json, level: info}
installations:
  - id: docs
    kind: files
    tier: trusted-internal
    files: {root: ./docs, include: ["**/*.md"]}
%s`, c.listen[name], c.storeYAML, natsYAML, dims, hooks)
	if err := os.WriteFile(c.config(name), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// start runs `ingestd serve --role role` as the process name.
func (c *cluster) start(t testing.TB, name, role string) {
	t.Helper()
	c.procs[name] = startProc(t, filepath.Join(c.dir, name+".log"), c.env, c.bin, "serve", "--role", role, "--config", c.config(name))
}

// ingestd runs a one-shot subcommand.
func (c *cluster) ingestd(t testing.TB, args ...string) {
	t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ingestd %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (c *cluster) db(t testing.TB) *sql.DB {
	t.Helper()
	db, err := c.openDB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// stored counts the active documents of the docs installation.
func (c *cluster) stored(t testing.TB, db *sql.DB) int { return c.count(t, db, "docs") }

// count counts an installation's active documents (0 while the database
// is not migrated or busy).
func (c *cluster) count(t testing.TB, db *sql.DB, installation string) int {
	t.Helper()
	var n int
	q := `SELECT count(*) FROM documents WHERE installation = '` + installation + `' AND status = 'active'`
	if err := db.QueryRow(q).Scan(&n); err != nil {
		return 0
	}
	return n
}

func (c *cluster) waitStored(t testing.TB, n int) {
	t.Helper()
	db := c.db(t)
	deadline := time.Now().Add(5 * time.Minute)
	for c.stored(t, db) < n {
		if time.Now().After(deadline) {
			c.dumpLogs(t)
			t.Fatalf("fewer than %d documents stored after 5 minutes", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// queueState is what JetStream holds: jobs in the stream, jobs the
// consumer has yet to deliver or to see acked, and dead letters.
type queueState struct {
	msgs, pending, ackPending, dead uint64
}

func (c *cluster) queueState(ctx context.Context, js jetstream.JetStream) (queueState, error) {
	var st queueState
	info, err := js.Stream(ctx, JobsStream)
	if err != nil {
		return st, err
	}
	st.msgs = info.CachedInfo().State.Msgs
	cons, err := js.Consumer(ctx, JobsStream, WorkerConsumer)
	if err != nil {
		return st, err
	}
	ci := cons.CachedInfo()
	st.pending, st.ackPending = ci.NumPending, uint64(ci.NumAckPending)
	dlq, err := js.Stream(ctx, DLQStream)
	if err != nil {
		return st, err
	}
	st.dead = dlq.CachedInfo().State.Msgs
	return st, nil
}

// check waits until every document (the docs installation's, and
// hooks webhook documents) is stored and the job stream is empty, then
// checks that nothing is missing, doubled or dead.
func (c *cluster) check(t testing.TB, hooks int) {
	t.Helper()
	js := c.jetstream(t)
	ctx := context.Background()
	db := c.db(t)
	deadline := time.Now().Add(5 * time.Minute)
	var st queueState
	for {
		if c.stored(t, db) == c.spec.docs && c.count(t, db, "hooks") == hooks {
			var err error
			st, err = c.queueState(ctx, js)
			if err == nil && st.msgs == 0 && st.pending == 0 && st.ackPending == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			c.dumpLogs(t)
			t.Fatalf("after 5 minutes %d of %d documents and %d of %d webhook documents stored; queue %+v",
				c.stored(t, db), c.spec.docs, c.count(t, db, "hooks"), hooks, st)
		}
		time.Sleep(50 * time.Millisecond)
	}

	for _, want := range []struct {
		installation string
		n            int
	}{{"docs", c.spec.docs}, {"hooks", hooks}} {
		var docs int
		if err := db.QueryRow(`SELECT count(*) FROM documents WHERE installation = '` + want.installation + `'`).Scan(&docs); err != nil {
			t.Fatal(err)
		}
		if docs != want.n {
			t.Errorf("%d %s documents rows, want %d", docs, want.installation, want.n)
		}
	}
	var missingChunks, badOrdinals, dupExternal int
	if err := db.QueryRow(`SELECT count(*) FROM (SELECT external_id FROM documents GROUP BY installation, external_id HAVING count(*) > 1) AS dup`).Scan(&dupExternal); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM documents d WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.document_id = d.id)`).Scan(&missingChunks); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM (SELECT document_id FROM chunks GROUP BY document_id
		HAVING count(*) != count(DISTINCT ordinal) OR count(*) != max(ordinal) + 1) AS bad`).Scan(&badOrdinals); err != nil {
		t.Fatal(err)
	}
	if dupExternal != 0 || missingChunks != 0 || badOrdinals != 0 {
		t.Errorf("%d documents stored twice, %d without chunks, %d with duplicate or missing chunks", dupExternal, missingChunks, badOrdinals)
	}
	if st.dead != 0 {
		dlq, err := js.Stream(ctx, DLQStream)
		if err != nil {
			t.Fatal(err)
		}
		first, err := dlq.GetMsg(ctx, dlq.CachedInfo().State.FirstSeq)
		if err != nil {
			t.Fatal(err)
		}
		t.Errorf("%d dead letters, want none; first: %s: %s", st.dead, first.Header.Get(HeaderSubject), first.Header.Get(HeaderError))
	}
}

// jetstream connects the test to the nats-servers (checking first that
// they refuse a client without credentials) to read the queue's state.
// It opens no Queue: that would update the streams to the test's options.
func (c *cluster) jetstream(t testing.TB) jetstream.JetStream {
	t.Helper()
	if nc, err := Connect(c.natsURL(), ConnectOptions{Name: "multiproc-stranger"}); err == nil {
		nc.Close()
		t.Fatal("nats-server took a client without credentials")
	}
	nc, err := Connect(c.natsURL(), ConnectOptions{Name: "multiproc-test", User: multiprocNATSUser, Password: multiprocNATSPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func (c *cluster) dumpLogs(t testing.TB) {
	t.Helper()
	var names []string
	for _, n := range c.nodes {
		names = append(names, n.name)
	}
	for n := range c.procs {
		names = append(names, n)
	}
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(c.dir, n+".log"))
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		t.Logf("--- %s.log (tail)\n%s", n, b)
	}
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// startProc starts bin with env (nil: the test's own environment), its
// output to logPath, and stops it when the test ends.
func startProc(t testing.TB, logPath string, env []string, bin string, args ...string) *proc {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = env
	cmd.Dir = filepath.Dir(logPath)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: filepath.Base(logPath), cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logf.Close(); close(p.done) }()
	t.Cleanup(func() { p.kill(t, syscall.SIGTERM) })
	return p
}

// kill signals the process and waits for it (SIGKILL after 20s).
func (p *proc) kill(t testing.TB, sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Logf("%s did not stop on %v; killing it", p.name, sig)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// ingestdBinary builds cmd/ingestd once for every test of the package
// (TestMain removes it).
func ingestdBinary(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "ingestd-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "ingestd")
		out, err := exec.Command("go", "build", "-o", built.bin, "github.com/ingestd/ingestd/cmd/ingestd").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// writeDocs writes n markdown files in nested folders.
func writeDocs(t testing.TB, root string, n int) {
	t.Helper()
	for i, it := range benchItems(n) {
		path := filepath.Join(root, fmt.Sprintf("d%02d", i%20), it.ExternalID)
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(it.Text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
