package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
)

// errNotModified is returned by get for a 304: the stored ETag still holds.
var errNotModified = errors.New("not modified")

// api is a thin GitHub REST client: conditional GETs, Link pagination by
// the URL GitHub gives (not by rebuilding page numbers), and the rate-limit
// and retry rules. go-github's types decode the bodies; its client is not
// used because its rate-limit bookkeeping reads the wall clock and it does
// not follow Link URLs verbatim.
type api struct {
	base  *url.URL
	http  *http.Client
	token func(ctx context.Context) (string, error) // nil: anonymous
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
	log   *slog.Logger
	inst  string

	// remaining and reset are the primary rate limit as last reported.
	remaining int
	reset     time.Time
}

// maxAttempts bounds retries of one request on 5xx, network errors and
// secondary limits; primary-limit waits are bounded separately.
const (
	maxAttempts     = 5
	maxLimitWaits   = 3
	firstBackoff    = time.Second
	maxBackoff      = time.Minute
	secondaryWait   = time.Minute // GitHub: wait at least a minute without Retry-After
	maxPrimaryWait  = 2 * time.Hour
	userAgent       = "ingestd"
	apiVersion      = "2022-11-28"
	mediaTypeGitHub = "application/vnd.github+json"
)

// response is what a successful get learned besides the body.
type response struct {
	status int
	etag   string
	next   string // absolute URL of the next page, "" on the last
}

// resolve turns an API path ("repos/a/b") or absolute URL into a URL.
func (a *api) resolve(ref string) (string, error) {
	u, err := a.base.Parse(strings.TrimPrefix(ref, "/"))
	if err != nil {
		return "", fmt.Errorf("parse url %q: %w", ref, err)
	}
	return u.String(), nil
}

// get fetches ref into v (nil to discard). etag, when set, is sent as
// If-None-Match; a 304 returns errNotModified (and costs no rate limit).
// 404 and 410 return ENOTFOUND. Rate limits are waited out (never a hot
// loop), 5xx and network errors retried with backoff.
func (a *api) get(ctx context.Context, ref, etag string, v any) (response, error) {
	u, err := a.resolve(ref)
	if err != nil {
		return response{}, err
	}
	backoff := firstBackoff
	limitWaits := 0
	for attempt := 1; ; attempt++ {
		if err := a.waitPrimary(ctx); err != nil {
			return response{}, err
		}
		resp, err := a.do(ctx, u, etag)
		if err != nil {
			if ctx.Err() != nil {
				return response{}, ctx.Err()
			}
			if attempt >= maxAttempts {
				return response{}, ingestd.Errorf(ingestd.EUNAVAILABLE, "github: GET %s: %v", u, err)
			}
			if err := a.wait(ctx, backoff, "network error", err.Error()); err != nil {
				return response{}, err
			}
			backoff = min(backoff*2, maxBackoff)
			continue
		}
		a.observe(resp.Header)
		switch {
		case resp.StatusCode == http.StatusNotModified:
			drain(resp)
			return response{status: resp.StatusCode, etag: etag}, errNotModified
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			defer resp.Body.Close()
			if v != nil {
				if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
					return response{}, fmt.Errorf("github: decode %s: %w", u, err)
				}
			}
			return response{status: resp.StatusCode, etag: resp.Header.Get("ETag"), next: nextLink(resp.Header.Get("Link"))}, nil
		case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
			drain(resp)
			return response{status: resp.StatusCode}, ingestd.Errorf(ingestd.ENOTFOUND, "github: GET %s: %s", u, resp.Status)
		case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests:
			res, again, refund, err := a.limited(ctx, u, resp, attempt, &limitWaits)
			if refund {
				attempt-- // waiting for the reset is not a failed attempt
			}
			if again {
				continue
			}
			return res, err
		case resp.StatusCode >= 500:
			drain(resp)
			if attempt >= maxAttempts {
				return response{}, ingestd.Errorf(ingestd.EUNAVAILABLE, "github: GET %s: %s after %d attempts", u, resp.Status, attempt)
			}
			if err := a.wait(ctx, backoff, "server error", resp.Status); err != nil {
				return response{}, err
			}
			backoff = min(backoff*2, maxBackoff)
		case resp.StatusCode == http.StatusUnauthorized:
			drain(resp)
			return response{status: resp.StatusCode}, ingestd.Errorf(ingestd.EUNAUTHORIZED, "github: GET %s: %s (check the token)", u, resp.Status)
		default:
			body := readSmall(resp)
			return response{status: resp.StatusCode}, ingestd.Errorf(ingestd.EINVALID, "github: GET %s: %s: %s", u, resp.Status, body)
		}
	}
}

