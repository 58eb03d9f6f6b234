package web

import (
	"context"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

const docs = "https://docs.example.com"

// TestRedirectScope: a page of a trusted installation's site that
// redirects elsewhere is refused at the hop that leaves, before the other
// site is asked for anything, however the Location is written; a refusal
// names its rule and the hop. Redirects that stay on the site are followed
// and the page is stored under its final URL.
func TestRedirectScope(t *testing.T) {
	n := MustNet(t)
	for _, u := range []string{
		"https://evil.example.com/page", "http://evil.example.net/page",
		docs + ":8443/page", "http://docs.example.com/page",
		"http://xn--dcs-qdd.example.com/page",
	} {
		n.html(u, "Off site", "<p>attacker text</p>")
	}
	n.redirect("https://evil.example.com/bounce", http.StatusFound, docs+"/page")
	n.html(docs+"/page", "Page", "<p>on site</p>")
	n.redirect(docs+"/r/hop1", http.StatusMovedPermanently, "/r/hop2")
	n.redirect(docs+"/r/hop2", http.StatusFound, "../page")
	n.redirect(docs+"/r/loop", http.StatusFound, "/r/loop")

	tests := []struct {
		name     string
		status   int
		location string
		wantRule string // "" when the fetch succeeds
		wantURI  string
	}{
		{name: "301 off site", status: 301, location: "https://evil.example.com/page", wantRule: "site"},
		{name: "302 off site", status: 302, location: "https://evil.example.com/page", wantRule: "site"},
		{name: "303 off site", status: 303, location: "https://evil.example.com/page", wantRule: "site"},
		{name: "307 off site", status: 307, location: "https://evil.example.com/page", wantRule: "site"},
		{name: "308 off site", status: 308, location: "https://evil.example.com/page", wantRule: "site"},
		{name: "plain http off site", status: 302, location: "http://evil.example.net/page", wantRule: "site"},
		{name: "same host other port", status: 302, location: docs + ":8443/page", wantRule: "site"},
		{name: "https to http downgrade", status: 301, location: "http://docs.example.com/page", wantRule: "downgrade"},
		{name: "protocol relative", status: 302, location: "//evil.example.com/page", wantRule: "site"},
		{name: "userinfo names the site", status: 302, location: "https://docs.example.com@evil.example.com/page", wantRule: "credentials"},
		{name: "idn homograph", status: 302, location: "http://d\u043ecs.example.com/page", wantRule: "site"},
		{name: "leaves and comes back", status: 302, location: "https://evil.example.com/bounce", wantRule: "site"},
		{name: "too many redirects", status: 302, location: "/r/loop", wantRule: "redirects"},
		{name: "opaque", status: 302, location: "https:evil.example.com/page", wantRule: "host"},
		// Written to look off-site, these resolve on the site; what is
		// stored is the path they really name (a 404 here) or the page.
		{name: "backslash path", status: 302, location: `/\evil.example.com/page`, wantRule: "status"},
		{name: "triple slash", status: 302, location: "///evil.example.com/page", wantRule: "status"},
		{name: "case and trailing dot", status: 302, location: "https://DOCS.Example.COM./page", wantURI: docs + "/page"},
		{name: "explicit default port", status: 302, location: "https://docs.example.com:443/page", wantURI: docs + "/page"},
		{name: "on-site chain", status: 302, location: "/r/hop1", wantURI: docs + "/page"},
	}
	src := MustNetSource(t, n, ingestd.TierTrustedInternal, Config{URLs: []string{docs + "/"}})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := docs + "/r/" + strings.ReplaceAll(tt.name, " ", "-")
			n.redirect(from, tt.status, tt.location)
			n.reset()
			items, err := src.Fetch(context.Background(), from)
			if got := n.outside(docs); len(got) != 0 {
				t.Fatalf("the attacker's site was asked for %v", got)
			}
			switch tt.wantRule {
			case "":
				if err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				if got := items[0].ExternalID; got != tt.wantURI {
					t.Errorf("external id = %q, want %q", got, tt.wantURI)
				}
				if got := items[0].URI; got != tt.wantURI {
					t.Errorf("uri = %q, want %q", got, tt.wantURI)
				}
			case "status":
				if got := ingestd.ErrorCode(err); got != ingestd.EINVALID || !strings.Contains(err.Error(), "HTTP 404") {
					t.Fatalf("Fetch = %v, %v; want the site's 404 for the path", items, err)
				}
			default:
				re, ok := IsRefused(err)
				if !ok {
					t.Fatalf("Fetch = %d items, error %v; want a refusal by rule %q", len(items), err, tt.wantRule)
				}
				if re.Rule != tt.wantRule {
					t.Errorf("refused by rule %q (%v), want %q", re.Rule, re, tt.wantRule)
				}
				if !strings.Contains(re.Error(), "redirect ") || !strings.Contains(re.Error(), from) {
					t.Errorf("refusal %q does not name the hop (redirect N of %s)", re, from)
				}
				if got := ingestd.ErrorCode(err); got != ingestd.EINVALID {
					t.Errorf("error code = %q, want EINVALID", got)
				}
			}
		})
	}
}

