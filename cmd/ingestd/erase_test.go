package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/connectors/imap/imaptest"
	"github.com/ingestd/ingestd/store/postgres/pgtest"
)

// canary is the text the erasure test plants; idCanary is in a planted
// mail's Message-ID. Lower-case letters only, no suffix the stemmer
// strips: SQLite's full-text index stores such a word as it is (a word
// with a digit it keeps as its first and last three characters, which a
// scan for the whole word would miss).
const (
	canary   = "zqcanaryvxkwt"
	idCanary = "zqmsgidqwvb"
)

// eachStore runs fn with the store line of a config on SQLite and, when
// a server is configured, on a new Postgres database (whose URL it gets).
func eachStore(t *testing.T, fn func(t *testing.T, store, dbURL string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, "store: {driver: sqlite}\n", "") })
	t.Run("postgres", func(t *testing.T) {
		srv := pgtest.SkipUnlessServer(t, os.Getenv(pgtest.EnvURL))
		db := pgtest.MustCreateDB(t, srv)
		t.Setenv("INGESTD_TEST_LIFECYCLE_DB", db)
		fn(t, "store: {driver: postgres, url_env: INGESTD_TEST_LIFECYCLE_DB}\n", db)
	})
}

// serveUntil runs serve with the extra arguments in this process until
// stop is called (or the test ends); stop waits for it to exit cleanly.
func serveUntil(t *testing.T, cfg string, extra ...string) (s *inProcess, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"serve", "--config", cfg}, extra...), &syncBuffer{}, logs) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d\n%s", code, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop within 30s\n%s", logs.String())
		}
	}
	t.Cleanup(stop)
	deadline := time.After(60 * time.Second)
	for {
		if m := listeningRE.FindStringSubmatch(logs.String()); m != nil {
			return &inProcess{base: "http://" + m[1], logs: logs}, stop
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before listening\n%s", code, logs.String())
		case <-deadline:
			t.Fatalf("serve did not listen within 60s\n%s", logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// retrieveDocs returns the installations and document ids of the primary
// block for the query (for the canary, of the chunks that hold it).
func (s *inProcess) retrieveDocs(t *testing.T, query string) map[string]string {
	t.Helper()
	return retrieveDocs(t, s.base, query)
}

func retrieveDocs(t *testing.T, base, query string) map[string]string {
	t.Helper()
	q, _ := json.Marshal(map[string]any{"query": query, "top_k": 20})
	resp, err := http.Post(base+"/v1/retrieve", "application/json", bytes.NewReader(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Primary []struct {
			DocumentID   string `json:"document_id"`
			Installation string `json:"installation"`
			Text         string `json:"text"`
		} `json:"primary"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range out.Primary {
		if strings.Contains(c.Text, canary) || query != canary {
			got[c.Installation] = c.DocumentID
		}
	}
	return got
}

func (s *inProcess) post(t *testing.T, path string) {
	t.Helper()
	resp, err := http.Post(s.base+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s: %s", path, resp.Status)
	}
}

// count is how many times re matches the serve log.
func (s *inProcess) count(re string) int {
	return len(regexp.MustCompile(re).FindAllStringIndex(s.log(), -1))
}

// canaryIssue is a real GitHub issues.opened delivery whose issue carries
// the canary, at the given update time.
func canaryIssue(t *testing.T, updated string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "github-webhooks", "issues.opened.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	issue := v["issue"].(map[string]any)
	issue["title"] = "Broken build " + canary
	issue["body"] = "The build log shows " + canary + " on every run."
	issue["updated_at"] = updated
	out, _ := json.Marshal(v)
	return out
}

// deliver sends a signed GitHub delivery and returns the status.
func deliver(t *testing.T, base, installation, secret string, body []byte, id string) int {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	req, _ := http.NewRequest("POST", base+"/v1/webhooks/"+installation, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "issues")
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// filesWith returns the files under dir whose bytes hold needle, in any
// case: the SQLite file, its write-ahead log, the index snapshot, the
// NATS store, read raw.
func filesWith(t *testing.T, dir, needle string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(bytes.ToLower(b), []byte(needle)) {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// rowsWith returns the Postgres tables (and planner statistics) whose rows,
// read as text through the table (TOASTed values with them), hold needle.
func rowsWith(t *testing.T, dbURL, needle string) []string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 5 {
		t.Fatalf("tables %v, %v", tables, err)
	}
	var found []string
	for _, tbl := range append(tables, "pg_stats") {
		q := fmt.Sprintf("SELECT count(*) FROM %s t WHERE lower(t::text) LIKE '%%' || $1 || '%%'", pgx.Identifier{tbl}.Sanitize())
		if tbl == "pg_stats" {
			q = "SELECT count(*) FROM pg_stats t WHERE schemaname = 'public' AND lower(t::text) LIKE '%' || $1 || '%'"
		}
		var n int
		if err := c.QueryRow(ctx, q, needle).Scan(&n); err != nil {
			t.Fatalf("%s: %v", tbl, err)
		}
		if n > 0 {
			found = append(found, fmt.Sprintf("%s (%d rows)", tbl, n))
		}
	}
	return found
}

// TestErasureLeavesNothing plants a canary through IMAP (an in-memory
// server), a signed GitHub delivery through the real intake and a file,
// lets serve ingest them through the job stream, erases them through the
// CLI (by author, by document id, by installation; a dry run first
// changes nothing), and then finds the canary nowhere: not in any file
// under data_dir read raw (the SQLite file, its -wal and -shm, an index
// snapshot, the embedded NATS's JetStream store, where an edit of the
// issue still waits as a job) nor, on Postgres, in any row of any table
// (the embedding cache, cursors and sync history included) or in the
// planner's statistics. A re-sync while the sources still hold it, and a
// fresh delivery of it, bring back nothing; once the tombstones are
// lifted, the same sources bring it back.
func TestErasureLeavesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs serve with an IMAP server and a webhook; -short skips it")
	}
	eachStore(t, testErasureLeavesNothing)
}

func testErasureLeavesNothing(t *testing.T, store, dbURL string) {
	dir := t.TempDir()
	ts := imaptest.MustServer(t, "support@example.com", "pw")
	sender := "sender." + canary + "@example.net"
	day := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	mails := [][]byte{
		[]byte("From: Canary Sender <" + sender + ">\r\nTo: support@example.com\r\nSubject: about " + canary + "\r\nMessage-ID: <m-" + idCanary + "@example.net>\r\n\r\n" +
			"Please keep " + canary + " private. My account number is in here.\r\n"),
		[]byte("From: Other <other@example.org>\r\nTo: support@example.com\r\nSubject: printer\r\nMessage-ID: <p@example.org>\r\n\r\nThe printer on floor two is jammed.\r\n"),
	}
	ts.MustAppend(t, "INBOX", day, mails...)
	mustWrite(t, filepath.Join(dir, "notes", "meeting.md"), "# Meeting "+canary+"\n\nWe agreed on "+canary+" for the launch.\n")
	mustWrite(t, filepath.Join(dir, "handbook", "deploy.md"), "# Deploy\n\nBlue green deploy: switch the router after the smoke tests pass.\n")
	const secret = "canary-hook-secret"
	t.Setenv("TEST_ERASE_IMAP_PASSWORD", "pw")
	t.Setenv("TEST_ERASE_HOOK_SECRET", secret)
	cfg := filepath.Join(dir, "ingestd.yaml")
	mustWrite(t, cfg, "data_dir: ./data\nlisten: 127.0.0.1:0\n"+store+"embedder: {kind: lexical, dims: 64}\ninstallations:\n"+
		fmt.Sprintf("  - {id: support, kind: imap, tier: untrusted-external, imap: {addr: %q, username: support@example.com, "+
			"password_env: TEST_ERASE_IMAP_PASSWORD, tls: none, insecure: true}}\n", ts.Addr)+
		"  - {id: hooks, kind: webhook, tier: untrusted-external, webhook: {flavor: github, secret_env: TEST_ERASE_HOOK_SECRET}}\n"+
		"  - {id: notes, kind: files, tier: trusted-internal, files: {root: ./notes}}\n"+
		"  - {id: handbook, kind: files, tier: trusted-internal, files: {root: ./handbook}}\n")
	data := filepath.Join(dir, "data")

	srv, stop := serveUntil(t, cfg)
	for _, inst := range []string{"support", "notes", "handbook"} {
		srv.post(t, "/v1/installations/"+inst+"/sync")
	}
	if got := deliver(t, srv.base, "hooks", secret, canaryIssue(t, "2026-11-03T10:00:00Z"), "d-1"); got != http.StatusAccepted {
		t.Fatalf("signed delivery: %d", got)
	}
	var planted, hb map[string]string
	// The four syncs run as queued jobs, in any order: wait for the
	// handbook as for the canary's three documents.
	waitFor(t, func() bool {
		planted = srv.retrieveDocs(t, canary)
		hb = srv.retrieveDocs(t, "blue green deploy router")
		return len(planted) == 3 && hb["handbook"] != ""
	})
	// An edit of the issue waits in the job stream: serve runs without
	// its worker now.
	stop()
	srv, stop = serveUntil(t, cfg, "--role", "api")
	if got := deliver(t, srv.base, "hooks", secret, canaryIssue(t, "2026-11-03T11:00:00Z"), "d-1b"); got != http.StatusAccepted {
		t.Fatalf("signed delivery of an edit: %d", got)
	}
	if len(filesWith(t, filepath.Join(data, "nats"), canary)) == 0 {
		t.Fatal("the canary is in no file of the job stream before the erasure: the scan cannot see it")
	}
	// The scan can find the canaries: they are in the store now.
	for _, c := range []string{canary, idCanary} {
		if dbURL == "" && len(filesWith(t, data, c)) == 0 {
			t.Fatalf("%s is in no file under data_dir before the erasure: the scan cannot see it", c)
		}
		if dbURL != "" && len(rowsWith(t, dbURL, c)) == 0 {
			t.Fatalf("%s is in no row before the erasure: the scan cannot see it", c)
		}
	}

	// A dry run lists what would go and changes nothing.
	if code, out, errs := runCmd(t, "erase", "--dry-run", "--author", sender, "--config", cfg); code != 0 ||
		!strings.HasPrefix(out, "would erase 1 document") || !strings.Contains(out, planted["support"]) {
		t.Fatalf("erase --dry-run: exit %d, want the mail listed\n%s\n%s", code, out, errs)
	}
	if got := srv.retrieveDocs(t, canary); len(got) != 3 {
		t.Fatalf("after the dry run retrieval serves the canary from %v, want all three", got)
	}

	for _, args := range [][]string{
		{"erase", "--author", "Canary Sender <" + strings.ToUpper(sender) + ">"},
		{"erase", "--document", planted["hooks"]},
		{"erase", "--installation", "notes"},
	} {
		code, out, errs := runCmd(t, append(args, "--config", cfg)...)
		if code != 0 || !strings.HasPrefix(out, "erased 1 document") {
			t.Fatalf("%v: exit %d\n%s\n%s\n%s", args, code, out, errs, srv.log())
		}
	}
	if got := srv.retrieveDocs(t, canary); len(got) != 0 {
		t.Fatalf("retrieval still serves the canary from %v", got)
	}
	if hb := srv.retrieveDocs(t, "blue green deploy router"); hb["handbook"] == "" {
		t.Fatalf("the erasure took the handbook too: %v", hb)
	}
	stop()
	checkNoCanary(t, data, dbURL, "after the erasure", canary, idCanary)

	// The sources still hold it: a re-sync, queued and in the foreground,
	// and fresh deliveries bring nothing back. The mailbox is made anew,
	// so the mail is read again, not skipped as seen.
	remakeInbox(t, ts, day, mails)
	srv, stop = serveUntil(t, cfg)
	for _, inst := range []string{"support", "notes"} {
		srv.post(t, "/v1/installations/"+inst+"/sync")
	}
	if got := deliver(t, srv.base, "hooks", secret, canaryIssue(t, "2026-11-03T10:00:00Z"), "d-2"); got != http.StatusOK {
		t.Fatalf("the same delivery again: %d, want 200 (a duplicate)", got)
	}
	if got := deliver(t, srv.base, "hooks", secret, canaryIssue(t, "2026-11-04T10:00:00Z"), "d-3"); got != http.StatusAccepted {
		t.Fatalf("an edit of the erased issue: %d, want 202 (accepted, then dropped)", got)
	}
	// The rescan reads both mails again and skips the erased one.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve log:\n%s", srv.log())
		}
	})
	waitFor(t, func() bool {
		return srv.count(`msg=sync.dispatch installation=support seen=2 .* skipped=1 `) >= 1 &&
			srv.count(`msg=sync.dispatch installation=notes seen=1 queued=0 .* skipped=1`) >= 1 && srv.count(`msg=webhook.item_erased`) >= 1
	})
	if code, out, errs := runCmd(t, "sync", "notes", "--config", cfg); code != 0 || !strings.Contains(out, "1 skipped (1 erased)") {
		t.Fatalf("sync notes: exit %d, want it to skip the erased note\n%s\n%s", code, out, errs)
	}
	if got := srv.retrieveDocs(t, canary); len(got) != 0 {
		t.Fatalf("the re-sync brought the canary back in %v", got)
	}
	if got := srv.retrieveDocs(t, "printer floor jammed"); got["support"] == "" {
		t.Fatalf("the other mail is gone: %v", got)
	}
	stop()
	// The rescan recorded the erased mail's Message-ID in the connector's
	// UID map again, as it records every message it meets (an identifier,
	// no text: see README, Erasure); its text stays out.
	checkNoCanary(t, data, dbURL, "after the re-sync", canary)

	// The tombstones are what keeps it out: lifted, the same sources
	// bring the canary back.
	for _, args := range [][]string{
		{"erase", "--lift", "--author", sender},
		{"erase", "--lift", "--installation", "support"},
		{"erase", "--lift", "--installation", "hooks"},
		{"erase", "--lift", "--installation", "notes"},
	} {
		if code, out, errs := runCmd(t, append(args, "--config", cfg)...); code != 0 || !strings.HasPrefix(out, "1 tombstone lifted") {
			t.Fatalf("%v: exit %d, want one tombstone lifted\n%s\n%s", args, code, out, errs)
		}
	}
	if code, out, errs := runCmd(t, "erase", "--list", "--config", cfg); code != 0 || out != "no tombstones\n" {
		t.Fatalf("erase --list after lifting: exit %d\n%s\n%s", code, out, errs)
	}
	remakeInbox(t, ts, day, mails)
	srv, stop = serveUntil(t, cfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve log after lifting:\n%s", srv.log())
		}
	})
	for _, inst := range []string{"support", "notes"} {
		srv.post(t, "/v1/installations/"+inst+"/sync")
	}
	if got := deliver(t, srv.base, "hooks", secret, canaryIssue(t, "2026-11-05T10:00:00Z"), "d-4"); got != http.StatusAccepted {
		t.Fatalf("an edit of the issue after lifting: %d, want 202", got)
	}
	waitFor(t, func() bool { return len(srv.retrieveDocs(t, canary)) == 3 })
	stop()
	if dbURL == "" && len(filesWith(t, data, canary)) == 0 {
		t.Fatal("the canary is served again but in no file under data_dir: the scan cannot see it")
	}
	if dbURL != "" && len(rowsWith(t, dbURL, canary)) == 0 {
		t.Fatal("the canary is served again but in no row: the scan cannot see it")
	}
}

// remakeInbox deletes INBOX and makes it anew with the mails: a new
// UIDVALIDITY, so a sync reads every mail again rather than skipping
// those it saw.
func remakeInbox(t *testing.T, ts *imaptest.Server, day time.Time, mails [][]byte) {
	t.Helper()
	if err := ts.User.Delete("INBOX"); err != nil {
		t.Fatal(err)
	}
	if err := ts.User.Create("INBOX", nil); err != nil {
		t.Fatal(err)
	}
	ts.MustAppend(t, "INBOX", day, mails...)
}

func checkNoCanary(t *testing.T, data, dbURL, when string, canaries ...string) {
	t.Helper()
	for _, c := range canaries {
		if found := filesWith(t, data, c); len(found) > 0 {
			t.Errorf("%s, %s is still in %q", when, c, found)
		}
		if dbURL != "" {
			if found := rowsWith(t, dbURL, c); len(found) > 0 {
				t.Errorf("%s, %s is still in %v", when, c, found)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestErasureReachesEveryProcess runs two serves on one store, as a
// deployment with nats.listen does: one in this process with the
// embedded NATS and its worker, one as a separate api process, each with
// its own in-memory search indexes (on SQLite). An erasure run by a
// third process (the CLI, over its own NATS connection) is served by
// neither from the next retrieval on, and the document beside it still
// is. SQLite: each search first checks the file's data_version, and the
// erasure's mark in the changes log makes every process reload its
// index from the rows. Postgres keeps no index in a process.
func TestErasureReachesEveryProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; -short skips it")
	}
	bin := filepath.Join(t.TempDir(), "ingestd")
	buildBinary(t, bin)
	eachStore(t, func(t *testing.T, store, dbURL string) {
		dir := t.TempDir()
		mustWrite(t, filepath.Join(dir, "notes", "secret.md"), "# Launch\n\nThe launch code word is "+canary+".\n")
		mustWrite(t, filepath.Join(dir, "notes", "lunch.md"), "# Lunch\n\nThe canteen serves soup on Fridays.\n")
		t.Setenv("TEST_ERASE_NATS_TOKEN", "nats-token-for-the-erasure-test")
		t.Setenv("TEST_ERASE_JOB_KEY", "job-key-for-the-erasure-test-0123456789")
		port := freeTCPPort(t)
		common := "data_dir: ./data\nlisten: 127.0.0.1:0\n" + store + "embedder: {kind: lexical, dims: 64}\n" +
			"installations:\n  - {id: notes, kind: files, tier: trusted-internal, files: {root: ./notes}}\n"
		natsAuth := "token_env: TEST_ERASE_NATS_TOKEN, job_key_env: TEST_ERASE_JOB_KEY"
		withNATS := filepath.Join(dir, "ingestd.yaml")
		mustWrite(t, withNATS, common+fmt.Sprintf("nats: {listen: \"%d\", %s}\n", port, natsAuth))
		apiOnly := filepath.Join(dir, "api.yaml")
		mustWrite(t, apiOnly, common+fmt.Sprintf("nats: {url: \"nats://127.0.0.1:%d\", %s}\n", port, natsAuth))

		worker, _ := serveUntil(t, withNATS)
		worker.post(t, "/v1/installations/notes/sync")
		var planted map[string]string
		waitFor(t, func() bool {
			planted = worker.retrieveDocs(t, canary)
			return planted["notes"] != ""
		})
		api := startServe(t, bin, apiOnly, "--role", "api")
		for name, base := range map[string]string{"worker": worker.base, "api": api.base} {
			if got := retrieveDocs(t, base, canary); got["notes"] != planted["notes"] {
				t.Fatalf("before the erasure the %s process serves %v, want %s\n%s", name, got, planted["notes"], api.log())
			}
		}

		if code, out, errs := runCmd(t, "erase", "--document", planted["notes"], "--config", apiOnly); code != 0 || !strings.HasPrefix(out, "erased 1 document") {
			t.Fatalf("erase: exit %d\n%s\n%s", code, out, errs)
		}
		for name, base := range map[string]string{"worker": worker.base, "api": api.base} {
			if got := retrieveDocs(t, base, canary); len(got) != 0 {
				t.Errorf("after the erasure the %s process still serves %v", name, got)
			}
			if got := retrieveDocs(t, base, "canteen soup fridays"); got["notes"] == "" {
				t.Errorf("after the erasure the %s process lost the other note", name)
			}
		}
	})
}