// limited decides what a 403 or 429 means: a secondary limit with
// Retry-After, an exhausted primary limit (waited out until its reset;
// refund says the attempt does not count) or a secondary limit without
// it are waited for and tried again (again); any other 403 is EFORBIDDEN.
// It gives up with EUNAVAILABLE after maxAttempts, or maxLimitWaits waits
// for the primary limit.
func (a *api) limited(ctx context.Context, u string, resp *http.Response, attempt int, limitWaits *int) (res response, again, refund bool, err error) {
	body := readSmall(resp)
	if d, ok := retryAfter(resp.Header, a.now()); ok {
		if attempt >= maxAttempts {
			return response{}, false, false, ingestd.Errorf(ingestd.EUNAVAILABLE, "github: GET %s: still limited after %d attempts", u, attempt)
		}
		if err := a.wait(ctx, d, "secondary rate limit", "Retry-After"); err != nil {
			return response{}, false, false, err
		}
		return response{}, true, false, nil
	}
	if resp.Header.Get("X-RateLimit-Remaining") == "0" {
		*limitWaits++
		if *limitWaits > maxLimitWaits {
			return response{}, false, false, ingestd.Errorf(ingestd.EUNAVAILABLE, "github: GET %s: rate limit still exhausted after %d waits", u, maxLimitWaits)
		}
		d := secondaryWait // no usable reset: wait as for a secondary limit
		if !a.reset.IsZero() && a.reset.After(a.now()) {
			d = min(a.reset.Sub(a.now())+time.Second, maxPrimaryWait)
		}
		a.remaining, a.reset = 1, time.Time{} // one try after the wait; observe corrects it
		if err := a.wait(ctx, d, "rate limit exhausted", "X-RateLimit-Remaining: 0"); err != nil {
			return response{}, false, false, err
		}
		return response{}, true, true, nil // waiting for the reset is not a failed attempt
	}
	lower := strings.ToLower(body)
	if resp.StatusCode == http.StatusTooManyRequests || strings.Contains(lower, "secondary rate limit") || strings.Contains(lower, "abuse") {
		if attempt >= maxAttempts {
			return response{}, false, false, ingestd.Errorf(ingestd.EUNAVAILABLE, "github: GET %s: still limited after %d attempts", u, attempt)
		}
		if err := a.wait(ctx, secondaryWait*time.Duration(attempt), "secondary rate limit", "no Retry-After"); err != nil {
			return response{}, false, false, err
		}
		return response{}, true, false, nil
	}
	return response{status: resp.StatusCode}, false, false, ingestd.Errorf(ingestd.EFORBIDDEN, "github: GET %s: %s", u, resp.Status)
}

func (a *api) do(ctx context.Context, u, etag string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", mediaTypeGitHub)
	req.Header.Set("X-GitHub-Api-Version", apiVersion)
	req.Header.Set("User-Agent", userAgent)
	if etag != "" {
		req.Header.Set("If-None-Match", etag)
	}
	if a.token != nil {
		tok, err := a.token(ctx)
		if err != nil {
			return nil, fmt.Errorf("github token: %w", err)
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	return a.http.Do(req)
}

// observe records the primary rate limit a response reports.
func (a *api) observe(h http.Header) {
	rem, err1 := strconv.Atoi(h.Get("X-RateLimit-Remaining"))
	reset, err2 := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	a.remaining, a.reset = rem, time.Unix(reset, 0)
}

// waitPrimary sleeps until the reset when the primary limit is exhausted.
// A reset already past (or implausibly far) is not waited for beyond
// maxPrimaryWait.
func (a *api) waitPrimary(ctx context.Context) error {
	if a.remaining > 0 || a.reset.IsZero() {
		return nil
	}
	d := a.reset.Sub(a.now()) + time.Second // GitHub's reset is in whole seconds
	a.remaining, a.reset = 1, time.Time{}   // one try after the wait; observe corrects it
	if d <= 0 {
		return nil
	}
	return a.wait(ctx, min(d, maxPrimaryWait), "rate limit exhausted", "X-RateLimit-Remaining: 0")
}

// wait logs why and until when, then sleeps d (or until ctx ends).
func (a *api) wait(ctx context.Context, d time.Duration, why, detail string) error {
	a.log.Warn("github: waiting", "installation", a.inst, "why", why, "detail", detail,
		"for", d.String(), "until", a.now().Add(d).UTC().Format(time.RFC3339))
	return a.sleep(ctx, d)
}

// retryAfter reads a Retry-After header (seconds or HTTP date).
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return max(time.Duration(s)*time.Second, time.Second), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), time.Second), true
	}
	return secondaryWait, true
}

// again reports whether ref names a page of a listing already read (read
// holds their resolved URLs) and records it: a Link rel="next" that leads
// back would page forever.
func (a *api) again(read map[string]bool, ref string) bool {
	u, err := a.resolve(ref)
	if err != nil {
		return false // get reports it
	}
	if read[u] {
		return true
	}
	read[u] = true
	return false
}

// nextLink returns the rel="next" URL of a Link header, "" when none.
func nextLink(h string) string {
	for _, part := range strings.Split(h, ",") {
		segs := strings.Split(part, ";")
		if len(segs) < 2 {
			continue
		}
		u := strings.TrimSpace(segs[0])
		if !strings.HasPrefix(u, "<") || !strings.HasSuffix(u, ">") {
			continue
		}
		for _, p := range segs[1:] {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.TrimSpace(k) == "rel" && strings.Trim(strings.TrimSpace(v), `"`) == "next" {
				return u[1 : len(u)-1]
			}
		}
	}
	return ""
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

func readSmall(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	return strings.TrimSpace(string(b))
}