// TestRedirectScopeUpgrade: a site configured as http takes its own
// https pages (an upgrade), and one configured as https refuses http.
func TestRedirectScopeUpgrade(t *testing.T) {
	n := MustNet(t)
	n.redirect("http://plain.example.com/up", http.StatusMovedPermanently, "https://plain.example.com/page")
	n.html("https://plain.example.com/page", "Page", "<p>upgraded</p>")
	src := MustNetSource(t, n, ingestd.TierTrustedInternal, Config{URLs: []string{"http://plain.example.com/"}})
	items, err := src.Fetch(context.Background(), "http://plain.example.com/up")
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if got, want := items[0].ExternalID, "https://plain.example.com/page"; got != want {
		t.Errorf("external id = %q, want %q", got, want)
	}

	src = MustNetSource(t, n, ingestd.TierTrustedInternal, Config{URLs: []string{"https://plain.example.com/"}})
	_, err = src.Fetch(context.Background(), "http://plain.example.com/up")
	if re, ok := IsRefused(err); !ok || re.Rule != "downgrade" {
		t.Errorf("Fetch of http on an https site = %v, want a refusal by rule downgrade", err)
	}
}

// TestPageCannotNameItsURL: what a page says about its own address (a
// meta refresh, rel=canonical, og:url, a base element, Refresh,
// Content-Location and Link headers) neither moves the fetch nor becomes
// the stored identity.
func TestPageCannotNameItsURL(t *testing.T) {
	n := MustNet(t)
	n.page(docs+"/claims", "text/html", `<html><head><title>Claims</title>
<meta http-equiv="refresh" content="0; url=https://evil.example.com/page">
<link rel="canonical" href="https://evil.example.com/canonical">
<meta property="og:url" content="https://evil.example.com/og">
<base href="https://evil.example.com/">
</head><body><article><p>A page that claims to live elsewhere. <a href="relative">a relative link</a>
<a href="https://docs.example.com/real">a real one</a></p></article></body></html>`)
	n.html(docs+"/real", "Real", "<p>real</p>")
	n.mu.Lock()
	n.routes[docs+"/headers"] = func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Refresh", "0; url=https://evil.example.com/refresh")
		w.Header().Set("Content-Location", "https://evil.example.com/content-location")
		w.Header().Set("Link", `<https://evil.example.com/link>; rel="canonical"`)
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "headers that claim another address")
	}
	n.mu.Unlock()
	for _, tier := range []ingestd.Tier{ingestd.TierTrustedInternal, ingestd.TierUntrustedExternal} {
		src := MustNetSource(t, n, tier, Config{URLs: []string{docs + "/claims"}, Crawl: CrawlConfig{Depth: 1}})
		items, err := src.Fetch(context.Background(), docs+"/claims")
		if err != nil {
			t.Fatalf("%s: Fetch: %v", tier, err)
		}
		if got, want := items[0].ExternalID+" "+items[0].URI, docs+"/claims "+docs+"/claims"; got != want {
			t.Errorf("%s: identity = %q, want %q", tier, got, want)
		}
		items, err = src.Fetch(context.Background(), docs+"/headers")
		if err != nil {
			t.Fatalf("%s: Fetch: %v", tier, err)
		}
		if got, want := items[0].ExternalID+" "+items[0].URI, docs+"/headers "+docs+"/headers"; got != want {
			t.Errorf("%s: identity = %q, want %q", tier, got, want)
		}
		p := newPass(nil)
		MustSync(t, src, p)
		if got, want := putIDs(p), []string{docs + "/claims", docs + "/real"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: crawl put %v, want %v", tier, got, want)
		}
		for _, l := range p.MustPut(t, docs+"/claims").Links {
			if !strings.HasPrefix(l.ToExternalID, docs+"/") {
				t.Errorf("%s: graph link to %s", tier, l.ToExternalID)
			}
		}
	}
	if got := n.outside(docs); len(got) != 0 {
		t.Fatalf("the attacker's site was asked for %v", got)
	}
}

