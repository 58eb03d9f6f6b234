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
)

// fakePass records what a pass reports, in memory.
type fakePass struct {
	mu      sync.Mutex
	puts    []ingestd.Item
	deletes []string
	fails   map[string]error
	cursors map[string]string
}

var _ ingestd.Pass = (*fakePass)(nil)

func newFakePass() *fakePass {
	return &fakePass{fails: map[string]error{}, cursors: map[string]string{}}
}

// next starts a new pass over the same cursors.
func (p *fakePass) next() *fakePass {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := newFakePass()
	for k, v := range p.cursors {
		n.cursors[k] = v
	}
	return n
}

func (p *fakePass) Put(_ context.Context, it ingestd.Item) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.puts = append(p.puts, it)
	return nil
}

func (p *fakePass) Delete(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deletes = append(p.deletes, id)
	return nil
}

func (p *fakePass) Fail(id string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fails[id] = err
}

func (p *fakePass) Cursor(_ context.Context, key string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cursors[key], nil
}

func (p *fakePass) SetCursor(_ context.Context, key, value string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if value == "" {
		delete(p.cursors, key)
	} else {
		p.cursors[key] = value
	}
	return nil
}

func (p *fakePass) Total(int) {}

func (p *fakePass) Complete() { panic("the url connector must never declare a crawl complete") }

// putIDs lists the external ids put, sorted.
func (p *fakePass) putIDs() []string {
	out := make([]string, 0, len(p.puts))
	for _, it := range p.puts {
		out = append(out, it.ExternalID)
	}
	sort.Strings(out)
	return out
}

func (p *fakePass) item(tb testing.TB, id string) ingestd.Item {
	tb.Helper()
	for _, it := range p.puts {
		if it.ExternalID == id {
			return it
		}
	}
	tb.Fatalf("no item %s was put; put: %v", id, p.putIDs())
	return ingestd.Item{}
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
func MustSync(tb testing.TB, src *Source, p *fakePass) {
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
