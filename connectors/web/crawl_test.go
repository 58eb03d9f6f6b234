package web

import (
	"context"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/connectortest"
)

func htmlPage(title, body string) sitePage {
	return sitePage{ctype: "text/html; charset=utf-8", body: "<html><head><title>" + title + "</title></head><body>" + body + "</body></html>"}
}

// TestExtractBoilerplate: navigation, sidebar ads, share buttons and the
// footer are dropped; the article's text and title remain.
func TestExtractBoilerplate(t *testing.T) {
	site := MustSite(t, map[string]sitePage{
		"/guides/rotate": {ctype: "text/html; charset=utf-8", body: readFixture(t, "boilerplate/page.html")},
	})
	src := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{site.URL + "/guides/rotate"}, AllowPrivateNetworks: true}, nil)
	p := newPass(nil)
	MustSync(t, src, p)

	it := p.MustPut(t, site.URL+"/guides/rotate")
	if got, want := it.Title, "Rotating signing keys"; !strings.HasPrefix(got, want) {
		t.Errorf("title = %q, want it to start with %q", got, want)
	}
	for _, want := range []string{
		"Signing keys protect every webhook delivery",
		"Rotation happens in two steps",
		"Choosing an overlap window",
		"If a key leaks, skip the overlap",
	} {
		if !strings.Contains(it.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, it.Text)
		}
	}
	for _, junk := range []string{"SPONSORED", "Copyright 2024", "Sign in", "Share on Social", "window.analytics"} {
		if strings.Contains(it.Text, junk) {
			t.Errorf("text keeps boilerplate %q:\n%s", junk, it.Text)
		}
	}
	if got, want := it.ItemKind, "page"; got != want {
		t.Errorf("item kind = %q, want %q", got, want)
	}
	// Links from the article to pages of the site are graph links; the
	// fragment is dropped, off-site and nav links are not in the article.
	var links []string
	for _, l := range it.Links {
		links = append(links, l.Relation+" "+strings.TrimPrefix(l.ToExternalID, site.URL))
	}
	if want := []string{"link /guides/install", "link /guides/keys"}; !reflect.DeepEqual(links, want) {
		t.Errorf("links = %v, want %v", links, want)
	}
}

// TestExtractCharset: a windows-1252 page that says so only in a meta tag
// decodes to the right UTF-8, and so does one that says it in the header.
func TestExtractCharset(t *testing.T) {
	raw := readFixture(t, "latin1/page.html")
	site := MustSite(t, map[string]sitePage{
		"/meta":   {ctype: "text/html", body: raw},
		"/header": {ctype: "text/html; charset=iso-8859-1", body: strings.Replace(raw, "windows-1252", "", 1)},
	})
	src := MustSource(t, ingestd.TierUntrustedExternal, Config{URLs: []string{site.URL + "/meta", site.URL + "/header"}, AllowPrivateNetworks: true}, nil)
	p := newPass(nil)
	MustSync(t, src, p)
	for _, path := range []string{"/meta", "/header"} {
		it := p.MustPut(t, site.URL+path)
		for _, want := range []string{"Le café crème se prépare", "Straße café in München", "3€", "«\u00a0Naïve\u00a0»", "señor", "¿por qué no?"} {
			want = strings.ReplaceAll(want, "\u00a0", " ")
			if !strings.Contains(it.Text, want) {
				t.Errorf("%s: text lacks %q:\n%s", path, want, it.Text)
			}
		}
		if !strings.Contains(it.Title, "Café crème") {
			t.Errorf("%s: title = %q", path, it.Title)
		}
	}
}

func TestExtractMarkdown(t *testing.T) {
	site := MustSite(t, map[string]sitePage{
		"/guides/release.md": {ctype: "text/markdown; charset=utf-8", body: readFixture(t, "markdown/page.md")},
	})
	src := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{site.URL + "/guides/release.md"}, AllowPrivateNetworks: true}, nil)
	p := newPass(nil)
	MustSync(t, src, p)
	it := p.MustPut(t, site.URL+"/guides/release.md")
	if it.Format != ingestd.FormatMarkdown || it.Title != "Release checklist" || !strings.Contains(it.Text, "- update the changelog") {
		t.Errorf("markdown item = format %q title %q text %q", it.Format, it.Title, it.Text)
	}
	var links []string
	for _, l := range it.Links {
		links = append(links, strings.TrimPrefix(l.ToExternalID, site.URL))
	}
	if want := []string{"/guides/install", "/guides/keys"}; !reflect.DeepEqual(links, want) {
		t.Errorf("links = %v, want %v", links, want)
	}
}