// TestCrawlScope: seeds, crawl links and sitemap entries that lead off
// the site, directly or through a redirect, store nothing from elsewhere
// and never reach the other site; robots.txt and the sitemap are held to
// the same rule.
func TestCrawlScope(t *testing.T) {
	n := MustNet(t)
	n.html(docs+"/", "Home", `<p><a href="/r/link">moved</a> <a href="https://evil.example.com/direct">direct</a>
<a href="//evil.example.net/proto">protocol relative</a> <a href="https://docs.example.com@evil.example.com/u">userinfo</a>
<a href="/ok">ok</a></p>`)
	n.html(docs+"/ok", "OK", "<p>fine</p>")
	n.html(docs+"/from-sitemap", "Listed", "<p>listed</p>")
	n.redirect(docs+"/r/link", http.StatusFound, "https://evil.example.com/page")
	n.redirect(docs+"/r/seed", http.StatusTemporaryRedirect, "https://evil.example.com/page")
	n.redirect(docs+"/r/entry", http.StatusPermanentRedirect, "http://evil.example.net/page")
	n.page(docs+"/sitemap.xml", "application/xml", `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>https://evil.example.com/listed</loc></url>
  <url><loc>`+docs+`/r/entry</loc></url>
  <url><loc>`+docs+`/from-sitemap</loc></url>
</urlset>`)
	for _, u := range []string{"https://evil.example.com/page", "http://evil.example.net/page", "https://evil.example.com/direct", "https://evil.example.com/listed"} {
		n.html(u, "Evil", "<p>attacker text</p>")
	}

	for _, tier := range []ingestd.Tier{ingestd.TierTrustedInternal, ingestd.TierUntrustedExternal} {
		src := MustNetSource(t, n, tier, Config{URLs: []string{docs + "/", docs + "/r/seed"}, Sitemap: docs + "/sitemap.xml", Crawl: CrawlConfig{Depth: 1}})
		p := newPass(nil)
		MustSync(t, src, p)
		if got, want := putIDs(p), []string{docs + "/", docs + "/from-sitemap", docs + "/ok"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: put %v, want %v", tier, got, want)
		}
		for _, path := range []string{"/r/link", "/r/seed", "/r/entry"} {
			re, ok := IsRefused(p.Fails()[docs+path])
			if !ok || re.Rule != "site" {
				t.Errorf("%s: %s failed with %v, want a refusal by rule site", tier, path, p.Fails()[docs+path])
			}
		}
	}
	if got := n.outside(docs); len(got) != 0 {
		t.Errorf("the attacker's site was asked for %v", got)
	}

	t.Run("robots.txt redirects off site", func(t *testing.T) {
		const site = "https://robots.example.com"
		n.redirect(site+"/robots.txt", http.StatusFound, "https://evil.example.com/robots.txt")
		n.page("https://evil.example.com/robots.txt", "text/plain", "User-agent: *\nAllow: /\n")
		n.html(site+"/", "Home", "<p>home</p>")
		src := MustNetSource(t, n, ingestd.TierTrustedInternal, Config{URLs: []string{site + "/"}})
		p := newPass(nil)
		n.reset()
		MustSync(t, src, p)
		if got := n.outside(site); len(got) != 0 {
			t.Fatalf("the attacker's site was asked for %v", got)
		}
		re, ok := IsRefused(p.Fails()[site+"/"])
		if !ok || re.Rule != "site" || !strings.Contains(re.Error(), "robots.txt") {
			t.Errorf("seed failed with %v, want a refusal by rule site naming robots.txt", p.Fails()[site+"/"])
		}
	})

	t.Run("sitemap redirects off site", func(t *testing.T) {
		const site = "https://maps.example.com"
		n.redirect(site+"/sitemap.xml", http.StatusMovedPermanently, "https://evil.example.com/sitemap.xml")
		n.page("https://evil.example.com/sitemap.xml", "application/xml", `<urlset><url><loc>`+site+`/x</loc></url></urlset>`)
		n.html(site+"/x", "X", "<p>x</p>")
		src := MustNetSource(t, n, ingestd.TierTrustedInternal, Config{Sitemap: site + "/sitemap.xml"})
		p := newPass(nil)
		n.reset()
		MustSync(t, src, p)
		if got := n.outside(site); len(got) != 0 {
			t.Fatalf("the attacker's site was asked for %v", got)
		}
		if re, ok := IsRefused(p.Fails()[site+"/sitemap.xml"]); !ok || re.Rule != "site" {
			t.Errorf("sitemap failed with %v, want a refusal by rule site", p.Fails()[site+"/sitemap.xml"])
		}
		if len(p.PutIDs()) != 0 {
			t.Errorf("put %v from an off-site sitemap", putIDs(p))
		}
	})
}

