package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ingestd/ingestd"
)

var (
	bombOnce sync.Once
	bomb     []byte
)

// bombSize is what the gzip bomb expands to.
const bombSize = 256 << 20

// gzipBomb is bombSize zero bytes, gzipped: one member of 1 MiB of zeros
// repeated (gzip readers read concatenated members as one stream), about
// 260 KiB on the wire.
func gzipBomb(tb testing.TB) []byte {
	tb.Helper()
	bombOnce.Do(func() {
		var member bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&member, gzip.BestCompression)
		zw.Write(make([]byte, 1<<20))
		zw.Close()
		bomb = bytes.Repeat(member.Bytes(), bombSize>>20)
	})
	return bomb
}

// allocDuring returns the bytes allocated while fn runs.
func allocDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestFetchLimits(t *testing.T) {
	gzipBomb(t)                                            // made before anything is measured
	big := strings.Repeat("<p>filler text</p>\n", 200_000) // ~3.8 MB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big-with-length":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			io.WriteString(w, big)
		case "/big-streamed":
			w.Header().Set("Content-Type", "text/html")
			for i := 0; i < 4; i++ { // flushes force chunked encoding: no Content-Length
				io.WriteString(w, big[:len(big)/4])
				w.(http.Flusher).Flush()
			}
		case "/bomb":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gzipBomb(t))
		case "/small-gzip":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, "hello, compressed world")
			zw.Close()
		case "/image":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n"))
		case "/brotli":
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Content-Encoding", "br")
			w.Write([]byte("xx"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	const maxBytes = 1 << 20
	src := MustSource(t, ingestd.TierUntrustedExternal, Config{URLs: []string{srv.URL + "/"}, AllowPrivateNetworks: true, MaxBytes: maxBytes}, nil)

	tests := []struct {
		name     string
		path     string
		wantCode string
		wantMsg  string
	}{
		{name: "content-length over cap", path: "/big-with-length", wantCode: ingestd.ETOOLARGE, wantMsg: "Content-Length"},
		{name: "streamed over cap", path: "/big-streamed", wantCode: ingestd.ETOOLARGE, wantMsg: "exceeds max_bytes (1048576 bytes) before decompression"},
		{name: "gzip bomb", path: "/bomb", wantCode: ingestd.ETOOLARGE, wantMsg: "exceeds max_bytes (1048576 bytes) after decompression"},
		{name: "type not allowed", path: "/image", wantCode: ingestd.EINVALID, wantMsg: "content type image/png is not one of"},
		{name: "encoding not supported", path: "/brotli", wantCode: ingestd.EINVALID, wantMsg: `content encoding "br"`},
		{name: "gzip within cap", path: "/small-gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var items []ingestd.Item
			var err error
			alloc := allocDuring(func() { items, err = src.Fetch(context.Background(), srv.URL+tt.path) })
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				if got, want := items[0].Text, "hello, compressed world"; got != want {
					t.Errorf("text = %q, want %q", got, want)
				}
				return
			}
			if got := ingestd.ErrorCode(err); got != tt.wantCode {
				t.Fatalf("Fetch error = %v (code %q), want code %q", err, got, tt.wantCode)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Fetch error = %q, want it to contain %q", err, tt.wantMsg)
			}
			// Stopped early: far less allocated than the body would take
			// (the bomb expands to 256 MiB). Generous, to stay robust.
			t.Logf("allocated %d KiB", alloc>>10)
			if limit := uint64(32 << 20); alloc > limit {
				t.Errorf("fetch allocated %d bytes, want under %d (the cap did not stop it early)", alloc, limit)
			}
		})
	}
}
