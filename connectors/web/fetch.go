package web

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ingestd/ingestd"
)

// Content types a page may have; anything else is refused before its body
// is read.
var pageTypes = []string{"text/html", "application/xhtml+xml", "text/plain", "text/markdown", "text/x-markdown"}

// fetcher makes guarded, bounded, polite GET requests.
type fetcher struct {
	client    *http.Client
	guard     *Guard
	userAgent string
	maxBytes  int64
	timeout   time.Duration

	mu       sync.Mutex
	rate     rate.Limit
	burst    int
	limiters map[string]*rate.Limiter
}

// maxRedirects is how many redirects one fetch follows.
const maxRedirects = 5

func newFetcher(g *Guard, userAgent string, maxBytes int64, timeout time.Duration, perHost rate.Limit) *fetcher {
	f := &fetcher{guard: g, userAgent: userAgent, maxBytes: maxBytes, timeout: timeout,
		rate: perHost, burst: 1, limiters: map[string]*rate.Limiter{}}
	tr := &http.Transport{
		Proxy:                  nil, // a proxy would be dialled instead of the checked address
		DialContext:            g.DialContext,
		ForceAttemptHTTP2:      true,
		DisableCompression:     true, // gzip is decoded here, under the size cap
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  timeout,
		MaxIdleConnsPerHost:    2,
		IdleConnTimeout:        30 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	f.client = &http.Client{
		Transport: tr,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return ingestd.Errorf(ingestd.EINVALID, "%s: stopped after %d redirects", via[0].URL.Redacted(), maxRedirects)
			}
			return g.CheckURL(req.URL)
		},
	}
	return f
}

// validators are what a conditional GET sends.
type validators struct {
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// response is a fetched body, decompressed and within the size cap, not
// yet decoded from its charset.
type response struct {
	URL         *url.URL // after redirects
	Status      int
	MediaType   string // lower case, without parameters
	ContentType string // as sent (with charset), or sniffed
	Validators  validators
	Body        []byte
}

// statusError is a response whose status is not 2xx or 304.
type statusError struct {
	URL    string
	Status int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s: HTTP %d %s", e.URL, e.Status, http.StatusText(e.Status))
}

// gone reports whether the status says the page no longer exists.
func (e *statusError) gone() bool {
	return e.Status == http.StatusNotFound || e.Status == http.StatusGone
}

// get fetches u. A 304 comes back with Status 304 and no body; any other
// non-2xx status is a *statusError. The media type must be one of allowed
// (none means any). Bodies over maxBytes, before or after gzip
// decompression, fail with ETOOLARGE as soon as the cap is passed.
func (f *fetcher) get(ctx context.Context, u *url.URL, cond validators, allowed []string) (*response, error) {
	if err := f.guard.CheckURL(u); err != nil {
		return nil, err
	}
	if err := f.wait(ctx, u.Host); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "%s: %v", u.Redacted(), err)
	}
	req.Header.Set("User-Agent", f.userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,*/*;q=0.1")
	req.Header.Set("Accept-Encoding", "gzip")
	if cond.ETag != "" {
		req.Header.Set("If-None-Match", cond.ETag)
	}
	if cond.LastModified != "" {
		req.Header.Set("If-Modified-Since", cond.LastModified)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		if re, ok := IsRefused(err); ok {
			return nil, re
		}
		var ie *ingestd.Error
		if errors.As(err, &ie) {
			return nil, ie
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "%s: no response within %s", u.Redacted(), f.timeout)
		}
		return nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	out := &response{URL: resp.Request.URL, Status: resp.StatusCode,
		Validators: validators{ETag: resp.Header.Get("ETag"), LastModified: resp.Header.Get("Last-Modified")}}
	switch {
	case resp.StatusCode == http.StatusNotModified:
		return out, nil
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10) // let a short body free the connection
		return nil, &statusError{URL: out.URL.Redacted(), Status: resp.StatusCode}
	}
	if resp.ContentLength > f.maxBytes {
		return nil, f.tooLarge(out.URL, fmt.Sprintf("(Content-Length %d)", resp.ContentLength))
	}

	var body io.Reader = &capReader{r: resp.Body, n: f.maxBytes, err: f.tooLarge(out.URL, "before decompression")}
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, ingestd.Errorf(ingestd.EINVALID, "%s: gzip body: %v", out.URL.Redacted(), err)
		}
		defer zr.Close()
		body = &capReader{r: zr, n: f.maxBytes, err: f.tooLarge(out.URL, "after decompression")}
	default:
		return nil, ingestd.Errorf(ingestd.EINVALID, "%s: content encoding %q is not supported (gzip is)", out.URL.Redacted(), enc)
	}

	// Check the type before reading more than a sniffing window.
	head := make([]byte, 512)
	n, err := io.ReadFull(body, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, readErr(out.URL, err)
	}
	head = head[:n]
	out.ContentType = resp.Header.Get("Content-Type")
	if out.ContentType == "" {
		out.ContentType = http.DetectContentType(head)
	}
	mt, _, err := mime.ParseMediaType(out.ContentType)
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "%s: content type %q: %v", out.URL.Redacted(), out.ContentType, err)
	}
	out.MediaType = strings.ToLower(mt)
	if len(allowed) > 0 && !contains(allowed, out.MediaType) {
		return nil, ingestd.Errorf(ingestd.EINVALID, "%s: content type %s is not one of %s", out.URL.Redacted(), out.MediaType, strings.Join(allowed, ", "))
	}
	rest, err := io.ReadAll(body)
	if err != nil {
		return nil, readErr(out.URL, err)
	}
	out.Body = append(head, rest...)
	return out, nil
}

func readErr(u *url.URL, err error) error {
	var ie *ingestd.Error
	if errors.As(err, &ie) {
		return ie
	}
	return fmt.Errorf("read %s: %w", u.Redacted(), err)
}

func (f *fetcher) tooLarge(u *url.URL, when string) error {
	return ingestd.Errorf(ingestd.ETOOLARGE, "%s: response exceeds max_bytes (%d bytes) %s", u.Redacted(), f.maxBytes, when)
}

// wait blocks until the host's rate limit lets one more request through.
func (f *fetcher) wait(ctx context.Context, host string) error {
	if f.rate == rate.Inf || f.rate <= 0 {
		return nil
	}
	f.mu.Lock()
	l, ok := f.limiters[host]
	if !ok {
		l = rate.NewLimiter(f.rate, f.burst)
		f.limiters[host] = l
	}
	f.mu.Unlock()
	return l.Wait(ctx)
}

// slowDown lowers a host's rate to one request per d (robots.txt
// Crawl-delay), never raising it. Delays over a minute are capped.
func (f *fetcher) slowDown(host string, d time.Duration) {
	if d <= 0 {
		return
	}
	d = min(d, time.Minute)
	lim := rate.Every(d)
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.limiters[host]
	if !ok {
		l = rate.NewLimiter(f.rate, f.burst)
		f.limiters[host] = l
	}
	if f.rate == rate.Inf || f.rate <= 0 || lim < l.Limit() {
		l.SetLimit(lim)
	}
}

// capReader reads at most n bytes from r and fails with err as soon as
// more arrive, so an oversized or decompression-bomb body stops early.
type capReader struct {
	r   io.Reader
	n   int64
	err error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.n < 0 {
		return 0, c.err
	}
	if int64(len(p)) > c.n+1 {
		p = p[:c.n+1]
	}
	n, err := c.r.Read(p)
	c.n -= int64(n)
	if c.n < 0 {
		return 0, c.err
	}
	return n, err
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
