package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the test reads the shared Postgres database
	_ "github.com/mattn/go-sqlite3"    // the test reads the shared store file

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
)

// storeSetup points a cluster's processes at a store and gives the test a
// way to read it.
type storeSetup func(t *testing.T, c *cluster)

func sqliteStore(t *testing.T, c *cluster) {
	c.storeYAML = "{driver: sqlite}"
	path := filepath.Join(c.dir, "data", "ingestd.db")
	c.openDB = func() (*sql.DB, error) { return sql.Open("sqlite3", "file:"+path+"?mode=ro&_busy_timeout=5000") }
}

func postgresStore(t *testing.T, c *cluster) {
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
	c := startCluster(t, store)
	c.ingestd(t, "sync", "docs", "--queue", "--config", c.config("api"))
	c.waitStored(t, multiprocDocs/10)
	t.Logf("SIGKILL worker-1 with %d of %d documents stored", c.stored(t, c.db(t)), multiprocDocs)
	c.procs["worker-1"].kill(t, syscall.SIGKILL)
	c.start(t, "worker-4", "worker")
	c.check(t)
}

func testNATSRestarted(t *testing.T, store storeSetup) {
	c := startCluster(t, store)
	resp, err := http.Post("http://"+c.listen["api"]+"/v1/installations/docs/sync", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST sync: %s", resp.Status)
	}
	c.waitStored(t, multiprocDocs/10)
	t.Logf("restarting nats-server with %d of %d documents stored", c.stored(t, c.db(t)), multiprocDocs)
	c.nats.kill(t, syscall.SIGTERM)
	c.startNATS(t)
	c.check(t)
}

type cluster struct {
	dir, bin, natsBin string
	natsPort          int
	nats              *proc
	listen            map[string]string
	procs             map[string]*proc
	storeYAML         string                  // the config's store: value
	env               []string                // the processes' environment
	openDB            func() (*sql.DB, error) // opens the store's database for reading
}

