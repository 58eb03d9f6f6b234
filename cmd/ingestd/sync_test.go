package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/imap/imaptest"
	"github.com/ingestd/ingestd/pipeline"
)

// syncCase is one installation of a connector kind, ready to sync: its
// config block and what a first pass must have seen.
type syncCase struct {
	kind  string
	block string // the installation's YAML, indented under installations
	// minSeen is a floor on the items the first pass sees.
	minSeen int
	// exact says the connector makes its Total exact by the end.
	exact bool
	// check, when set, looks at the first pass's summary further.
	check func(t *testing.T, sum pipeline.Summary)
}

// TestSyncSummaryAddsUpForEveryKind syncs one installation of each
// connector kind through `ingestd sync`: the summary adds up (added +
// changed + unchanged + deleted + failed + skipped = items seen) on the
// first pass and the second, in JSON and in the line a person reads.
func TestSyncSummaryAddsUpForEveryKind(t *testing.T) {
	for _, tt := range []syncCase{
		filesCase(t), imapCase(t), githubCase(t), webhookCase(t), urlCase(t),
	} {
		t.Run(tt.kind, func(t *testing.T) {
			cfg := writeConfig(t, "installations:\n"+tt.block)
			sum := mustSyncJSON(t, cfg, tt.kind)
			connectortest.MustAddUp(t, sum)
			if sum.Seen < tt.minSeen {
				t.Errorf("first pass saw %d items, want at least %d: %s", sum.Seen, tt.minSeen, sum)
			}
			if tt.exact && sum.Expected != sum.Seen {
				t.Errorf("the connector expected %d items and reported %d", sum.Expected, sum.Seen)
			}
			if tt.check != nil {
				tt.check(t, sum)
			}

			code, out, errs := runCmd(t, "sync", tt.kind, "--config", cfg)
			if code != 0 {
				t.Fatalf("second sync: exit %d\n%s\n%s", code, out, errs)
			}
			mustLineAddsUp(t, out)
			t.Logf("first pass: %s\nsecond pass:\n%s%s", sum, errs, out)
		})
	}
}

// mustSyncJSON runs `ingestd sync ID --json` and decodes the summary.
func mustSyncJSON(t *testing.T, cfg, id string) pipeline.Summary {
	t.Helper()
	code, out, errs := runCmd(t, "sync", id, "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("sync %s: exit %d\n%s\n%s", id, code, out, errs)
	}
	var sum pipeline.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("sync --json: %v\n%s", err, out)
	}
	return sum
}

var summaryLine = regexp.MustCompile(`: (\d+) items? seen = (?:(\d+) queued \+ )?(\d+) added \+ (\d+) changed \+ (\d+) unchanged \+ (\d+) deleted \+ (\d+) failed \+ (\d+) skipped`)

// mustLineAddsUp finds the summary line in the text output and adds it up
// as a person would.
func mustLineAddsUp(t *testing.T, out string) {
	t.Helper()
	m := summaryLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary line with every term in:\n%s", out)
	}
	n := make([]int, len(m))
	for i, s := range m[1:] {
		n[i+1], _ = strconv.Atoi(s)
	}
	if sum := n[2] + n[3] + n[4] + n[5] + n[6] + n[7] + n[8]; sum != n[1] {
		t.Errorf("summary line adds up to %d, says %d items seen:\n%s", sum, n[1], out)
	}
}

// filesCase: Markdown, an .eml with more attachments than max_attachments,
// a file over max_file_bytes and one that is not a message.
func filesCase(t *testing.T) syncCase {
	root := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.md", "# A\n\nalpha")
	write("b.md", "# B\n\n"+strings.Repeat("big ", 1000))
	write("mail/m.eml", string(attachments("m@x", 4)))
	write("mail/broken.eml", "// not a message")
	return syncCase{
		kind:    "files",
		block:   fmt.Sprintf("  - {id: files, kind: files, tier: trusted-internal, files: {root: %q, max_file_bytes: 3000, max_attachments: 2}}\n", root),
		minSeen: 8, // a.md, b.md skipped, m.eml + 2 children + 2 skipped, broken failed
		exact:   true,
		check: func(t *testing.T, sum pipeline.Summary) {
			if sum.SkippedBy["over max_attachments"] != 2 || sum.SkippedBy["over max_file_bytes"] != 1 || sum.Failed != 1 {
				t.Errorf("files summary %s, want 2 over max_attachments, 1 over max_file_bytes, 1 failed", sum)
			}
		},
	}
}

