package webhook_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd/connectors/webhook"
)

// maxWebhookBody is serve's cap (GitHub sends up to 25 MiB).
const maxWebhookBody = 25 << 20

// repeatByte reads as an endless run of one byte.
type repeatByte byte

func (b repeatByte) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// probe is a request body that records whether it was read.
type probe struct {
	r    io.Reader
	read atomic.Bool
}

func (p *probe) Read(b []byte) (int, error) {
	p.read.Store(true)
	return p.r.Read(b)
}

// bigRequest is a POST of n bytes of 'a' with the given headers.
func bigRequest(path string, n int64, body io.Reader, headers map[string]string) *http.Request {
	if body == nil {
		body = io.LimitReader(repeatByte('a'), n)
	}
	r := httptest.NewRequest(http.MethodPost, path, body)
	r.ContentLength = n
	r.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return r
}

// TestUnsignedBodyNeverRead sends 24 MiB bodies whose headers make no
// well-formed signature claim: each is refused with 401 without a byte of
// its body read.
func TestUnsignedBodyNeverRead(t *testing.T) {
	eps := map[string]webhook.Endpoint{
		"gh":  MustEndpoint(t, "gh", webhook.Config{}, ghSecret),
		"std": MustEndpoint(t, "std", webhook.Config{Flavor: "standard"}, whsec(stdKeyNew)),
	}
	now := strconv.FormatInt(t0.Unix(), 10)
	validSig := "v1," + strings.Repeat("A", 43) + "="
	tests := []struct {
		name    string
		path    string
		headers map[string]string
	}{
		{"github: no signature", "/v1/webhooks/gh", map[string]string{"X-GitHub-Event": "issues"}},
		{"github: sha1 only", "/v1/webhooks/gh", map[string]string{"X-Hub-Signature": "sha1=d03207e4b030cf234e3447bac4d93add4c6643d8"}},
		{"github: not hex", "/v1/webhooks/gh", map[string]string{"X-Hub-Signature-256": "sha256=zz"}},
		{"github: short", "/v1/webhooks/gh", map[string]string{"X-Hub-Signature-256": "sha256=" + strings.Repeat("0", 62)}},
		{"standard: no id", "/v1/webhooks/std", map[string]string{"webhook-timestamp": now, "webhook-signature": validSig}},
		{"standard: no signature", "/v1/webhooks/std", map[string]string{"webhook-id": "m", "webhook-timestamp": now}},
		{"standard: bad timestamp", "/v1/webhooks/std", map[string]string{"webhook-id": "m", "webhook-timestamp": "noon", "webhook-signature": validSig}},
		{"standard: old timestamp", "/v1/webhooks/std", map[string]string{"webhook-id": "m", "webhook-timestamp": strconv.FormatInt(t0.Add(-time.Hour).Unix(), 10), "webhook-signature": validSig}},
		{"standard: future timestamp", "/v1/webhooks/std", map[string]string{"webhook-id": "m", "webhook-timestamp": strconv.FormatInt(t0.Add(time.Hour).Unix(), 10), "webhook-signature": validSig}},
		{"standard: v2 only", "/v1/webhooks/std", map[string]string{"webhook-id": "m", "webhook-timestamp": now, "webhook-signature": "v2," + strings.Repeat("A", 43) + "="}},
		{"standard: not base64", "/v1/webhooks/std", map[string]string{"webhook-id": "m", "webhook-timestamp": now, "webhook-signature": "v1,***"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := MustHarnessOpts(t, webhook.Options{Endpoints: eps, MaxBodyBytes: maxWebhookBody, SpoolDir: t.TempDir()})
			body := &probe{r: io.LimitReader(repeatByte('a'), 24<<20)}
			w := httptest.NewRecorder()
			hs.h.ServeHTTP(w, bigRequest(tt.path, 24<<20, body, tt.headers))
			if w.Code != http.StatusUnauthorized {
				t.Errorf("code = %d, want 401", w.Code)
			}
			if body.read.Load() {
				t.Error("the body of an unsigned request was read")
			}
		})
	}
}

// stalled is a request whose body stops after its first KiB until release
// is called; the handler is then inside the gate.
type stalled struct {
	pw   *io.PipeWriter
	done chan int
}

func startStalled(tb testing.TB, h http.Handler, n int64, headers map[string]string) *stalled {
	tb.Helper()
	pr, pw := io.Pipe()
	s := &stalled{pw: pw, done: make(chan int, 1)}
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, bigRequest("/v1/webhooks/gh", n, pr, headers))
		pr.Close()
		s.done <- w.Code
	}()
	if _, err := pw.Write(make([]byte, 1024)); err != nil { // returns once the handler reads
		tb.Fatal(err)
	}
	return s
}

// release sends the rest of the body and returns the handler's status.
func (s *stalled) release(n int64) int {
	_, _ = io.Copy(s.pw, io.LimitReader(repeatByte('a'), n-1024))
	s.pw.Close()
	return <-s.done
}