func startCluster(t *testing.T, store storeSetup) *cluster {
	natsBin := os.Getenv("INGESTD_TEST_NATS_SERVER")
	if natsBin == "" {
		t.Skip("set INGESTD_TEST_NATS_SERVER to a nats-server binary to run the multi-process test")
	}
	if testing.Short() {
		t.Skip("multi-process test: not in -short mode")
	}
	dir := t.TempDir()
	c := &cluster{dir: dir, natsBin: natsBin, natsPort: freePort(t), listen: map[string]string{}, procs: map[string]*proc{}}
	store(t, c)
	if c.env == nil {
		c.env = os.Environ()
	}
	c.env = append(c.env, multiprocPasswordEnv+"="+multiprocNATSPassword, multiprocJobKeyEnv+"="+multiprocJobKey)
	c.bin = filepath.Join(dir, "ingestd")
	build := exec.Command("go", "build", "-o", c.bin, "github.com/ingestd/ingestd/cmd/ingestd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	writeDocs(t, filepath.Join(dir, "docs"), multiprocDocs)
	c.startNATS(t)
	for _, name := range []string{"api", "worker-1", "worker-2", "worker-3", "worker-4"} {
		c.writeConfig(t, name)
	}
	c.ingestd(t, "migrate", "--config", c.config("api"))
	c.start(t, "api", "api")
	for _, w := range []string{"worker-1", "worker-2", "worker-3"} {
		c.start(t, w, "worker")
	}
	eventually(t, "the api to be ready", func() bool {
		resp, err := http.Get("http://" + c.listen["api"] + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return c
}

func (c *cluster) startNATS(t *testing.T) {
	t.Helper()
	c.nats = startProc(t, filepath.Join(c.dir, "nats.log"), nil, c.natsBin,
		"-js", "-sd", filepath.Join(c.dir, "nats"), "-a", "127.0.0.1", "-p", strconv.Itoa(c.natsPort),
		"--user", multiprocNATSUser, "--pass", multiprocNATSPassword)
	eventually(t, "nats-server to accept connections", func() bool {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", c.natsPort), time.Second)
		if err != nil {
			return false
		}
		conn.Close()
		return true
	})
}

func (c *cluster) config(name string) string { return filepath.Join(c.dir, name+".yaml") }

func (c *cluster) writeConfig(t *testing.T, name string) {
	t.Helper()
	c.listen[name] = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := fmt.Sprintf(`data_dir: ./data
listen: %s
store: %s
nats: {url: "nats://127.0.0.1:%d", user: %s, password_env: %s, job_key_env: %s,
       max_deliver: 10, ack_wait: 5s, lease_ttl: 10s, concurrency: 4}
embedder: {kind: lexical, dims: 64}
firewall: {mode: enforce}
log: {format: json, level: info}
installations:
  - id: docs
    kind: files
    tier: trusted-internal
    files: {root: ./docs, include: ["**/*.md"]}
`, c.listen[name], c.storeYAML, c.natsPort, multiprocNATSUser, multiprocPasswordEnv, multiprocJobKeyEnv)
	if err := os.WriteFile(c.config(name), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

// start runs `ingestd serve --role role` as the process name.
func (c *cluster) start(t *testing.T, name, role string) {
	t.Helper()
	c.procs[name] = startProc(t, filepath.Join(c.dir, name+".log"), c.env, c.bin, "serve", "--role", role, "--config", c.config(name))
}

// ingestd runs a one-shot subcommand.
func (c *cluster) ingestd(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(c.bin, args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ingestd %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func (c *cluster) db(t *testing.T) *sql.DB {
	t.Helper()
	db, err := c.openDB()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (c *cluster) stored(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM documents WHERE installation = 'docs' AND status = 'active'`).Scan(&n); err != nil {
		return 0 // not migrated yet, or busy
	}
	return n
}

func (c *cluster) waitStored(t *testing.T, n int) {
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

// check waits until every document is stored and the queue is empty,
// then checks that nothing is missing, doubled or dead.
func (c *cluster) check(t *testing.T) {
	t.Helper()
	q := c.queue(t)
	ctx := context.Background()
	db := c.db(t)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if c.stored(t, db) == multiprocDocs {
			info, err := q.cons.Info(ctx)
			if err == nil && info.NumPending == 0 && info.NumAckPending == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			c.dumpLogs(t)
			t.Fatalf("after 5 minutes %d of %d documents stored", c.stored(t, db), multiprocDocs)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var docs, missingChunks, badOrdinals, dupExternal int
	if err := db.QueryRow(`SELECT count(*) FROM documents WHERE installation = 'docs'`).Scan(&docs); err != nil {
		t.Fatal(err)
	}
	if docs != multiprocDocs {
		t.Errorf("%d documents rows, want %d", docs, multiprocDocs)
	}
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
	dead, err := q.ListDLQ(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 0 {
		t.Errorf("%d dead letters, want none; first: %+v", len(dead), dead[0])
	}
}

func (c *cluster) queue(t *testing.T) *Queue {
	t.Helper()
	url := fmt.Sprintf("nats://127.0.0.1:%d", c.natsPort)
	if nc, err := Connect(url, ConnectOptions{Name: "multiproc-stranger"}); err == nil {
		nc.Close()
		t.Fatal("nats-server took a client without credentials")
	}
	nc, err := Connect(url, ConnectOptions{Name: "multiproc-test", User: multiprocNATSUser, Password: multiprocNATSPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	q, err := Open(context.Background(), nc, &Options{MaxDeliver: 10, AckWait: 5 * time.Second, LeaseTTL: 10 * time.Second,
		JobKey: []byte(multiprocJobKey)})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func (c *cluster) dumpLogs(t *testing.T) {
	t.Helper()
	names := []string{"nats"}
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
func startProc(t *testing.T, logPath string, env []string, bin string, args ...string) *proc {
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
func (p *proc) kill(t *testing.T, sig syscall.Signal) {
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
func writeDocs(t *testing.T, root string, n int) {
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
