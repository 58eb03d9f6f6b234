package embedder

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		v    string
		want time.Duration
	}{
		{name: "absent", v: "", want: 0},
		{name: "seconds", v: "7", want: 7 * time.Second},
		{name: "fraction", v: "1.5", want: 1500 * time.Millisecond},
		{name: "zero", v: "0", want: 0},
		{name: "negative", v: "-3", want: 0},
		{name: "capped", v: "86400", want: retryAfterMax},
		{name: "date", v: now.Add(42 * time.Second).Format(http.TimeFormat), want: 42 * time.Second},
		{name: "past date", v: now.Add(-time.Hour).Format(http.TimeFormat), want: 0},
		{name: "garbage", v: "soon", want: 0},
		{name: "NaN", v: "NaN", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseRetryAfter(tt.v, now); got != tt.want {
				t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	for attempt := range 40 {
		d := backoff(attempt)
		hi := backoffMax
		if attempt < 6 {
			hi = backoffBase << attempt
		}
		if d < hi/2 || d > hi {
			t.Errorf("backoff(%d) = %v, want in [%v, %v]", attempt, d, hi/2, hi)
		}
	}
}

func TestServerMessage(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{name: "openai", body: `{"error":{"message":"bad model","type":"x"}}`, want: "bad model"},
		{name: "ollama", body: `{"error":"model not found"}`, want: "model not found"},
		{name: "message field", body: `{"message":"nope"}`, want: "nope"},
		{name: "raw", body: "Bad Gateway\n", want: "Bad Gateway"},
		{name: "empty", body: "", want: "(no message)"},
		{name: "control characters", body: "a\x1b[31mb\r\nc", want: "a[31mb c"},
		{name: "cut on a rune boundary", body: strings.Repeat("x", maxErrorMessage-1) + "é", want: strings.Repeat("x", maxErrorMessage-1) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := serverMessage([]byte(tt.body)); got != tt.want {
				t.Errorf("serverMessage(%q) = %q, want %q", tt.body, got, tt.want)
			}
		})
	}
}