// TestCrawl: a sitemap and a same-site crawl respect depth, max_pages,
// include/exclude and robots.txt, and stay on the site.
func TestCrawl(t *testing.T) {
	site := MustSite(t, map[string]sitePage{})
	link := func(paths ...string) string {
		var b strings.Builder
		for _, p := range paths {
			fmt.Fprintf(&b, `<p>See <a href="%s">%s</a>.</p>`, p, p)
		}
		return b.String()
	}
	pages := map[string]sitePage{
		"/robots.txt": {ctype: "text/plain", body: "User-agent: *\nDisallow: /private/\n\nUser-agent: otherbot\nDisallow: /\n"},
		"/sitemap.xml": {ctype: "application/xml", body: `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>` + site.URL + `/docs/from-sitemap</loc></url>
  <url><loc>` + site.URL + `/blog/excluded</loc></url>
  <url><loc>https://elsewhere.example.org/docs/x</loc></url>
</urlset>`},
		"/docs/":                 htmlPage("Docs", link("/docs/a", "/docs/b", "/private/secret", "/blog/post", "https://elsewhere.example.org/docs/y")),
		"/docs/a":                htmlPage("A", link("/docs/a/deeper", "/docs/")),
		"/docs/b":                htmlPage("B", `<p>Nofollow: <a rel="nofollow" href="/docs/nofollow">x</a></p>`),
		"/docs/a/deeper":         htmlPage("Deeper", link("/docs/a/deeper/deepest")),
		"/docs/a/deeper/deepest": htmlPage("Deepest", "<p>too deep</p>"),
		"/docs/from-sitemap":     htmlPage("From sitemap", "<p>listed</p>"),
		"/docs/nofollow":         htmlPage("Nofollow", "<p>not followed</p>"),
		"/private/secret":        htmlPage("Secret", "<p>robots says no</p>"),
		"/blog/post":             htmlPage("Blog", "<p>excluded</p>"),
		"/blog/excluded":         htmlPage("Blog", "<p>excluded</p>"),
	}
	for k, v := range pages {
		site.setPage(k, &v)
	}

	cfg := Config{
		URLs:                 []string{site.URL + "/docs/"},
		Sitemap:              site.URL + "/sitemap.xml",
		Crawl:                CrawlConfig{Depth: 2, Include: []string{"/docs/", "/private/**"}, Exclude: []string{"/blog/*"}},
		AllowPrivateNetworks: true,
	}
	src := MustSource(t, ingestd.TierTrustedInternal, cfg, nil)
	p := newPass(nil)
	MustSync(t, src, p)

	var got []string
	for _, id := range putIDs(p) {
		got = append(got, strings.TrimPrefix(id, site.URL))
	}
	want := []string{"/docs/", "/docs/a", "/docs/a/deeper", "/docs/b", "/docs/from-sitemap"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("crawled %v, want %v", got, want)
	}
	for _, r := range site.takeRequests() {
		if strings.HasPrefix(r.path, "/private/") || strings.HasPrefix(r.path, "/blog/") || r.path == "/docs/a/deeper/deepest" || r.path == "/docs/nofollow" {
			t.Errorf("crawl requested %s", r.path)
		}
		if !strings.HasPrefix(r.userAgent, "ingestd/test") {
			t.Errorf("user agent = %q, want ingestd/test", r.userAgent)
		}
	}
	if len(p.Fails()) != 0 {
		t.Errorf("fails = %v", p.Fails())
	}

	// The root links to a, b and (in scope, but disallowed) /private/secret:
	// graph links name in-scope pages whether or not robots let us fetch them.
	root := p.MustPut(t, site.URL+"/docs/")
	var links []string
	for _, l := range root.Links {
		links = append(links, strings.TrimPrefix(l.ToExternalID, site.URL))
	}
	if want := []string{"/docs/a", "/docs/b", "/private/secret"}; !reflect.DeepEqual(links, want) {
		t.Errorf("root links = %v, want %v", links, want)
	}

	t.Run("max_pages", func(t *testing.T) {
		cfg := cfg
		cfg.Crawl.MaxPages = 2
		src := MustSource(t, ingestd.TierTrustedInternal, cfg, nil)
		p := newPass(nil)
		MustSync(t, src, p)
		if got := len(p.PutIDs()); got != 2 {
			t.Errorf("max_pages 2 put %d pages: %v", got, putIDs(p))
		}
	})
}

// TestRevalidation: a second pass sends conditional requests and writes
// nothing; a changed page is written again.
func TestRevalidation(t *testing.T) {
	site := MustSite(t, map[string]sitePage{
		"/":  htmlPage("Home", `<p>Welcome. <a href="/a">A</a> <a href="/b">B</a></p>`),
		"/a": htmlPage("A", "<p>page a</p>"),
		"/b": htmlPage("B", "<p>page b</p>"),
	})
	src := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{site.URL + "/"}, Crawl: CrawlConfig{Depth: 1}, AllowPrivateNetworks: true}, nil)
	p1 := newPass(nil)
	MustSync(t, src, p1)
	if got := len(p1.PutIDs()); got != 3 {
		t.Fatalf("first pass put %d, want 3: %v", got, putIDs(p1))
	}
	site.takeRequests()

	p2 := p1.Next()
	MustSync(t, src, p2)
	if got := len(p2.PutIDs()); got != 0 {
		t.Errorf("second pass put %d items, want 0: %v", got, putIDs(p2))
	}
	pagesSeen := 0
	for _, r := range site.takeRequests() {
		if r.path == "/robots.txt" {
			continue
		}
		pagesSeen++
		if r.ifNoneMatch == "" || r.ifModifiedSince != lastModified {
			t.Errorf("%s: If-None-Match %q, If-Modified-Since %q: want both", r.path, r.ifNoneMatch, r.ifModifiedSince)
		}
	}
	if pagesSeen != 3 {
		t.Errorf("second pass requested %d pages, want 3 (the 304 root still leads to a and b)", pagesSeen)
	}

	changed := htmlPage("B", "<p>page b, edited</p>")
	site.setPage("/b", &changed)
	p3 := p2.Next()
	MustSync(t, src, p3)
	if got, want := putIDs(p3), []string{site.URL + "/b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("third pass put %v, want %v", got, want)
	}
}