// imapCase: a mailbox with a duplicate delivery, a reused Message-ID and
// a message with more attachments than max_attachments.
func imapCase(t *testing.T) syncCase {
	ts := imaptest.MustServer(t, "support@example.com", "pw")
	day := time.Date(2024, 5, 30, 12, 0, 0, 0, time.UTC)
	first := attachments("a@x", 1)
	ts.MustAppend(t, "INBOX", day,
		first,
		append([]byte("Received: from elsewhere\r\n"), first...),
		[]byte("From: m@x\r\nSubject: same id\r\nMessage-ID: <a@x>\r\n\r\nanother body\r\n"),
		attachments("b@x", 5),
	)
	t.Setenv("TEST_SYNC_IMAP_PASSWORD", "pw")
	return syncCase{
		kind: "imap",
		block: fmt.Sprintf("  - {id: imap, kind: imap, tier: untrusted-external, imap: {addr: %q, username: support@example.com, "+
			"password_env: TEST_SYNC_IMAP_PASSWORD, tls: none, insecure: true, max_attachments: 2}}\n", ts.Addr),
		minSeen: 10, // 4 messages, a's attachment, b's 2 attachments and 3 skipped
		exact:   true,
		check: func(t *testing.T, sum pipeline.Summary) {
			if sum.Added != 6 || sum.SkippedBy["duplicate delivery"] != 1 || sum.SkippedBy["over max_attachments"] != 3 {
				t.Errorf("imap summary %s, want 6 added, 1 duplicate delivery, 3 over max_attachments", sum)
			}
		},
	}
}

// githubCase: a fake API with two issues, a pull request and a comment.
func githubCase(t *testing.T) syncCase {
	routes := map[string]string{
		"/repos/o/r": `{"full_name": "o/r", "default_branch": "main", "html_url": "https://github.com/o/r"}`,
		"/repos/o/r/issues": `[
{"number": 1, "title": "Printer", "body": "on fire", "state": "open", "html_url": "https://github.com/o/r/issues/1", "user": {"login": "a"}, "updated_at": "2024-06-01T00:00:00Z"},
{"number": 2, "title": "Scanner", "body": "jammed", "state": "closed", "state_reason": "not_planned", "html_url": "https://github.com/o/r/issues/2", "user": {"login": "b"}, "updated_at": "2024-06-02T00:00:00Z"},
{"number": 3, "title": "Fix", "body": "fixes #1", "state": "open", "html_url": "https://github.com/o/r/pull/3", "user": {"login": "c"}, "updated_at": "2024-06-03T00:00:00Z", "pull_request": {"url": "x"}}]`,
		"/repos/o/r/issues/comments": `[{"id": 10, "body": "me too", "html_url": "https://github.com/o/r/issues/1#issuecomment-10", "issue_url": "https://api.github.com/repos/o/r/issues/1", "user": {"login": "d"}, "updated_at": "2024-06-04T00:00:00Z"}]`,
		"/repos/o/r/pulls/comments":  `[]`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := routes[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("TEST_SYNC_GITHUB_TOKEN", "t")
	return syncCase{
		kind: "github",
		block: fmt.Sprintf("  - {id: github, kind: github, tier: untrusted-external, github: {repos: [o/r], token_env: TEST_SYNC_GITHUB_TOKEN, "+
			"base_url: %q, include: {docs: false}}}\n", srv.URL+"/"),
		minSeen: 4,
	}
}

// webhookCase: deliveries arrive through the handler, so a pass sees
// nothing, and says so.
func webhookCase(t *testing.T) syncCase {
	t.Setenv("TEST_SYNC_WEBHOOK_SECRET", "s")
	return syncCase{
		kind:  "webhook",
		block: "  - {id: webhook, kind: webhook, tier: untrusted-external, webhook: {flavor: github, secret_env: TEST_SYNC_WEBHOOK_SECRET}}\n",
		check: func(t *testing.T, sum pipeline.Summary) {
			if sum.Seen != 0 {
				t.Errorf("webhook pass saw %d items", sum.Seen)
			}
		},
	}
}

// urlCase: a site of three pages, one linking the others.
func urlCase(t *testing.T) syncCase {
	mux := http.NewServeMux()
	page := func(title, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, "<html><head><title>%s</title></head><body><h1>%s</h1><p>%s</p></body></html>", title, title, body)
		}
	}
	mux.HandleFunc("/", page("Home", `Welcome. <a href="/a">A</a> <a href="/b">B</a>`))
	mux.HandleFunc("/a", page("A", "Page A."))
	mux.HandleFunc("/b", page("B", "Page B."))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return syncCase{
		kind: "url",
		block: fmt.Sprintf("  - {id: url, kind: url, tier: trusted-internal, url: {urls: [%q], crawl: {depth: 1, max_pages: 10}, "+
			"allow_private_networks: true, rate_per_host: \"100/s\"}}\n", srv.URL+"/"),
		minSeen: 3,
	}
}

// attachments is a message with n text attachments.
func attachments(id string, n int) []byte {
	var b strings.Builder
	b.WriteString("From: Bob <bob@example.org>\r\nTo: support@example.com\r\nSubject: logs " + id + "\r\n" +
		"Date: Mon, 03 Jun 2024 10:00:00 +0000\r\nMessage-ID: <" + id + ">\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=ZZ\r\n\r\n--ZZ\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n")
	for i := range n {
		fmt.Fprintf(&b, "--ZZ\r\nContent-Type: text/plain\r\nContent-Disposition: attachment; filename=a%d.txt\r\n\r\nlog line %d\r\n", i, i)
	}
	b.WriteString("--ZZ--\r\n")
	return []byte(b.String())
}
