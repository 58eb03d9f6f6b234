// Package web is the url connector: it fetches web pages an installation
// names (a list of URLs, a sitemap, a same-site crawl) and emits their
// readable text as items, with the page's links to other pages of the
// installation as graph links. The connector kind is "url"; the package
// is named web so that it does not shadow net/url.
//
// The fetcher is an attack surface of its own (server-side request
// forgery), so every request goes through a Guard: http and https only,
// every resolved address checked at connect time, redirects re-checked hop
// by hop, bodies capped while streaming (before and after gzip), a
// content-type allow-list and timeouts. robots.txt is honoured and each
// host gets a polite request rate.
//
// Every request is also held to a scope (fetcher.get, the one door to the
// network): a pass, and a page submitted to an installation that is not
// untrusted-external, stay on the installation's sites at every redirect
// hop and at the final URL, which is the page's identity. A page on the
// site cannot launder another site's text into the installation's tier by
// redirecting to it.
//
// It must never fetch a URL the guard has not checked, never follow a
// proxy from the environment, and never decide anything about trust or
// identity from what a page says (a meta refresh, rel=canonical, og:url):
// the installation's declared tier is the page's tier, and the URL it was
// fetched from is its name.
package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	rich "github.com/ingestd/ingestd/connectors/internal/extract"
	"github.com/ingestd/ingestd/provenance"
)

// Kind is the url connector kind.
var Kind = connectors.Kind{
	Name: "url",
	Policy: provenance.AnyTier("a web page is authored by whoever controls its site: " +
		"the owner declares whether that is their own docs site (trusted-internal) or the open web (untrusted-external)"),
	New: New,
}

// Config is an installation's url: block.
type Config struct {
	// URLs are fetched on every pass (depth 0 of the crawl). Their
	// origins (scheme, host and port), and the sitemap's, are the
	// installation's sites: every fetch stays on them, redirects included
	// (see scope).
	URLs []string `yaml:"urls"`
	// Sitemap is the URL of a sitemap.xml (or a sitemap index, followed
	// one level) whose entries on its own host are fetched like URLs,
	// subject to crawl.include/exclude.
	Sitemap string      `yaml:"sitemap"`
	Crawl   CrawlConfig `yaml:"crawl"`
	// AllowPrivateNetworks lifts the guard's address rules (loopback,
	// RFC 1918, link-local, ...) for an installation that fetches an
	// intranet site on purpose. Default false.
	AllowPrivateNetworks bool `yaml:"allow_private_networks"`
	// RatePerHost is the most requests per host, "N/s", "N/m" or "N/h";
	// default "1/s". robots.txt Crawl-delay can only slow it.
	RatePerHost string `yaml:"rate_per_host"`
	// UserAgent is appended to "ingestd/<version>" in the User-Agent
	// header (a contact URL, say). robots.txt is matched for "ingestd".
	UserAgent string `yaml:"user_agent"`
	// Timeout bounds one request, redirects and body included; default 30s.
	Timeout time.Duration `yaml:"timeout"`
	// ConnectTimeout bounds one TCP connect; default 10s.
	ConnectTimeout time.Duration `yaml:"connect_timeout"`
	// MaxBytes caps a response body, before and after decompression;
	// default 10 MiB. Larger responses fail with ETOOLARGE.
	MaxBytes int64 `yaml:"max_bytes"`
	// Extract bounds the reading of a PDF, DOCX or ODT response (by its
	// Content-Type, or its first bytes): pages, text, decompressed bytes
	// and time per document; the input is at most MaxBytes. One that
	// cannot be read within them is reported with pass.Fail, naming why.
	Extract rich.Config `yaml:"extract"`
	// TombstoneAfter is how many consecutive passes a known page must be
	// gone (404/410, or out of scope, or disallowed by robots.txt) before it
	// is tombstoned; default 3.
	TombstoneAfter int `yaml:"tombstone_after"`
}

