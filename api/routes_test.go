package api_test

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
)

// routePattern is a REST route as the API mounts it ("GET /v1/dlq") and
// as docs/api.md writes it in its routes table (`GET /v1/dlq`).
var routePattern = regexp.MustCompile(`(GET|POST|PUT|PATCH|DELETE) (/[A-Za-z0-9_./{}-]*)`)

// openRoutes answer without a token on a server that has tokens: the
// probes, the console's static files (the page asks for a token) and
// webhook intake (authenticated by the delivery's signature).
var openRoutes = []string{"GET /healthz", "GET /readyz", "GET /ui/", "POST /v1/webhooks/{installation}"}

// mountedByName are the routes mounted under a pattern held in a
// variable (the guard's), not a literal this test can read.
var mountedByName = []string{"POST /mcp", "GET /ui/", "POST /v1/webhooks/{installation}"}

// TestEveryRouteIsDocumentedAndGuarded is where a new route shows it
// went where DESIGN says ("Where a new admin route goes"): every route a
// file of this package mounts is in docs/api.md's routes table, every
// route there is mounted, each asks for a token unless it is one of the
// open ones, and one the table marks (admin) refuses a token with only
// the retrieve scope. A route added without its row, or with the wrong
// scope, fails here.
func TestEveryRouteIsDocumentedAndGuarded(t *testing.T) {
	mounted := mountedRoutes(t)
	documented, admin := documentedRoutes(t)
	for _, r := range mounted {
		if !slices.Contains(documented, r) {
			t.Errorf("%s is mounted but not in docs/api.md's routes table", r)
		}
	}
	e := MustServe(t, ingestd.ModeEnforce, api.Options{
		Tokens: []api.Token{
			{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
			{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin, api.ScopeRetrieve, api.ScopeMetrics}},
		},
		Webhooks: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }),
		// Mounted only when set; never called, as every probe here is
		// refused before its handler runs.
		DeadLetters:      struct{ ingestd.DeadLetters }{},
		Erasures:         struct{ api.Erasures }{},
		GatewayDecisions: struct{ ingestd.GatewayLog }{},
	})
	for _, r := range documented {
		method, path, _ := strings.Cut(r, " ")
		probe := strings.NewReplacer("{id}", "x", "{installation}", "handbook").Replace(path)
		if strings.Contains(probe, "{") {
			t.Errorf("%s: no probe value for its path parameter; add one here", r)
			continue
		}
		if !slices.Contains(mounted, r) && !slices.Contains(mountedByName, r) {
			t.Errorf("%s is in docs/api.md but no file of package api mounts it", r)
		}
		status, body, _ := e.do(t, method, probe, "", nil)
		switch open := slices.Contains(openRoutes, r); {
		case open && status == http.StatusUnauthorized:
			t.Errorf("%s without a token: 401, want it open (%s)", r, body)
		case !open && status != http.StatusUnauthorized:
			t.Errorf("%s without a token: %d, want 401 (%s)", r, status, body)
		}
		if slices.Contains(admin, r) {
			if status, body, _ := e.do(t, method, probe, chatToken, nil); status != http.StatusForbidden {
				t.Errorf("%s (admin) with a retrieve-only token: %d, want 403 (%s)", r, status, body)
			}
		}
	}
}

// mountedRoutes reads the route patterns this package's files mount.
func mountedRoutes(t *testing.T) []string {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`\.Handle(?:Func)?\("([^"]+)"`).FindAllStringSubmatch(string(b), -1) {
			if r := routePattern.FindString(m[1]); r == m[1] && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	if len(out) < 10 {
		t.Fatalf("found %d mounted routes (%q): the pattern no longer matches how routes are mounted", len(out), out)
	}
	return out
}

// documentedRoutes reads docs/api.md's routes table: every route, and
// those whose row says (admin).
func documentedRoutes(t *testing.T) (all, admin []string) {
	b, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.SplitN(line, "|", 4)
		for _, code := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(cells[1], -1) {
			r := routePattern.FindString(code[1])
			if r == "" || slices.Contains(all, r) {
				continue
			}
			all = append(all, r)
			if strings.Contains(cells[2], "(admin") {
				admin = append(admin, r)
			}
		}
	}
	if len(all) < 10 {
		t.Fatalf("found %d routes in docs/api.md (%q): the table's format changed", len(all), all)
	}
	return all, admin
}
