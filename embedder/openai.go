package embedder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/clock"
)

// Defaults of OpenAIOptions.
const (
	DefaultBatchSize  = 64
	DefaultTimeout    = 30 * time.Second
	DefaultMaxRetries = 5

	backoffBase     = 500 * time.Millisecond
	backoffMax      = 30 * time.Second
	retryAfterMax   = 2 * time.Minute
	maxResponseSize = 64 << 20
	maxErrorMessage = 300
)

// OpenAIOptions configures an OpenAI client. cmd fills it from the config
// file and the environment.
type OpenAIOptions struct {
	// BaseURL is the API root, "/embeddings" is appended:
	// "https://api.openai.com/v1", "http://localhost:11434/v1". Required.
	BaseURL string
	// Model is sent with every request. Required.
	Model string
	// APIKey, when set, is sent as a bearer token. Local servers need none.
	APIKey string
	// Dims is the length of the model's vectors. Required: it is part of
	// the ID the store records. A server answering with another length is
	// refused with EINVALID (see ProbeDims to ask the server).
	Dims int
	// BatchSize is the most texts sent in one request; DefaultBatchSize
	// when <= 0.
	BatchSize int
	// Timeout bounds each request attempt; DefaultTimeout when <= 0.
	Timeout time.Duration
	// MaxRetries is how many times a failed request is retried after the
	// first attempt; DefaultMaxRetries when 0, no retries when negative.
	MaxRetries int
	// HTTPClient makes the requests; http.DefaultClient when nil. Its own
	// Timeout, if any, applies on top of Timeout.
	HTTPClient *http.Client
	// Sleep waits between attempts; a timer honouring ctx when nil. Tests
	// replace it to run retries instantly and record the delays.
	Sleep func(ctx context.Context, d time.Duration) error
}

// OpenAI embeds texts with an OpenAI-compatible /v1/embeddings endpoint
// (OpenAI, Ollama, vLLM, text-embeddings-inference, LiteLLM).
//
// Texts are sent in batches of BatchSize, one batch at a time. A request
// that fails with 408, 429, a 5xx status or a network error (including an
// attempt that outlives Timeout) is retried with exponential backoff and
// jitter, or after the delay the server's Retry-After header asks for.
// Vectors are L2-normalised here whatever the server does. Texts that are
// empty or only white space are not sent (servers refuse them): they embed
// as the zero vector, as with Lexical.
//
// An OpenAI is safe for concurrent use.
type OpenAI struct {
	endpoint   string
	model      string
	apiKey     string
	dims       int
	batchSize  int
	timeout    time.Duration
	maxRetries int
	client     *http.Client
	sleep      func(ctx context.Context, d time.Duration) error
	id         string
}

// NewOpenAI returns a client for the endpoint. It makes no request. Returns
// EINVALID when BaseURL is not an http(s) URL, or Model or Dims is missing.
func NewOpenAI(o OpenAIOptions) (*OpenAI, error) {
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, ingestd.Errorf(ingestd.EINVALID, "embedder base url %q: want http(s)://host[/path]", redactURL(o.BaseURL))
	}
	if strings.TrimSpace(o.Model) == "" {
		return nil, ingestd.Errorf(ingestd.EINVALID, "embedder model is required")
	}
	if o.Dims <= 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "embedder dims is required for model %q", o.Model)
	}
	e := &OpenAI{
		endpoint:   strings.TrimRight(o.BaseURL, "/") + "/embeddings",
		model:      o.Model,
		apiKey:     o.APIKey,
		dims:       o.Dims,
		batchSize:  o.BatchSize,
		timeout:    o.Timeout,
		maxRetries: o.MaxRetries,
		client:     o.HTTPClient,
		sleep:      o.Sleep,
		id:         "openai/" + o.Model + "/" + strconv.Itoa(o.Dims),
	}
	if e.batchSize <= 0 {
		e.batchSize = DefaultBatchSize
	}
	if e.timeout <= 0 {
		e.timeout = DefaultTimeout
	}
	switch {
	case e.maxRetries == 0:
		e.maxRetries = DefaultMaxRetries
	case e.maxRetries < 0:
		e.maxRetries = 0
	}
	if e.client == nil {
		e.client = http.DefaultClient
	}
	if e.sleep == nil {
		e.sleep = clock.Sleep
	}
	return e, nil
}

// ProbeDims asks the endpoint in o for the vector of one short text and
// returns its length, for a config that does not state dims. o.Dims is
// ignored. Errors are those of Embed.
func ProbeDims(ctx context.Context, o OpenAIOptions) (int, error) {
	o.Dims = 1
	e, err := NewOpenAI(o)
	if err != nil {
		return 0, err
	}
	vecs, err := e.request(ctx, []string{"dimension probe"})
	if err != nil {
		return 0, err
	}
	if len(vecs[0]) == 0 {
		return 0, ingestd.Errorf(ingestd.EINVALID, "embedder %s: model %q returned an empty vector", redactURL(e.endpoint), o.Model)
	}
	return len(vecs[0]), nil
}

// ID returns "openai/<model>/<dims>".
func (e *OpenAI) ID() string { return e.id }

// Dims returns the configured vector length.
func (e *OpenAI) Dims() int { return e.dims }

