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
	rich "github.com/ingestd/ingestd/connectors/internal/extract"
)

// Content types a page may have; anything else is refused before its body
// is read, unless it is a PDF, DOCX or ODT (pageAccept).
var pageTypes = []string{"text/html", "application/xhtml+xml", "text/plain", "text/markdown", "text/x-markdown"}

// markupTypes are the page types read as the markup they say they are,
// never sniffed for a rich document.
var markupTypes = []string{"text/html", "application/xhtml+xml", "text/markdown", "text/x-markdown"}

// accept says which responses a fetch reads past their first bytes.
type accept struct {
	types []string // media types; none means any
	// rich takes a PDF, DOCX or ODT too: by its media type, or by its
	// first bytes under any type but markupTypes (a PDF served as
	// application/octet-stream or text/plain), as rich.Detect says.
	rich bool
}

// pageAccept is what a page fetch takes.
var pageAccept = accept{types: pageTypes, rich: true}

// fetcher makes guarded, bounded, polite GET requests. Every request any
// part of the connector makes (a page, robots.txt, a sitemap) goes through
// get, which holds the request, every redirect hop and the final URL to
// the guard and to a scope; no other code reaches the network.
type fetcher struct {
	tr        *http.Transport
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
	f.tr = &http.Transport{
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
	return f
}

// trail is the redirects one fetch has followed, for refusals that name
// the hop.
type trail struct {
	start *url.URL
	hops  int
	last  *url.URL
}

func (t *trail) at() string {
	return fmt.Sprintf("redirect %d of %s goes to", t.hops, t.start.Redacted())
}

// checkRedirect is the http.Client's CheckRedirect for one fetch: each hop
// is counted, held to the guard's static rules (its addresses are checked
// again when dialled) and to the scope, before it is requested.
func (f *fetcher) checkRedirect(within *scope, t *trail) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		t.hops, t.last = len(via), req.URL
		if len(via) > maxRedirects {
			return &RefusedError{Target: req.URL.Redacted(), Rule: "redirects",
				Reason: fmt.Sprintf("%s %s: stopped after %d redirects", t.at(), req.URL.Redacted(), maxRedirects)}
		}
		if err := f.guard.CheckURL(req.URL); err != nil {
			return onHop(err, t)
		}
		if re := within.refuse(req.URL, t.at()); re != nil {
			return re
		}
		return nil
	}
}

