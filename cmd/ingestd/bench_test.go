package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCheckBenchTarget(t *testing.T) {
	tests := []struct {
		name        string
		url         string
		allowRemote bool
		wantErr     bool
	}{
		{name: "ipv4 loopback", url: "http://127.0.0.1:7700"},
		{name: "other 127/8", url: "http://127.3.2.1:7700"},
		{name: "ipv6 loopback", url: "http://[::1]:7700"},
		{name: "localhost", url: "https://LOCALHOST:7700/"},
		{name: "private address", url: "http://10.0.0.5:7700", wantErr: true},
		{name: "name", url: "http://ingestd.internal:7700", wantErr: true},
		{name: "all interfaces", url: "http://0.0.0.0:7700", wantErr: true},
		{name: "localhost lookalike", url: "http://localhost.attacker.example:7700", wantErr: true},
		{name: "remote allowed", url: "http://ingestd.internal:7700", allowRemote: true},
		{name: "not http", url: "grpc://127.0.0.1:7700", wantErr: true},
		{name: "no host", url: "http://", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkBenchTarget(tt.url, tt.allowRemote); (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
		})
	}
}

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