// CrawlConfig bounds the same-site crawl. With Depth 0 (the default) only
// URLs and sitemap entries are fetched.
type CrawlConfig struct {
	// Depth is how many links away from a URL or sitemap entry the crawl
	// goes.
	Depth int `yaml:"depth"`
	// MaxPages caps the requests for pages in one pass; default 1000.
	MaxPages int `yaml:"max_pages"`
	// Include and Exclude are path prefixes or globs (see scope); a page
	// must match an Include pattern, when there are any, and no Exclude
	// pattern. URLs listed in urls are fetched whatever the patterns say.
	Include []string `yaml:"include"`
	Exclude []string `yaml:"exclude"`
}

// Defaults.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	DefaultMaxBytes       = 10 << 20
	DefaultTombstoneAfter = 3
	DefaultMaxPages       = 1000
	DefaultRatePerHost    = "1/s"
)

// robotsAgent is the product token robots.txt groups are matched against.
const robotsAgent = "ingestd"

// Options build a Source without a configuration file (cmd uses New).
type Options struct {
	Config Config
	// Resolver resolves host names; nil means the system resolver.
	Resolver Resolver
	// Version goes into the User-Agent; empty means the module version
	// from the build info, or "dev".
	Version string
	Logger  *slog.Logger
}

// Source is one url installation. Its methods are safe for concurrent
// use; passes of one Source run one at a time.
type Source struct {
	inst   ingestd.Installation
	cfg    Config
	seeds  []*url.URL
	site   *scope
	guard  *Guard
	fetch  *fetcher
	log    *slog.Logger
	passMu sync.Mutex
}

var (
	_ ingestd.Source        = (*Source)(nil)
	_ connectors.ItemReader = (*Source)(nil)
)

// New builds a url installation from its settings: a Source that is also
// its ItemReader, for a URL from the command line or an API client.
func New(inst ingestd.Installation, s connectors.Settings) (connectors.Connector, error) {
	var cfg Config
	if s.Decode != nil {
		if err := s.Decode(&cfg); err != nil {
			return connectors.Connector{}, err
		}
	}
	src, err := NewSource(inst, Options{Config: cfg, Logger: s.Logger})
	if err != nil {
		return connectors.Connector{}, err
	}
	return connectors.Connector{Source: src, Reader: src, RemoteRefs: true}, nil
}

// NewSource checks the configuration and builds the source. Errors are
// EINVALID and name the offending key: no urls and no sitemap, a URL the
// guard refuses without resolving it (a scheme other than http/https, a
// private address literal), a bad rate or pattern.
func NewSource(inst ingestd.Installation, o Options) (*Source, error) {
	cfg := o.Config
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.TombstoneAfter <= 0 {
		cfg.TombstoneAfter = DefaultTombstoneAfter
	}
	if cfg.Crawl.MaxPages <= 0 {
		cfg.Crawl.MaxPages = DefaultMaxPages
	}
	var err error
	if cfg.Extract, err = cfg.Extract.Check("url.extract"); err != nil {
		return nil, err
	}
	if cfg.Crawl.Depth < 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "url.crawl.depth %d is negative", cfg.Crawl.Depth)
	}
	if cfg.RatePerHost == "" {
		cfg.RatePerHost = DefaultRatePerHost
	}
	lim, err := ParseRate(cfg.RatePerHost)
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "url.rate_per_host: %v", err)
	}
	if len(cfg.URLs) == 0 && cfg.Sitemap == "" {
		return nil, ingestd.Errorf(ingestd.EINVALID, "url: set urls or sitemap")
	}
	site, err := newScope(inst.ID, cfg.Crawl.Include, cfg.Crawl.Exclude)
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "url.crawl: %v", err)
	}
	g := &Guard{AllowPrivate: cfg.AllowPrivateNetworks, Resolver: o.Resolver, ConnectTimeout: cfg.ConnectTimeout}
	src := &Source{inst: inst, cfg: cfg, site: site, guard: g, log: o.Logger}
	if src.log == nil {
		src.log = slog.New(slog.DiscardHandler)
	}
	for _, raw := range cfg.URLs {
		u, err := src.parse(raw)
		if err != nil {
			return nil, ingestd.Errorf(ingestd.EINVALID, "url.urls: %v", ingestd.ErrorMessage(err))
		}
		src.seeds = append(src.seeds, u)
		site.addSite(u)
	}
	if cfg.Sitemap != "" {
		u, err := src.parse(cfg.Sitemap)
		if err != nil {
			return nil, ingestd.Errorf(ingestd.EINVALID, "url.sitemap: %v", ingestd.ErrorMessage(err))
		}
		site.addSite(u)
	}
	version := o.Version
	if version == "" {
		version = moduleVersion()
	}
	ua := "ingestd/" + version
	if s := strings.TrimSpace(cfg.UserAgent); s != "" {
		ua += " " + s
	}
	src.fetch = newFetcher(g, ua, cfg.MaxBytes, cfg.Timeout, lim)
	return src, nil
}

