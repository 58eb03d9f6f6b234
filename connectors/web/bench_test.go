package web

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// BenchmarkExtract measures readable-text extraction of the boilerplate
// fixture; ParseOnly is the baseline (x/net/html parsing alone).
func BenchmarkExtract(b *testing.B) {
	body := readFixture(b, "boilerplate/page.html")
	u, _ := url.Parse("https://docs.example.com/guides/rotate")
	resp := &response{URL: u, MediaType: "text/html", ContentType: "text/html; charset=utf-8", Body: []byte(body)}
	b.Run("ParseOnly", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := html.Parse(strings.NewReader(body)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Readable", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if p := extract(resp); p.Text == "" {
				b.Fatal("no text")
			}
		}
	})
}

// BenchmarkGuard measures the per-connection address check; Classify of a
// public address is the common case.
func BenchmarkGuard(b *testing.B) {
	g := &Guard{}
	addr := netip.MustParseAddr("93.184.216.34")
	b.Run("CheckAddr", func(b *testing.B) {
		for b.Loop() {
			if err := g.CheckAddr(addr); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ParseHostOdd", func(b *testing.B) {
		for b.Loop() {
			if _, ok, _ := ParseHost("0xA9.0376.43518"); !ok {
				b.Fatal("not an address")
			}
		}
	})
}