// TestUnverifiedIntakeBounded fills the gate with bodies that are still
// arriving: the next request is refused with 503 and Retry-After before its
// body is read, by count and by declared bytes; once they end (401: a
// bogus signature) intake takes deliveries again.
func TestUnverifiedIntakeBounded(t *testing.T) {
	bogus := map[string]string{"X-GitHub-Event": "issues", "X-Hub-Signature-256": "sha256=" + strings.Repeat("0", 64)}
	hs := MustHarnessOpts(t, webhook.Options{
		Endpoints:    map[string]webhook.Endpoint{"gh": MustEndpoint(t, "gh", webhook.Config{}, ghSecret)},
		MaxBodyBytes: maxWebhookBody, SpoolDir: t.TempDir(), MaxUnverified: 2, MaxUnverifiedBytes: 3 << 20,
	})
	refused := func(name string, n int64) {
		t.Helper()
		body := &probe{r: io.LimitReader(repeatByte('a'), max(n, 0))}
		w := httptest.NewRecorder()
		hs.h.ServeHTTP(w, bigRequest("/v1/webhooks/gh", n, body, bogus))
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Errorf("%s: %d Retry-After %q, want 503 with Retry-After", name, w.Code, w.Header().Get("Retry-After"))
		}
		if body.read.Load() {
			t.Errorf("%s: body read", name)
		}
	}

	a := startStalled(t, hs.h, 2<<20, bogus)
	refused("over the byte budget", 2<<20) // 2 MiB held + 2 MiB > 3 MiB
	refused("no length: counts as the cap", -1)
	b := startStalled(t, hs.h, 512<<10, bogus)
	refused("over the count", 1024)

	if got := a.release(2 << 20); got != http.StatusUnauthorized {
		t.Errorf("stalled a: %d, want 401", got)
	}
	if got := b.release(512 << 10); got != http.StatusUnauthorized {
		t.Errorf("stalled b: %d, want 401", got)
	}
	body := MustPayload(t, "issues.opened.json")
	if w := hs.postGitHub("/v1/webhooks/gh", "issues", "d", signGitHub(ghSecret, body), body); w.Code != http.StatusAccepted {
		t.Errorf("after the gate emptied: %d %s, want 202", w.Code, w.Body)
	}
}

// TestSpooledBody sends a signed issue of ~320 KiB (past what is held in
// memory): it verifies and maps whole, and the spool directory is empty
// afterwards, as after a large body with a bogus signature.
func TestSpooledBody(t *testing.T) {
	dir := t.TempDir()
	hs := MustHarnessOpts(t, webhook.Options{
		Endpoints:    map[string]webhook.Endpoint{"gh": MustEndpoint(t, "gh", webhook.Config{}, ghSecret)},
		MaxBodyBytes: maxWebhookBody, SpoolDir: dir,
	})
	const tail = "the last words of a long issue"
	body := ghEvent(t, "issues.opened.json", "opened", t0, strings.Repeat("padding ", 40000)+tail)
	if w := hs.postGitHub("/v1/webhooks/gh", "issues", "d", signGitHub(ghSecret, body), body); w.Code != http.StatusAccepted {
		t.Fatalf("code = %d %s, want 202", w.Code, w.Body)
	}
	jobs := hs.Jobs()
	if len(jobs) != 1 || !strings.HasSuffix(jobs[0].job.Item.Text, tail) {
		t.Errorf("the spooled body did not map whole: %d jobs", len(jobs))
	}
	bad := append(bytes.Clone(body[:len(body)-2]), ' ', '}')
	if w := hs.postGitHub("/v1/webhooks/gh", "issues", "d2", signGitHub(ghSecret, body), bad); w.Code != http.StatusUnauthorized {
		t.Errorf("altered large body: %d, want 401", w.Code)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("spool directory holds %v (%v)", left, err)
	}
}

// TestUnverifiedBodyAllocations sends one 24 MiB body with a well-formed
// but wrong signature through the handler and counts the bytes the process
// allocated meanwhile: the body streams through the MAC and the spool, so
// far less than the body is allocated. (The old handler read it whole.)
func TestUnverifiedBodyAllocations(t *testing.T) {
	hs := MustHarnessOpts(t, webhook.Options{
		Endpoints:    map[string]webhook.Endpoint{"gh": MustEndpoint(t, "gh", webhook.Config{}, ghSecret)},
		MaxBodyBytes: maxWebhookBody, SpoolDir: t.TempDir(),
	})
	const n = 24 << 20
	r := bigRequest("/v1/webhooks/gh", n, nil, map[string]string{"X-Hub-Signature-256": "sha256=" + strings.Repeat("0", 64)})
	w := httptest.NewRecorder()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	hs.h.ServeHTTP(w, r)
	runtime.ReadMemStats(&after)
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("code = %d, want 401", w.Code)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2<<20 {
		t.Errorf("allocated %d bytes for a %d-byte unverified body, want < 2 MiB", got, n)
	}
}

// BenchmarkUnverifiedIntake is one 24 MiB body with a wrong signature:
// "buffered" reads it whole and then verifies (the old handler, the
// baseline), "streaming" is the handler. Compare B/op.
func BenchmarkUnverifiedIntake(b *testing.B) {
	const n = 24 << 20
	sig := "sha256=" + strings.Repeat("0", 64)
	b.Run("buffered", func(b *testing.B) {
		b.SetBytes(n)
		b.ReportAllocs()
		for b.Loop() {
			body, err := io.ReadAll(io.LimitReader(repeatByte('a'), n))
			if err != nil {
				b.Fatal(err)
			}
			if webhook.VerifyGitHub([][]byte{[]byte(ghSecret)}, body, sig) == nil {
				b.Fatal("verified")
			}
		}
	})
	b.Run("streaming", func(b *testing.B) {
		hs := MustHarnessOpts(b, webhook.Options{
			Endpoints:    map[string]webhook.Endpoint{"gh": MustEndpoint(b, "gh", webhook.Config{}, ghSecret)},
			MaxBodyBytes: maxWebhookBody, SpoolDir: b.TempDir(),
		})
		b.SetBytes(n)
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			hs.h.ServeHTTP(w, bigRequest("/v1/webhooks/gh", n, nil, map[string]string{"X-Hub-Signature-256": sig}))
			if w.Code != http.StatusUnauthorized {
				b.Fatalf("code %d", w.Code)
			}
		}
	})
}
