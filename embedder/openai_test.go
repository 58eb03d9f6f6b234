package embedder_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
)

// fakeAPI speaks the OpenAI embeddings API. A text's vector is the lexical
// vector of the text scaled by 3 (so that the client must normalise it),
// and data comes back in reverse order (so that the client must sort by
// index). Hook, when set, answers request n (from 0) instead when it
// returns true.
type fakeAPI struct {
	Dims int
	Hook func(n int, w http.ResponseWriter, r *http.Request) bool

	mu       sync.Mutex
	requests []fakeRequest
}

type fakeRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Auth           string   `json:"-"`
	Path           string   `json:"-"`
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req fakeRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	req.Auth, req.Path = r.Header.Get("Authorization"), r.URL.Path
	f.mu.Lock()
	n := len(f.requests)
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	if f.Hook != nil && f.Hook(n, w, r) {
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	lex := embedder.NewLexical(f.Dims)
	vecs, _ := lex.Embed(r.Context(), req.Input)
	var data []item
	for i := len(vecs) - 1; i >= 0; i-- {
		v := vecs[i]
		for k := range v {
			v[k] *= 3
		}
		data = append(data, item{Object: "embedding", Index: i, Embedding: v})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "model": req.Model, "data": data})
}

func (f *fakeAPI) Requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// MustFakeAPI starts a fakeAPI and returns it with its base URL.
func MustFakeAPI(tb testing.TB, f *fakeAPI) string {
	tb.Helper()
	srv := httptest.NewServer(f)
	tb.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// sleeps records the delays a client asked for, without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

// MustOpenAI returns a client for baseURL with instant retries.
func MustOpenAI(tb testing.TB, o embedder.OpenAIOptions) *embedder.OpenAI {
	tb.Helper()
	if o.Model == "" {
		o.Model = "test-embed"
	}
	if o.Sleep == nil {
		o.Sleep = new(sleeps).Sleep
	}
	e, err := embedder.NewOpenAI(o)
	if err != nil {
		tb.Fatalf("new openai: %v", err)
	}
	return e
}

func texts(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("text number %d about topic %d", i, i%7)
	}
	return out
}

func TestNewOpenAI(t *testing.T) {
	tests := []struct {
		name    string
		o       embedder.OpenAIOptions
		wantID  string
		wantErr string // an ingestd error code
	}{
		{name: "ok", o: embedder.OpenAIOptions{BaseURL: "http://localhost:11434/v1", Model: "nomic-embed-text", Dims: 768}, wantID: "openai/nomic-embed-text/768"},
		{name: "trailing slash", o: embedder.OpenAIOptions{BaseURL: "https://api.openai.com/v1/", Model: "text-embedding-3-small", Dims: 1536}, wantID: "openai/text-embedding-3-small/1536"},
		{name: "no base url", o: embedder.OpenAIOptions{Model: "m", Dims: 8}, wantErr: ingestd.EINVALID},
		{name: "not http", o: embedder.OpenAIOptions{BaseURL: "ftp://host/v1", Model: "m", Dims: 8}, wantErr: ingestd.EINVALID},
		{name: "no host", o: embedder.OpenAIOptions{BaseURL: "http:///v1", Model: "m", Dims: 8}, wantErr: ingestd.EINVALID},
		{name: "no model", o: embedder.OpenAIOptions{BaseURL: "http://h/v1", Dims: 8}, wantErr: ingestd.EINVALID},
		{name: "no dims", o: embedder.OpenAIOptions{BaseURL: "http://h/v1", Model: "m"}, wantErr: ingestd.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := embedder.NewOpenAI(tt.o)
			if got := ingestd.ErrorCode(err); got != tt.wantErr {
				t.Fatalf("error code = %q (%v), want %q", got, err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := e.ID(); got != tt.wantID {
				t.Errorf("ID() = %q, want %q", got, tt.wantID)
			}
			if got := e.Dims(); got != tt.o.Dims {
				t.Errorf("Dims() = %d, want %d", got, tt.o.Dims)
			}
		})
	}
}

func TestNewOpenAIRedactsCredentials(t *testing.T) {
	_, err := embedder.NewOpenAI(embedder.OpenAIOptions{BaseURL: "ftp://user:hunter2@host/v1", Model: "m", Dims: 8})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v, want an error without the password", err)
	}
}