// TestUntrustedFetchAnywhere: an untrusted-external installation takes a
// submitted page from anywhere the guard allows, redirects included (no
// tier is gained), and stores it under the URL it was fetched from.
func TestUntrustedFetchAnywhere(t *testing.T) {
	n := MustNet(t)
	n.redirect("http://evil.example.net/r", http.StatusFound, "https://evil.example.com/page")
	n.html("https://evil.example.com/page", "Elsewhere", "<p>elsewhere</p>")
	src := MustNetSource(t, n, ingestd.TierUntrustedExternal, Config{URLs: []string{docs + "/"}})
	items, err := src.Fetch(context.Background(), "http://evil.example.net/r")
	if err != nil {
		t.Fatalf("Fetch: %v", err)
	}
	if got, want := items[0].ExternalID, "https://evil.example.com/page"; got != want {
		t.Errorf("external id = %q, want %q", got, want)
	}
	// The guard still holds on every hop.
	n.redirect("http://evil.example.net/private", http.StatusFound, "http://10.0.0.1/")
	if _, err := src.Fetch(context.Background(), "http://evil.example.net/private"); err == nil {
		t.Error("an untrusted fetch followed a redirect to a private address")
	} else if re, ok := IsRefused(err); !ok || re.Rule != "private" || !strings.Contains(re.Error(), "redirect 1 of http://evil.example.net/private goes to http://10.0.0.1/") {
		t.Errorf("Fetch = %v, want a refusal by rule private naming the hop", err)
	}
	// So it does for a name that resolves to a private address, which is
	// refused only when the hop is dialled.
	n.redirect("http://evil.example.net/rebind", http.StatusFound, "http://internal.example.net/")
	src = MustNetSource(t, n, ingestd.TierUntrustedExternal, Config{URLs: []string{docs + "/"}})
	src.guard.Resolver = mapResolver{"evil.example.net": {publicAddr}, "internal.example.net": {netip.MustParseAddr("10.9.8.7")}}
	_, err = src.Fetch(context.Background(), "http://evil.example.net/rebind")
	if re, ok := IsRefused(err); !ok || re.Rule != "private" || !strings.Contains(re.Error(), "redirect 1 of http://evil.example.net/rebind goes to http://internal.example.net/: internal.example.net resolves to 10.9.8.7") {
		t.Errorf("Fetch = %v, want a refusal by rule private naming the hop", err)
	}
}

