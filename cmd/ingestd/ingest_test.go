package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ingestd/ingestd/connectors/web"
	"github.com/ingestd/ingestd/internal/terminal"
)

// mustURLConfig writes a config with one trusted url installation "docs"
// on site (loopback, so allow_private_networks is on).
func mustURLConfig(t *testing.T, site string) string {
	t.Helper()
	return writeConfig(t, fmt.Sprintf(`data_dir: ./data
installations:
  - id: docs
    kind: url
    tier: trusted-internal
    url: {urls: [%q], allow_private_networks: true, rate_per_host: "100/s"}
`, site+"/"))
}

// TestIngestURLStaysOnSite: `ingestd ingest URL` and the admin route's
// handler refuse a page of the installation's site that redirects to
// another site (another port, another name for the same server), name the
// rule and the hop, never ask the other site, and store nothing; a page
// that stays on the site is stored under its final URL.
func TestIngestURLStaysOnSite(t *testing.T) {
	var offSite atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		offSite.Add(1)
		io.WriteString(w, "<html><body><p>attacker text</p></body></html>")
	}))
	defer other.Close()
	var site *httptest.Server
	site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-other-port":
			http.Redirect(w, r, other.URL+"/page", http.StatusFound)
		case "/to-other-name":
			http.Redirect(w, r, strings.Replace(site.URL, "127.0.0.1", "localhost", 1)+"/page", http.StatusMovedPermanently)
		case "/on-site":
			http.Redirect(w, r, "/page", http.StatusSeeOther)
		case "/page":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><head><title>Page</title></head><body><p>on site</p></body></html>")
		default:
			http.NotFound(w, r)
		}
	}))
	defer site.Close()
	cfg := mustURLConfig(t, site.URL)

	for _, path := range []string{"/to-other-port", "/to-other-name"} {
		code, out, errs := runCmd(t, "ingest", site.URL+path, "--installation", "docs", "--config", cfg)
		if code == 0 || !strings.Contains(errs, "redirect 1 of "+site.URL+path) || !strings.Contains(errs, "is not on a site of installation \"docs\"") {
			t.Errorf("ingest %s: exit %d, stdout %q, stderr %q; want a refusal naming the hop and the rule", path, code, out, errs)
		}
	}

	a, err := openApp(context.Background(), &env{stdout: terminal.New(io.Discard), stderr: terminal.New(io.Discard), getenv: func(string) string { return "" },
		lookupEnv: func(string) (string, bool) { return "", false }}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, path := range []string{"/to-other-port", "/to-other-name"} {
		ids, err := a.AddURL(context.Background(), "docs", site.URL+path)
		if re, ok := web.IsRefused(err); !ok || re.Rule != "site" || len(ids) != 0 {
			t.Errorf("POST /v1/installations/docs/urls %s: ids %v, error %v; want a refusal by rule site", path, ids, err)
		}
	}
	if counts, err := a.Store().CountDocuments(context.Background(), nil); err != nil || len(counts) != 0 {
		t.Errorf("documents stored after refusals: %v (%v), want none", counts, err)
	}
	if got := offSite.Load(); got != 0 {
		t.Errorf("the other site was asked %d times", got)
	}

	ids, err := a.AddURL(context.Background(), "docs", site.URL+"/on-site")
	if err != nil || len(ids) != 1 {
		t.Fatalf("on-site redirect: ids %v, error %v", ids, err)
	}
	doc, err := a.Store().Document(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := doc.ExternalID, site.URL+"/page"; got != want {
		t.Errorf("stored external id = %q, want the final URL %q", got, want)
	}
}