func TestOpenAIBatchingAndOrder(t *testing.T) {
	f := &fakeAPI{Dims: 32}
	e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Model: "m1", Dims: 32, BatchSize: 4})
	in := texts(10)
	got := MustEmbed(t, e, in...)

	reqs := f.Requests()
	if got, want := len(reqs), 3; got != want {
		t.Fatalf("%d requests, want %d (10 texts in batches of 4)", got, want)
	}
	var sent []string
	for i, r := range reqs {
		if r.Path != "/v1/embeddings" || r.Model != "m1" || r.EncodingFormat != "float" {
			t.Errorf("request %d: path %q model %q encoding_format %q", i, r.Path, r.Model, r.EncodingFormat)
		}
		sent = append(sent, r.Input...)
	}
	if !slices.Equal(sent, in) {
		t.Errorf("sent %q, want %q", sent, in)
	}
	want := MustEmbed(t, embedder.NewLexical(32), in...)
	for i := range in {
		if c := embedder.Cosine(got[i], want[i]); math.Abs(float64(c)-1) > 1e-5 {
			t.Errorf("vector %d is not the server's vector for text %d (cosine %v)", i, i, c)
		}
		if n := norm2(got[i]); math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d: norm %v, want 1", i, n)
		}
	}
}

func TestOpenAIDefaultBatchSize(t *testing.T) {
	f := &fakeAPI{Dims: 8}
	e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Dims: 8})
	MustEmbed(t, e, texts(130)...)
	var sizes []int
	for _, r := range f.Requests() {
		sizes = append(sizes, len(r.Input))
	}
	if want := []int{64, 64, 2}; !slices.Equal(sizes, want) {
		t.Errorf("batch sizes %v, want %v", sizes, want)
	}
}

func TestOpenAIBlankTextsNotSent(t *testing.T) {
	f := &fakeAPI{Dims: 8}
	e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Dims: 8})
	got := MustEmbed(t, e, "", "hello", " \n", "world")
	reqs := f.Requests()
	if len(reqs) != 1 || !slices.Equal(reqs[0].Input, []string{"hello", "world"}) {
		t.Fatalf("requests %+v, want one with [hello world]", reqs)
	}
	for _, i := range []int{0, 2} {
		if len(got[i]) != 8 || norm2(got[i]) != 0 {
			t.Errorf("blank text %d: %v, want 8 zeros", i, got[i])
		}
	}
	if n := norm2(got[3]); math.Abs(n-1) > 1e-5 {
		t.Errorf("norm %v, want 1", n)
	}

	none := MustEmbed(t, e, "", "")
	if len(f.Requests()) != 1 || len(none) != 2 {
		t.Errorf("only blank texts: %d requests, %d vectors; want no request, 2 vectors", len(f.Requests())-1, len(none))
	}
}

func TestOpenAIAuthHeader(t *testing.T) {
	tests := []struct {
		name, key, want string
	}{
		{name: "key", key: "sk-test-123", want: "Bearer sk-test-123"},
		{name: "no key", key: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{Dims: 8}
			e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Dims: 8, APIKey: tt.key})
			MustEmbed(t, e, "hello")
			if got := f.Requests()[0].Auth; got != tt.want {
				t.Errorf("Authorization = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestOpenAIRetryAfter429(t *testing.T) {
	f := &fakeAPI{Dims: 8, Hook: func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n > 1 {
			return false
		}
		w.Header().Set("Retry-After", strconv.Itoa(7+n))
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached","type":"requests"}}`))
		return true
	}}
	s := new(sleeps)
	e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Dims: 8, Sleep: s.Sleep})
	got := MustEmbed(t, e, "a", "b")
	if len(got) != 2 || len(f.Requests()) != 3 {
		t.Fatalf("%d vectors after %d requests, want 2 after 3", len(got), len(f.Requests()))
	}
	if want := []time.Duration{7 * time.Second, 8 * time.Second}; !slices.Equal(s.d, want) {
		t.Errorf("slept %v, want %v (Retry-After)", s.d, want)
	}
}