// TestRedirectOffSiteIsAMiss: a known page that starts redirecting off the
// site is gone as far as the site is concerned: its misses are counted
// and it is tombstoned like a 404, and nothing from elsewhere is stored.
func TestRedirectOffSiteIsAMiss(t *testing.T) {
	n := MustNet(t)
	n.html(docs+"/", "Home", `<p><a href="/moved">moved</a></p>`)
	n.html(docs+"/moved", "Moved", "<p>still here</p>")
	n.html("https://evil.example.com/moved", "Evil", "<p>attacker text</p>")
	src := MustNetSource(t, n, ingestd.TierTrustedInternal, Config{URLs: []string{docs + "/"}, Crawl: CrawlConfig{Depth: 1}, TombstoneAfter: 2})
	p := newPass(nil)
	MustSync(t, src, p)
	if got, want := putIDs(p), []string{docs + "/", docs + "/moved"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("first pass put %v, want %v", got, want)
	}
	n.redirect(docs+"/moved", http.StatusMovedPermanently, "https://evil.example.com/moved")
	n.reset()
	p = p.Next()
	MustSync(t, src, p)
	if err := p.Fails()[docs+"/moved"]; err == nil || !strings.Contains(err.Error(), "gone 1 of 2 passes") {
		t.Errorf("second pass: fail = %v, want a miss", err)
	}
	if re, ok := IsRefused(p.Fails()[docs+"/moved"]); !ok || re.Rule != "site" {
		t.Errorf("second pass: fail = %v, want a site refusal counted as a miss", p.Fails()[docs+"/moved"])
	}
	p = p.Next()
	MustSync(t, src, p)
	if got, want := p.Deletes(), []string{docs + "/moved"}; !reflect.DeepEqual(got, want) {
		t.Errorf("third pass deleted %v, want %v", got, want)
	}
	if got := n.outside(docs); len(got) != 0 {
		t.Errorf("the attacker's site was asked for %v", got)
	}
}

// TestScopeSite: how the site rule reads a URL's origin.
func TestScopeSite(t *testing.T) {
	sc, err := newScope("web", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"https://docs.example.com/", "http://plain.example.com:8080/", "https://b\u00fccher.example/"} {
		sc.addSite(mustURL(t, s))
	}
	for _, tt := range []struct {
		url  string
		want string // "" on a site, else the rule
	}{
		{"https://docs.example.com/x", ""},
		{"https://DOCS.EXAMPLE.COM./x", ""},
		{"https://docs.example.com:443/x", ""},
		{"https://docs.example.com:/x", ""},
		{"https://\uff44\uff4f\uff43\uff53.example.com/x", ""}, // full-width letters map to the same name
		{"https://docs.example.com:8443/x", "site"},
		{"http://docs.example.com/x", "downgrade"},
		{"https://evil.example.com/x", "site"},
		{"https://docs.example.com.evil.example/x", "site"},
		{"https://evil.example/docs.example.com/", "site"},
		{"https://docs.example.com@evil.example/", "site"},
		{"https://d\u043ecs.example.com/x", "site"}, // Cyrillic o
		{"https://xn--bcher-kva.example/", ""},
		{"https://B\u00dcCHER.example/", ""},
		{"http://b\u00fccher.example/", "downgrade"},
		{"http://plain.example.com:8080/", ""},
		{"https://plain.example.com:8080/", ""}, // an http site takes its https pages
		{"http://plain.example.com/", "site"},
	} {
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatalf("%s: %v", tt.url, err)
		}
		if got := sc.site(u); got != tt.want {
			t.Errorf("site(%s) = %q, want %q", tt.url, got, tt.want)
		}
	}
	if got := sc.anywhereFor().site(mustURL(t, "http://evil.example/")); got != "" {
		t.Errorf("anywhere scope refused %q", got)
	}
}

// TestResolveNeedsAHost: a link whose scheme makes it absolute but that
// names no host is no link (FuzzExtract found "https:/:ads.example.net"
// kept as "https:///:ads.example.net/..."); relative links still take the
// base's host.
func TestResolveNeedsAHost(t *testing.T) {
	base := &url.URL{Scheme: "https", Host: "docs.example.com", Path: "/guide/page"}
	for ref, want := range map[string]string{
		"https:/:ads.example.net/click?id=42": "",
		"https:ads.example.net":               "",
		"http:///path":                        "",
		"https://":                            "",
		"/guides/keys#leaks":                  "https://docs.example.com/guides/keys",
		"install":                             "https://docs.example.com/guide/install",
		"//Other.Example.com:443/x":           "https://other.example.com/x",
	} {
		got := ""
		if u := resolve(base, ref); u != nil {
			got = u.String()
		}
		if got != want {
			t.Errorf("resolve(%q) = %q, want %q", ref, got, want)
		}
	}
}