// Embed returns one vector per text, in order. Returns EUNAVAILABLE when
// the endpoint still fails after MaxRetries retries, EINVALID when it
// refuses the request (any other 4xx, with the server's message), answers
// with vectors of a length other than Dims or with a malformed body, and
// ctx's error when ctx is done.
func (e *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var idx []int // positions of the texts to send
	var batch []string
	for i, t := range texts {
		if strings.TrimSpace(t) == "" {
			out[i] = make([]float32, e.dims)
			continue
		}
		idx = append(idx, i)
	}
	for start := 0; start < len(idx); start += e.batchSize {
		end := min(start+e.batchSize, len(idx))
		batch = batch[:0]
		for _, i := range idx[start:end] {
			batch = append(batch, texts[i])
		}
		vecs, err := e.request(ctx, batch)
		if err != nil {
			return nil, err
		}
		for k, i := range idx[start:end] {
			if len(vecs[k]) != e.dims {
				return nil, ingestd.Errorf(ingestd.EINVALID, "embedder %s: model %q returned %d dimensions, configured dims is %d", redactURL(e.endpoint), e.model, len(vecs[k]), e.dims)
			}
			normalize(vecs[k])
			out[i] = vecs[k]
		}
	}
	return out, nil
}

type embeddingsRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// request sends one batch, retrying as documented on OpenAI, and returns
// the vectors ordered by the index the server gave them.
func (e *OpenAI) request(ctx context.Context, batch []string) ([][]float32, error) {
	body, err := json.Marshal(embeddingsRequest{Model: e.model, Input: batch, EncodingFormat: "float"})
	if err != nil {
		return nil, fmt.Errorf("encode embeddings request: %w", err)
	}
	var last error
	for attempt := 0; ; attempt++ {
		vecs, retryAfter, err := e.attempt(ctx, body, len(batch))
		if err == nil {
			return vecs, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var appErr *ingestd.Error
		if errors.As(err, &appErr) {
			return nil, err // refused: retrying cannot help
		}
		last = err
		if attempt >= e.maxRetries {
			break
		}
		d := retryAfter
		if d <= 0 {
			d = backoff(attempt)
		}
		if err := e.sleep(ctx, d); err != nil {
			return nil, err
		}
	}
	return nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "embedder %s unavailable after %d attempts: %v", redactURL(e.endpoint), e.maxRetries+1, last)
}

// attempt makes one request. A plain error is worth retrying (after
// retryAfter when the server said so); an *ingestd.Error is not.
func (e *OpenAI) attempt(ctx context.Context, body []byte, n int) (vecs [][]float32, retryAfter time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, 0, ingestd.Errorf(ingestd.EINVALID, "embeddings request: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.apiKey)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("post embeddings: %w", err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10)) // let the connection be reused
		resp.Body.Close()
	}()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseSize+1))
	if err != nil {
		return nil, 0, fmt.Errorf("read embeddings response: %w", err)
	}

	switch code := resp.StatusCode; {
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		return nil, parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
			fmt.Errorf("embeddings endpoint answered %s: %s", resp.Status, serverMessage(data))
	case code < 200 || code > 299:
		return nil, 0, ingestd.Errorf(ingestd.EINVALID, "embedder %s refused the request: %s: %s", redactURL(e.endpoint), resp.Status, serverMessage(data))
	}
	if len(data) > maxResponseSize {
		return nil, 0, ingestd.Errorf(ingestd.EINVALID, "embedder %s: response larger than %d bytes", redactURL(e.endpoint), maxResponseSize)
	}
	var r embeddingsResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, 0, ingestd.Errorf(ingestd.EINVALID, "embedder %s: malformed response: %v", redactURL(e.endpoint), err)
	}
	if len(r.Data) != n {
		return nil, 0, ingestd.Errorf(ingestd.EINVALID, "embedder %s: malformed response: %d embeddings for %d inputs", redactURL(e.endpoint), len(r.Data), n)
	}
	vecs = make([][]float32, n)
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= n || vecs[d.Index] != nil {
			return nil, 0, ingestd.Errorf(ingestd.EINVALID, "embedder %s: malformed response: bad or repeated index %d", redactURL(e.endpoint), d.Index)
		}
		if d.Embedding == nil {
			d.Embedding = []float32{}
		}
		vecs[d.Index] = d.Embedding
	}
	return vecs, 0, nil
}

// backoff is the delay before retry attempt+1: backoffBase doubled per
// attempt, capped at backoffMax, with "equal jitter" (uniform in [d/2, d])
// so that workers throttled together do not come back together.
func backoff(attempt int) time.Duration {
	d := backoffMax
	if attempt < 16 {
		d = min(backoffBase<<attempt, backoffMax)
	}
	return d/2 + rand.N(d/2+1)
}

// parseRetryAfter reads a Retry-After header (seconds or an HTTP date),
// capped at retryAfterMax. It returns 0 when there is none or it is
// unreadable, meaning "use backoff".
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs != secs {
			return 0
		}
		d = time.Duration(min(secs, retryAfterMax.Seconds()) * float64(time.Second))
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return 0
	}
	if d <= 0 {
		return 0
	}
	return min(d, retryAfterMax)
}

// serverMessage extracts the error message of an error body — OpenAI's
// {"error":{"message":...}}, Ollama's {"error":"..."} — or falls back to
// the raw body, with control characters dropped and at most
// maxErrorMessage bytes kept.
func serverMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	msg := string(body)
	if json.Unmarshal(body, &v) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &nested) == nil && nested.Message != "":
			msg = nested.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		case v.Message != "":
			msg = v.Message
		}
	}
	msg = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return ' '
		}
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, msg)
	msg = strings.TrimSpace(msg)
	if len(msg) > maxErrorMessage {
		cut := maxErrorMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	if msg == "" {
		return "(no message)"
	}
	return msg
}

// redactURL drops any user:password from a URL before it goes into an
// error message; a URL it cannot parse is not shown at all.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable url)"
	}
	if u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}
