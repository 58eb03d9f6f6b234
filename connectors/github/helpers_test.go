package github_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/connectortest"
)

// apiDir holds recorded GitHub API responses (see testdata/NOTICE.md).
const apiDir = "testdata/github-api"

// recording is one github3py cassette interaction.
type recording struct {
	Request struct {
		Method string `json:"method"`
		URI    string `json:"uri"`
	} `json:"request"`
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

// MustRecording reads a github3py recording from apiDir.
func MustRecording(tb testing.TB, name string) recording {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(apiDir, name))
	if err != nil {
		tb.Fatal(err)
	}
	var r recording
	if err := json.Unmarshal(b, &r); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return r
}

// route is what the fake API answers for one path.
type route struct {
	status  int
	headers map[string]string
	body    []byte
}

// request is one request the fake API saw.
type request struct {
	Method, Path, Query, IfNoneMatch, Auth string
}

// fakeAPI serves recorded (and a few synthesized) GitHub responses by
// path, ignoring the query; a GET whose If-None-Match equals the route's
// ETag gets a 304. Hosts in Link and Location headers are rewritten to the
// server. before, when set, may answer a request itself (rate limits).
type fakeAPI struct {
	*httptest.Server
	mu       sync.Mutex
	routes   map[string]route
	requests []request
	before   func(w http.ResponseWriter, r *http.Request) bool
}

// MustFakeAPI starts a fake API server; it is closed with the test.
func MustFakeAPI(tb testing.TB) *fakeAPI {
	tb.Helper()
	f := &fakeAPI{routes: map[string]route{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(f.Close)
	return f
}

// record serves a recording at the path of its request URI.
func (f *fakeAPI) record(tb testing.TB, name string) {
	tb.Helper()
	r := MustRecording(tb, name)
	path := strings.TrimPrefix(r.Request.URI, "https://api.github.com")
	path, _, _ = strings.Cut(path, "?")
	f.set(path, r.Status, r.Headers, r.Body)
}

// set serves body at path.
func (f *fakeAPI) set(path string, status int, headers map[string]string, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.routes[path] = route{status: status, headers: headers, body: body}
}

// setJSON serves v as a 200 with the etag.
func (f *fakeAPI) setJSON(tb testing.TB, path, etag string, v any) {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	f.set(path, 200, map[string]string{"Content-Type": "application/json", "ETag": etag}, b)
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, IfNoneMatch: r.Header.Get("If-None-Match"), Auth: r.Header.Get("Authorization")})
	before := f.before
	rt, ok := f.routes[r.URL.Path]
	f.mu.Unlock()
	if before != nil && before(w, r) {
		return
	}
	if !ok {
		http.Error(w, `{"message":"Not Found"}`, http.StatusNotFound)
		return
	}
	etag := rt.headers["ETag"]
	if etag != "" && r.Header.Get("If-None-Match") == etag {
		w.Header().Set("ETag", etag)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	for k, v := range rt.headers {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Content-Encoding", "Status":
			continue
		case "Link", "Location":
			v = strings.ReplaceAll(v, "https://api.github.com", f.URL)
		}
		w.Header().Set(k, v)
	}
	w.WriteHeader(rt.status)
	w.Write(rt.body)
}

// Requests returns the requests seen so far and forgets them.
func (f *fakeAPI) Requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.requests
	f.requests = nil
	return out
}

// fakeClock is an injected clock whose Sleep advances it and records
// how long it was asked to wait.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// byID indexes the pass's Puts by external id; a later Put of an id wins.
func byID(p *connectortest.Pass) map[string]ingestd.Item {
	m := map[string]ingestd.Item{}
	for _, it := range p.Puts() {
		m[it.ExternalID] = it
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