func TestOpenAI5xxExhausted(t *testing.T) {
	f := &fakeAPI{Dims: 8, Hook: func(n int, w http.ResponseWriter, r *http.Request) bool {
		http.Error(w, "upstream model crashed", http.StatusBadGateway)
		return true
	}}
	s := new(sleeps)
	e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Dims: 8, MaxRetries: 3, Sleep: s.Sleep})
	_, err := e.Embed(context.Background(), []string{"a"})
	if got, want := ingestd.ErrorCode(err), ingestd.EUNAVAILABLE; got != want {
		t.Fatalf("error code %q (%v), want %q", got, err, want)
	}
	if !strings.Contains(err.Error(), "upstream model crashed") {
		t.Errorf("error %q does not carry the server's message", err)
	}
	if got, want := len(f.Requests()), 4; got != want {
		t.Errorf("%d requests, want %d (1 + 3 retries)", got, want)
	}
	// Exponential backoff with jitter: retry n waits in [d/2, d], d = 500ms·2^n.
	if len(s.d) != 3 {
		t.Fatalf("slept %v, want 3 delays", s.d)
	}
	for n, d := range s.d {
		hi := 500 * time.Millisecond << n
		if d < hi/2 || d > hi {
			t.Errorf("delay %d = %v, want in [%v, %v]", n, d, hi/2, hi)
		}
	}
}

func TestOpenAIDefaultRetries(t *testing.T) {
	tests := []struct {
		name       string
		maxRetries int
		want       int
	}{
		{name: "default", maxRetries: 0, want: 6},
		{name: "none", maxRetries: -1, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{Dims: 8, Hook: func(int, http.ResponseWriter, *http.Request) bool { panic(http.ErrAbortHandler) }}
			e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Dims: 8, MaxRetries: tt.maxRetries})
			_, err := e.Embed(context.Background(), []string{"a"})
			if got := ingestd.ErrorCode(err); got != ingestd.EUNAVAILABLE {
				t.Fatalf("error code %q (%v), want unavailable", got, err)
			}
			if got := len(f.Requests()); got != tt.want {
				t.Errorf("%d requests, want %d", got, tt.want)
			}
		})
	}
}

func TestOpenAINetworkError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL + "/v1"
	srv.Close() // connection refused from now on
	s := new(sleeps)
	e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: base, Dims: 8, MaxRetries: 2, Sleep: s.Sleep})
	_, err := e.Embed(context.Background(), []string{"a"})
	if got := ingestd.ErrorCode(err); got != ingestd.EUNAVAILABLE {
		t.Fatalf("error code %q (%v), want unavailable", got, err)
	}
	if len(s.d) != 2 {
		t.Errorf("slept %d times, want 2 (network errors are retried)", len(s.d))
	}
}

func TestOpenAITimeout(t *testing.T) {
	release := make(chan struct{})
	f := &fakeAPI{Dims: 8, Hook: func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 3 {
			return false // the fourth attempt answers at once
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	}}
	base := MustFakeAPI(t, f)
	t.Cleanup(func() { close(release) })
	// Each attempt hangs until its timeout ends it: 500 ms so that, on a
	// loaded machine, every attempt still reaches the server first (10 ms
	// did not, and the test counted one request).
	e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: base, Dims: 8, Timeout: 500 * time.Millisecond, MaxRetries: 1})
	_, err := e.Embed(context.Background(), []string{"a"})
	if got := ingestd.ErrorCode(err); got != ingestd.EUNAVAILABLE {
		t.Fatalf("error code %q (%v), want unavailable", got, err)
	}
	if got := len(f.Requests()); got != 2 {
		t.Fatalf("%d requests, want 2", got)
	}

	// The timeout is per attempt: the third attempt hangs, the fourth
	// answers.
	MustEmbed(t, e, "a")
	if got := len(f.Requests()); got != 4 {
		t.Fatalf("%d requests, want 4", got)
	}
}