// TestTombstone: a page that disappears is reported as failed (its
// document kept) for tombstone_after-1 passes, then tombstoned; a page
// that comes back in between starts counting again.
func TestTombstone(t *testing.T) {
	site := MustSite(t, map[string]sitePage{
		"/":      htmlPage("Home", `<p><a href="/gone">gone</a> <a href="/flaky">flaky</a></p>`),
		"/gone":  htmlPage("Gone", "<p>soon gone</p>"),
		"/flaky": htmlPage("Flaky", "<p>comes and goes</p>"),
	})
	src := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{site.URL + "/"}, Crawl: CrawlConfig{Depth: 1}, AllowPrivateNetworks: true, TombstoneAfter: 3}, nil)
	p := newPass(nil)
	MustSync(t, src, p)
	if got := len(p.PutIDs()); got != 3 {
		t.Fatalf("first pass put %d, want 3", got)
	}

	// The page goes, and the home page stops linking to it: known pages
	// are revalidated whether or not the crawl reaches them.
	site.setPage("/gone", nil)
	site.setPage("/flaky", nil)
	home := htmlPage("Home", `<p><a href="/flaky">flaky</a></p>`)
	site.setPage("/", &home)

	gone := site.URL + "/gone"
	for pass := 1; pass <= 3; pass++ {
		p = p.Next()
		if pass == 2 {
			back := htmlPage("Flaky", "<p>comes and goes</p>")
			site.setPage("/flaky", &back)
		}
		if pass == 3 {
			site.setPage("/flaky", nil)
		}
		MustSync(t, src, p)
		if pass < 3 {
			if len(p.Deletes()) != 0 {
				t.Fatalf("pass %d tombstoned %v early", pass, p.Deletes())
			}
			if err := p.Fails()[gone]; err == nil || !strings.Contains(err.Error(), "404") {
				t.Errorf("pass %d: fail for %s = %v, want a 404", pass, gone, err)
			}
		}
	}
	if got, want := p.Deletes(), []string{gone}; !reflect.DeepEqual(got, want) {
		t.Errorf("deletes after 3 missing passes = %v, want %v (flaky came back in pass 2)", got, want)
	}
	if _, ok := p.Cursors()[pagePrefix+gone]; ok {
		t.Error("state of the tombstoned page was kept")
	}
	if strings.Contains(p.Cursors()[indexKey], "/gone") {
		t.Errorf("index still lists the tombstoned page: %s", p.Cursors()[indexKey])
	}

	// A tombstoned page is not tombstoned again.
	p = p.Next()
	MustSync(t, src, p)
	for _, d := range p.Deletes() {
		if d == gone {
			t.Error("tombstoned twice")
		}
	}
}

// TestSyncStopsOnStoreError: a Put error stops the pass.
func TestSyncStopsOnStoreError(t *testing.T) {
	site := MustSite(t, map[string]sitePage{"/": htmlPage("Home", "<p>hi</p>")})
	src := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{site.URL + "/"}, AllowPrivateNetworks: true}, nil)
	err := src.Sync(context.Background(), newPass(&connectortest.Options{PutErr: fmt.Errorf("store down")}))
	if err == nil || !strings.Contains(err.Error(), "store down") {
		t.Fatalf("Sync error = %v, want the store error", err)
	}
}

// TestPrivateRefusedInSync: without allow_private_networks, a loopback
// site is refused by the guard and the pass reports it.
func TestPrivateRefusedInSync(t *testing.T) {
	site := MustSite(t, map[string]sitePage{"/": htmlPage("Home", "<p>hi</p>")})
	src := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{strings.Replace(site.URL, "127.0.0.1", "localhost", 1) + "/"}}, mapResolver{
		"localhost": {netip.MustParseAddr("127.0.0.1")},
	})
	p := newPass(nil)
	MustSync(t, src, p)
	if len(p.PutIDs()) != 0 || len(p.Fails()) != 1 {
		t.Fatalf("puts %v, fails %v: want one refusal", putIDs(p), p.Fails())
	}
	for _, err := range p.Fails() {
		if re, ok := IsRefused(err); !ok || re.Rule != "loopback" {
			t.Errorf("fail = %v, want a loopback refusal", err)
		}
	}
}
