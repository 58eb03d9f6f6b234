package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestBenchRefusesRemoteAndCountsErrors(t *testing.T) {
	if code, _, errs := runCmd(t, "bench", "retrieve", "--url", "http://192.0.2.1:7700", "--duration", "1s"); code != 2 || !strings.Contains(errs, "loopback") {
		t.Fatalf("remote target: exit %d, %q; want 2 naming loopback", code, errs)
	}
	if code, _, _ := runCmd(t, "bench", "frobnicate"); code != 2 {
		t.Fatalf("unknown bench: exit %d, want 2", code)
	}
	// The developer benchmarks moved to their own binary: the mistake
	// says where.
	for _, moved := range []string{"store", "archive"} {
		if code, _, errs := runCmd(t, "bench", moved); code != 2 || !strings.Contains(errs, "ingestd-bench "+moved) {
			t.Fatalf("bench %s: exit %d, %q; want 2 naming ingestd-bench %s", moved, code, errs, moved)
		}
	}
	// A server answering without a verdict: every request is an error.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"primary": []}`)) }))
	defer srv.Close()
	code, out, errs := runCmd(t, "bench", "retrieve", "--url", srv.URL, "--duration", "50ms", "--concurrency", "2")
	if code != 1 || !strings.Contains(errs+out, "verdict") {
		t.Fatalf("verdict-less server: exit %d\n%s%s; want 1 naming the verdict", code, out, errs)
	}
}
