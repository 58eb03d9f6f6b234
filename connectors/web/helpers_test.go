package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/connectortest"
)

// newPass returns a pass that panics on Complete: the url connector must
// never declare a crawl complete.
func newPass(opts *connectortest.Options) *connectortest.Pass {
	o := connectortest.Options{}
	if opts != nil {
		o = *opts
	}
	o.OnComplete = func() { panic("the url connector must never declare a crawl complete") }
	return connectortest.New(&o)
}

// putIDs lists the external ids put in the pass, sorted.
func putIDs(p *connectortest.Pass) []string {
	ids := p.PutIDs()
	sort.Strings(ids)
	return ids
}

// sitePage is one page a test site serves.
type sitePage struct {
	ctype string
	body  string
}

// request is what the test site saw.
type request struct {
	path, ifNoneMatch, ifModifiedSince, userAgent string
}

// testSite is an httptest server with pages that tests can change, which
// answers conditional requests with 304 and records every request.
type testSite struct {
	*httptest.Server
	mu    sync.Mutex
	pages map[string]sitePage
	reqs  []request
}

const lastModified = "Mon, 02 Jan 2006 15:04:05 GMT"

// MustSite serves pages (path -> page) from loopback until the test ends.
func MustSite(tb testing.TB, pages map[string]sitePage) *testSite {
	tb.Helper()
	s := &testSite{pages: pages}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.Close)
	return s
}

func (s *testSite) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.reqs = append(s.reqs, request{path: r.URL.RequestURI(), ifNoneMatch: r.Header.Get("If-None-Match"),
		ifModifiedSince: r.Header.Get("If-Modified-Since"), userAgent: r.Header.Get("User-Agent")})
	p, ok := s.pages[r.URL.RequestURI()]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256([]byte(p.body))
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", lastModified)
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", p.ctype)
	fmt.Fprint(w, p.body)
}

func (s *testSite) setPage(path string, p *sitePage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p == nil {
		delete(s.pages, path)
	} else {
		s.pages[path] = *p
	}
}

// takeRequests returns and forgets the requests seen so far.
func (s *testSite) takeRequests() []request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.reqs
	s.reqs = nil
	return out
}

// MustSource builds a source for an installation of the tier.
func MustSource(tb testing.TB, tier ingestd.Tier, cfg Config, r Resolver) *Source {
	tb.Helper()
	if cfg.RatePerHost == "" {
		cfg.RatePerHost = "1000/s"
	}
	src, err := NewSource(ingestd.Installation{ID: "web", Kind: "url", Tier: tier}, Options{Config: cfg, Resolver: r, Version: "test"})
	if err != nil {
		tb.Fatalf("NewSource: %v", err)
	}
	return src
}

// MustSync runs one pass and fails the test if it returns an error.
func MustSync(tb testing.TB, src *Source, p *connectortest.Pass) {
	tb.Helper()
	if err := src.Sync(context.Background(), p); err != nil {
		tb.Fatalf("Sync: %v", err)
	}
}

// mapResolver answers host names from a map.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[strings.ToLower(host)]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// readFixture reads testdata/<name>.
func readFixture(tb testing.TB, name string) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
