package web

import (
	"context"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/temoto/robotstxt"

	"github.com/ingestd/ingestd"
)

// FuzzExtract turns any body under any Content-Type into a page.
// Properties: no panic; title and text are valid UTF-8 (decode converts
// every charset, readability must not undo it); every link, graph or
// crawl, is an absolute http(s) URL with a host, without credentials or
// fragment, and already canonical. Seeds: the pages in testdata.
func FuzzExtract(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*", "page.*"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no pages in testdata: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		ct := "text/html"
		switch {
		case strings.HasSuffix(p, ".md"):
			ct = "text/markdown; charset=utf-8"
		case strings.Contains(p, "latin1"):
			ct = "text/html; charset=iso-8859-1"
		}
		f.Add(b, ct)
	}
	for _, s := range [][2]string{
		{`<base href="//other.example/x/"><a href="../y#f">y</a><a href="mailto:a@b">m</a><a rel="NoFollow" href="/n">n</a>`, "text/html"},
		{"\xef\xbb\xbf<meta charset=shift_jis><title>\x82\xa0</title><p>\x82\xa2</p>", "text/html"},
		{"# Title\n\n[a](</rel path> \"t\") [b](http://u:p@h:80/./a/../b?q#f)", "text/markdown"},
		{"\xff\xfeh\x00i\x00", "text/plain"},
		{"<a href=\"http://[::1]:443/\">v6</a><a href=\"http://%zz/\">bad</a><area href=\"HTTPS://EXAMPLE.COM:443\">", "application/xhtml+xml; charset=utf-8"},
	} {
		f.Add([]byte(s[0]), s[1])
	}
	base := &url.URL{Scheme: "https", Host: "docs.example.com", Path: "/guide/page"}
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		mt, _, err := mime.ParseMediaType(contentType)
		if err != nil {
			return // fetch refuses such a response before extract
		}
		p := extract(&response{URL: base, Status: http.StatusOK, MediaType: strings.ToLower(mt), ContentType: contentType, Body: body})
		if !utf8.ValidString(p.Title) || !utf8.ValidString(p.Text) {
			t.Fatalf("not valid UTF-8: title %q, text %q", p.Title, p.Text)
		}
		for _, set := range [][]*url.URL{p.Links, p.Follow} {
			for _, u := range set {
				if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" {
					t.Fatalf("link %q: not an absolute http(s) URL without credentials and fragment", u)
				}
				if c := canonical(u).String(); c != u.String() {
					t.Fatalf("link %q is not canonical: %q", u, c)
				}
			}
		}
	})
}

// crawlDelay matches robots.txt lines that would slow the test site's host
// for up to a minute (slowDown's cap): the target removes them, as a
// fuzzing run must not sleep.
var crawlDelay = regexp.MustCompile(`(?im)^.*delay.*$`)

// fuzzSite serves one robots.txt, one sitemap at every .xml path and a
// small page at every other path, and records the request URIs.
type fuzzSite struct {
	mu                    sync.Mutex
	robots, sitemap, smCT string
	paths                 []string
}

func (s *fuzzSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.paths = append(s.paths, r.URL.RequestURI())
	switch {
	case r.URL.Path == "/robots.txt":
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, s.robots)
	case strings.HasSuffix(r.URL.Path, ".xml"):
		w.Header().Set("Content-Type", s.smCT)
		io.WriteString(w, s.sitemap)
	default:
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body><p>page</p></body></html>")
	}
}

// FuzzRobotsSitemap syncs a url installation of one site whose robots.txt
// and sitemap the fuzzer writes ("SITE" in the sitemap stands for the
// site's origin; every .xml path serves the sitemap, so an index can point
// at itself or further). Properties: the pass never fails (a bad robots or
// sitemap is skipped or reported with Fail, never fatal); robots.txt is
// fetched once; every page requested is one the robots.txt allows for
// "ingestd" as robotstxt reads it, with the path as sent; nothing is
// stored off the site; at most max_pages are stored.
func FuzzRobotsSitemap(f *testing.F) {
	f.Add([]byte("User-agent: *\nDisallow: /private/\n\nUser-agent: otherbot\nDisallow: /\n"),
		[]byte(`<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>SITE/docs/a</loc></url><url><loc>SITE/private/x</loc></url><url><loc>https://elsewhere.example.org/y</loc></url></urlset>`),
		uint8(0))
	f.Add([]byte("User-agent: ingestd\nAllow: /docs/$\nDisallow: /docs/\nDisallow: /*?*\n"),
		[]byte(`<sitemapindex><sitemap><loc>SITE/more.xml</loc></sitemap><sitemap><loc>/sitemap.xml</loc></sitemap><url><loc>/docs/</loc></url><url><loc>/docs/?q=1</loc></url><url><loc>/docs/%7Eb</loc></url></sitemapindex>`),
		uint8(0))
	f.Add([]byte("user-agent:*\r\ndisallow: /%E2%82%AC\r\nsitemap: /x.xml\r\n"),
		[]byte("SITE/a\n/\u20ac\n\n  SITE/b?x=%2F  \nhttp://[::1/\n"),
		uint8(2))
	f.Add([]byte("\xef\xbb\xbfUser-agent: *\nDisallow:\n"), []byte("<urlset><url><loc>SITE/a<loc></url>"), uint8(1))
	site := &fuzzSite{}
	srv := httptest.NewServer(site)
	f.Cleanup(srv.Close)
	types := []string{"application/xml", "text/xml; charset=utf-8", "text/plain", "text/html"}
	f.Fuzz(func(t *testing.T, robots, sitemap []byte, sitemapType uint8) {
		robots = crawlDelay.ReplaceAll(robots, nil)
		site.mu.Lock()
		site.robots, site.smCT = string(robots), types[int(sitemapType)%len(types)]
		site.sitemap = strings.ReplaceAll(string(sitemap), "SITE", srv.URL)
		site.paths = nil
		site.mu.Unlock()

		const maxPages = 16
		cfg := Config{
			URLs:                 []string{srv.URL + "/"},
			Sitemap:              srv.URL + "/sitemap.xml",
			Crawl:                CrawlConfig{MaxPages: maxPages},
			AllowPrivateNetworks: true,
		}
		src := MustSource(t, ingestd.TierTrustedInternal, cfg, mapResolver{})
		p := newPass(nil)
		if err := src.Sync(context.Background(), p); err != nil {
			t.Fatalf("Sync: %v", err)
		}

		data, robotsErr := robotstxt.FromBytes(robots)
		robotsFetches := 0
		site.mu.Lock()
		paths := site.paths
		site.mu.Unlock()
		for _, path := range paths {
			switch {
			case path == "/robots.txt":
				robotsFetches++
			case strings.HasSuffix(strings.SplitN(path, "?", 2)[0], ".xml"):
			case robotsErr == nil && !data.TestAgent(path, robotsAgent):
				t.Fatalf("requested %s, which robots.txt disallows for %s", path, robotsAgent)
			}
		}
		if robotsFetches != 1 {
			t.Fatalf("robots.txt fetched %d times in one pass", robotsFetches)
		}
		ids := p.PutIDs()
		if len(ids) > maxPages {
			t.Fatalf("%d pages stored, max_pages %d", len(ids), maxPages)
		}
		host := strings.TrimPrefix(srv.URL, "http://")
		for _, id := range ids {
			if u, err := url.Parse(id); err != nil || u.Host != host {
				t.Fatalf("stored %q, which is not on the site %s", id, srv.URL)
			}
		}
	})
}