func TestOpenAIRefused(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name    string
		status  int
		body    string
		wantMsg string
	}{
		{name: "openai error", status: 400, body: `{"error":{"message":"This model's maximum context length is 8192 tokens","type":"invalid_request_error"}}`, wantMsg: "maximum context length is 8192 tokens"},
		{name: "ollama error", status: 404, body: `{"error":"model \"nomic\" not found, try pulling it first"}`, wantMsg: `model "nomic" not found`},
		{name: "unauthorized", status: 401, body: `{"error":{"message":"Incorrect API key provided"}}`, wantMsg: "Incorrect API key provided"},
		{name: "plain text", status: 422, body: "input must not be empty\n", wantMsg: "input must not be empty"},
		{name: "truncated", status: 400, body: `{"error":{"message":"` + long + `"}}`, wantMsg: strings.Repeat("x", 300) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{Dims: 8, Hook: func(n int, w http.ResponseWriter, r *http.Request) bool {
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
				return true
			}}
			e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Dims: 8})
			_, err := e.Embed(context.Background(), []string{"a"})
			if got := ingestd.ErrorCode(err); got != ingestd.EINVALID {
				t.Fatalf("error code %q (%v), want invalid", got, err)
			}
			if msg := ingestd.ErrorMessage(err); !strings.Contains(msg, tt.wantMsg) || strings.Contains(msg, long) {
				t.Errorf("message %q does not carry %q (truncated)", msg, tt.wantMsg)
			}
			if got := len(f.Requests()); got != 1 {
				t.Errorf("%d requests, want 1: a refusal is not retried", got)
			}
		})
	}
}

func TestOpenAIDimsMismatch(t *testing.T) {
	f := &fakeAPI{Dims: 12}
	e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Dims: 16})
	_, err := e.Embed(context.Background(), []string{"a"})
	if got := ingestd.ErrorCode(err); got != ingestd.EINVALID {
		t.Fatalf("error code %q (%v), want invalid", got, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "12") || !strings.Contains(msg, "16") {
		t.Errorf("error %q should name both 12 and 16", msg)
	}
}

func TestOpenAIMalformedResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
	}{
		{name: "not json", body: "<html>hello</html>"},
		{name: "too few", body: `{"data":[{"index":0,"embedding":[1,0]}]}`},
		{name: "repeated index", body: `{"data":[{"index":0,"embedding":[1,0]},{"index":0,"embedding":[0,1]}]}`},
		{name: "index out of range", body: `{"data":[{"index":0,"embedding":[1,0]},{"index":2,"embedding":[0,1]}]}`},
		{name: "missing embedding", body: `{"data":[{"index":0,"embedding":[1,0]},{"index":1}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeAPI{Dims: 2, Hook: func(n int, w http.ResponseWriter, r *http.Request) bool {
				_, _ = w.Write([]byte(tt.body))
				return true
			}}
			e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Dims: 2})
			_, err := e.Embed(context.Background(), []string{"a", "b"})
			if got := ingestd.ErrorCode(err); got != ingestd.EINVALID {
				t.Fatalf("error code %q (%v), want invalid", got, err)
			}
		})
	}
}

func TestOpenAICanceledWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fakeAPI{Dims: 8, Hook: func(n int, w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	}}
	sleep := func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}
	e := MustOpenAI(t, embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Dims: 8, Sleep: sleep})
	_, err := e.Embed(ctx, []string{"a"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if got := len(f.Requests()); got != 1 {
		t.Errorf("%d requests, want 1", got)
	}
}

func TestProbeDims(t *testing.T) {
	f := &fakeAPI{Dims: 24}
	got, err := embedder.ProbeDims(context.Background(), embedder.OpenAIOptions{BaseURL: MustFakeAPI(t, f), Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if got != 24 {
		t.Errorf("ProbeDims = %d, want 24", got)
	}
}

// TestOpenAIAgainstServer runs against a real endpoint when
// INGESTD_TEST_EMBEDDINGS_URL is set (e.g. http://localhost:11434/v1 with
// INGESTD_TEST_EMBEDDINGS_MODEL=nomic-embed-text).
func TestOpenAIAgainstServer(t *testing.T) {
	base := envOrSkip(t, "INGESTD_TEST_EMBEDDINGS_URL")
	o := embedder.OpenAIOptions{BaseURL: base, Model: envOrSkip(t, "INGESTD_TEST_EMBEDDINGS_MODEL"), APIKey: os.Getenv("INGESTD_TEST_EMBEDDINGS_KEY")}
	dims, err := embedder.ProbeDims(context.Background(), o)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	o.Dims = dims
	e := MustOpenAI(t, o)
	v := MustEmbed(t, e, "how do I reset my password", "steps to recover a forgotten login password", "quarterly office lease invoice")
	if sim, unrel := embedder.Cosine(v[0], v[1]), embedder.Cosine(v[0], v[2]); sim <= unrel {
		t.Errorf("cosine(similar) %.3f <= cosine(unrelated) %.3f", sim, unrel)
	}
}