// parse reads a URL from configuration or a caller and applies the
// guard's static rules. file:// and every scheme but http/https are
// refused here.
func (s *Source) parse(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "%q is not a URL: %v", raw, err)
	}
	if err := s.guard.CheckURL(u); err != nil {
		return nil, err
	}
	return canonical(u), nil
}

// Fetch fetches one URL submitted at run time (ingestd ingest, the admin
// API) and returns it as an item, ready for pipeline.Ingest. It is held to
// the same guard as a crawl (file:// and other schemes refused, private
// addresses refused unless allow_private_networks, every redirect hop
// re-checked) and to robots.txt. Unless the installation is declared
// untrusted-external, the URL, every redirect hop and the final URL must
// be on one of its sites: a page from elsewhere would otherwise take on a
// tier its author never earned. The item's external id and URI are the
// final URL; nothing the page says about its own address (a meta refresh,
// rel=canonical, og:url) is followed or believed.
//
// Errors: a guard or scope refusal is a *RefusedError (EINVALID, naming
// the rule and, for a redirect, the hop), a page over max_bytes is
// ETOOLARGE, a refused content type is EINVALID, an HTTP error status is
// EINVALID with the status. Fetch keeps no revalidation state; a later
// pass that reaches the page revalidates it.
func (s *Source) Fetch(ctx context.Context, rawURL string) ([]ingestd.Item, error) {
	u, err := s.parse(rawURL)
	if err != nil {
		return nil, err
	}
	within := s.site
	if s.inst.Tier == ingestd.TierUntrustedExternal {
		within = s.site.anywhereFor()
	}
	if re := within.refuse(u, ""); re != nil { // before robots.txt is asked for
		return nil, re
	}
	c := newCrawl(s, nil, within)
	if ok, err := c.robotsAllow(ctx, u); err != nil {
		return nil, err
	} else if !ok {
		return nil, ingestd.Errorf(ingestd.EINVALID, "%s: disallowed by robots.txt for %s", u, robotsAgent)
	}
	resp, err := s.fetch.get(ctx, u, within, validators{}, pageAccept)
	if err != nil {
		if se, ok := err.(*statusError); ok {
			return nil, ingestd.Errorf(ingestd.EINVALID, "%s", se.Error())
		}
		return nil, err
	}
	item, _, _, err := c.item(ctx, resp)
	if err != nil {
		return nil, err
	}
	return []ingestd.Item{item}, nil
}

// ReadOne is the url kind's connectors.ItemReader: ref is a URL, fetched
// as Fetch does. A URL is safe to take from an API client: the guard and
// the installation's sites hold it wherever it comes from.
func (s *Source) ReadOne(ctx context.Context, ref string) ([]ingestd.Item, error) {
	return s.Fetch(ctx, ref)
}

// ParseRate reads a rate such as "1/s", "30/m" or "0.5/s".
func ParseRate(s string) (rate.Limit, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, fmt.Errorf("rate %q is not N/s, N/m or N/h", s)
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(n), 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("rate %q: %q is not a positive number", s, n)
	}
	var per time.Duration
	switch strings.TrimSpace(unit) {
	case "s":
		per = time.Second
	case "m":
		per = time.Minute
	case "h":
		per = time.Hour
	default:
		return 0, fmt.Errorf("rate %q: unit %q is not s, m or h", s, unit)
	}
	return rate.Limit(v / per.Seconds()), nil
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