// onHop says which redirect a guard refusal happened at, when it happened
// after one (a hop's address is refused when it is dialled).
func onHop(err error, t *trail) error {
	re, ok := IsRefused(err)
	if !ok || t.hops == 0 || strings.HasPrefix(re.Reason, "redirect ") {
		return err
	}
	c := *re
	c.Reason = fmt.Sprintf("%s %s: %s", t.at(), t.last.Redacted(), re.Reason)
	return &c
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
	// Rich is the format of a PDF, DOCX or ODT body (accept.rich);
	// Unknown for any other.
	Rich rich.Format
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

// get fetches u, which with every redirect hop and the final URL must be
// within the scope: a hop off it is refused (a *RefusedError, rule "site"
// or "downgrade", naming the hop) before it is requested, as is one the
// guard refuses, and after maxRedirects hops the fetch stops (rule
// "redirects"). A 304 comes back with Status 304 and no body; any other
// non-2xx status is a *statusError. The media type must be one that a
// accepts, else it is refused (EINVALID) before more than its first bytes
// are read. Bodies over maxBytes, before or after gzip decompression, fail
// with ETOOLARGE as soon as the cap is passed.
func (f *fetcher) get(ctx context.Context, u *url.URL, within *scope, cond validators, a accept) (*response, error) {
	if within == nil {
		return nil, ingestd.Errorf(ingestd.EINTERNAL, "fetch %s without a scope", u.Redacted())
	}
	if err := f.guard.CheckURL(u); err != nil {
		return nil, err
	}
	if re := within.refuse(u, ""); re != nil {
		return nil, re
	}
	if err := f.wait(ctx, u.Host); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := f.newRequest(ctx, u, cond, a)
	if err != nil {
		return nil, err
	}
	t := &trail{start: u}
	client := &http.Client{Transport: f.tr, CheckRedirect: f.checkRedirect(within, t)}
	resp, err := client.Do(req)
	if err != nil {
		return nil, f.doError(ctx, u, t, err)
	}
	defer resp.Body.Close()
	// Every hop was checked; the final URL is checked again here so that
	// what is stored under its name can never be off the scope.
	if re := within.refuse(resp.Request.URL, "the final URL of "+u.Redacted()+" is"); re != nil {
		return nil, re
	}
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
	head := make([]byte, rich.HeadBytes)
	n, err := io.ReadFull(body, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, readErr(out.URL, err)
	}
	head = head[:n]
	if err := a.check(out, resp.Header.Get("Content-Type"), head); err != nil {
		return nil, err
	}
	rest, err := io.ReadAll(body)
	if err != nil {
		return nil, readErr(out.URL, err)
	}
	out.Body = append(head, rest...)
	return out, nil
}

// doError is what a failed request of u returns: the refusal of a
// redirect hop (t), an application error from the transport (the
// guard's), EUNAVAILABLE when the timeout passed, else err wrapped.
func (f *fetcher) doError(ctx context.Context, u *url.URL, t *trail, err error) error {
	if re, ok := IsRefused(onHop(err, t)); ok {
		return re
	}
	var ie *ingestd.Error
	if errors.As(err, &ie) {
		return ie
	}
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "%s: no response within %s", u.Redacted(), f.timeout)
	}
	return fmt.Errorf("fetch %s: %w", u.Redacted(), err)
}

// newRequest is the GET of u: our user agent, the media types a accepts,
// gzip, and the validators of a conditional request.
func (f *fetcher) newRequest(ctx context.Context, u *url.URL, cond validators, a accept) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "%s: %v", u.Redacted(), err)
	}
	req.Header.Set("User-Agent", f.userAgent)
	if a.rich {
		req.Header.Set("Accept", "text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,"+
			rich.MediaTypePDF+","+rich.MediaTypeDOCX+","+rich.MediaTypeODT+";q=0.8,*/*;q=0.1")
	} else {
		req.Header.Set("Accept", "text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,*/*;q=0.1")
	}
	req.Header.Set("Accept-Encoding", "gzip")
	if cond.ETag != "" {
		req.Header.Set("If-None-Match", cond.ETag)
	}
	if cond.LastModified != "" {
		req.Header.Set("If-Modified-Since", cond.LastModified)
	}
	return req, nil
}

// check sets out's content type (contentType, else sniffed from head),
// media type and rich kind, and refuses (EINVALID) a type a does not
// accept.
func (a accept) check(out *response, contentType string, head []byte) error {
	out.ContentType = contentType
	if out.ContentType == "" {
		out.ContentType = http.DetectContentType(head)
	}
	mt, _, err := mime.ParseMediaType(out.ContentType)
	if err != nil {
		return ingestd.Errorf(ingestd.EINVALID, "%s: content type %q: %v", out.URL.Redacted(), out.ContentType, err)
	}
	out.MediaType = strings.ToLower(mt)
	if a.rich && !contains(markupTypes, out.MediaType) {
		out.Rich = rich.Detect(out.URL.Path, out.ContentType, head)
	}
	if len(a.types) > 0 && !contains(a.types, out.MediaType) && out.Rich == rich.Unknown {
		also := ""
		if a.rich {
			also = ", or a PDF, DOCX or ODT document"
		}
		return ingestd.Errorf(ingestd.EINVALID, "%s: content type %s is not one of %s%s", out.URL.Redacted(), out.MediaType, strings.Join(a.types, ", "), also)
	}
	return nil
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
