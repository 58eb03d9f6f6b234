package web

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
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

// publicAddr is the address testNet's resolver answers for every name: a
// public one, so the guard's address rules hold as in production.
var publicAddr = netip.MustParseAddr("93.184.216.34")

// anyResolver answers publicAddr for every host name.
type anyResolver struct{}

func (anyResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{publicAddr}, nil
}

// testNet serves any number of named sites from two local servers, one
// plain and one TLS (its certificate covers example.com and
// *.example.com). A source built by MustNetSource resolves every name to
// publicAddr, and its guard's dial hook, called after every check has
// passed, reaches the TLS server for ports 443 and 8443 and the plain one
// for any other. A route is chosen by scheme, host (lower case, default
// port and trailing dot dropped) and request URI:
// "https://docs.example.com/a?b". Every request is recorded the same way.
type testNet struct {
	plain, tls *httptest.Server
	mu         sync.Mutex
	routes     map[string]http.HandlerFunc
	seen       []string
}

// MustNet starts a testNet that lives until the test ends.
func MustNet(tb testing.TB) *testNet {
	tb.Helper()
	n := &testNet{routes: map[string]http.HandlerFunc{}}
	n.plain = httptest.NewServer(http.HandlerFunc(n.serve))
	n.tls = httptest.NewTLSServer(http.HandlerFunc(n.serve))
	tb.Cleanup(n.plain.Close)
	tb.Cleanup(n.tls.Close)
	return n
}

func (n *testNet) serve(w http.ResponseWriter, r *http.Request) {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	host := strings.ToLower(r.Host)
	if h, p, err := net.SplitHostPort(host); err == nil && (scheme == "https" && p == "443" || scheme == "http" && p == "80") {
		host = h
	}
	if h, p, err := net.SplitHostPort(host); err == nil {
		host = net.JoinHostPort(strings.TrimSuffix(h, "."), p)
	} else {
		host = strings.TrimSuffix(host, ".")
	}
	key := scheme + "://" + host + r.URL.RequestURI()
	n.mu.Lock()
	n.seen = append(n.seen, key)
	h, ok := n.routes[key]
	n.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	h(w, r)
}

// page serves body with the content type at u.
func (n *testNet) page(u, ctype, body string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.routes[u] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ctype)
		fmt.Fprint(w, body)
	}
}

// html serves a small HTML page at u.
func (n *testNet) html(u, title, body string) {
	n.page(u, "text/html; charset=utf-8", "<html><head><title>"+title+"</title></head><body>"+body+"</body></html>")
}

// redirect answers u with status and a Location header sent as written.
func (n *testNet) redirect(u string, status int, location string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.routes[u] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header()["Location"] = []string{location}
		w.WriteHeader(status)
	}
}

// outside returns the requests seen since the last reset whose origin
// (scheme://host) is none of origins.
func (n *testNet) outside(origins ...string) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, k := range n.seen {
		scheme, rest, _ := strings.Cut(k, "://")
		host, _, _ := strings.Cut(rest, "/")
		if !slices.Contains(origins, scheme+"://"+host) {
			out = append(out, k)
		}
	}
	return out
}

// reset forgets the requests seen so far.
func (n *testNet) reset() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.seen = nil
}

// MustNetSource builds a source of the tier whose fetches reach n.
func MustNetSource(tb testing.TB, n *testNet, tier ingestd.Tier, cfg Config) *Source {
	tb.Helper()
	src := MustSource(tb, tier, cfg, anyResolver{})
	src.guard.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		to := n.plain.Listener.Addr().String()
		if port == "443" || port == "8443" {
			to = n.tls.Listener.Addr().String()
		}
		var d net.Dialer
		return d.DialContext(ctx, network, to)
	}
	pool := x509.NewCertPool()
	pool.AddCert(n.tls.Certificate())
	transportOf(src).TLSClientConfig = &tls.Config{RootCAs: pool}
	return src
}

// transportOf is the HTTP transport every fetch of src goes through.
func transportOf(src *Source) *http.Transport {
	return src.fetch.tr
}
