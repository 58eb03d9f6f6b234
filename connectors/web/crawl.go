package web

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/temoto/robotstxt"

	"github.com/ingestd/ingestd"
	rich "github.com/ingestd/ingestd/connectors/internal/extract"
)

// Revalidation and tombstones.
//
// A pass never calls Pass.Complete (it calls Pass.Whole when it reported
// every page it knows, each 304 as Unchanged): a crawl cannot list everything a site
// holds (max_pages, depth, a page unchanged since last time that we did
// not download), so reconciliation by absence would tombstone pages that
// are merely unvisited. Instead the connector keeps per-page state in
// cursors and tombstones explicitly:
//
//   - cursor "page <url>" holds the page's ETag and Last-Modified (sent back
//     as If-None-Match / If-Modified-Since), its external id (the final
//     URL after redirects), the links it had to follow (so a 304 page
//     still expands the crawl) and its count of consecutive misses;
//   - cursor "pages" lists the URLs that have state, so a pass revisits
//     known pages the crawl did not reach this time.
//
// A 304 writes nothing and resets the miss count. A miss is a 404/410, or a
// known page that is now out of crawl scope or disallowed by robots.txt;
// it is reported with Pass.Fail (the stored document is kept) until
// tombstone_after consecutive misses, then the page is tombstoned with
// Pass.Delete and its state dropped. Any other failure (5xx, timeout,
// refusal by the guard, too large) is a Fail that does not count as a
// miss: the page may come back.
const (
	indexKey   = "pages"
	pagePrefix = "page "
	// indexEvery is how many newly known pages a pass adds before it
	// saves the index, so a pass that dies loses little.
	indexEvery = 20
)

// pageState is what a pass remembers about one URL.
type pageState struct {
	ID string `json:"id"`
	validators
	Misses int      `json:"misses,omitempty"`
	Follow []string `json:"follow,omitempty"`
}

// crawl is one pass (or one Fetch) over a source.
type crawl struct {
	s    *Source
	pass ingestd.Pass
	// within is where every fetch of the crawl, redirects included, may
	// go: the installation's sites for a pass.
	within *scope
	robots map[string]*robotstxt.RobotsData

	visited  map[string]bool
	index    map[string]bool
	added    int
	fetched  int
	indexDue bool
	// partial: the pass may have missed pages (max_pages stopped it, a
	// sitemap could not be read), so it is not Whole.
	partial bool
}

func newCrawl(s *Source, pass ingestd.Pass, within *scope) *crawl {
	return &crawl{s: s, pass: pass, within: within, robots: map[string]*robotstxt.RobotsData{}, visited: map[string]bool{}, index: map[string]bool{}}
}

type queued struct {
	u     *url.URL
	depth int
	seed  bool // listed in urls: fetched whatever the patterns say
}

// Sync runs one pass: the configured URLs and sitemap entries, the crawl
// from them, then known pages the crawl did not reach. See the comment on
// indexKey for how unchanged and vanished pages are handled. It returns an
// error only when the pass must stop (the store failed, ctx ended).
func (s *Source) Sync(ctx context.Context, pass ingestd.Pass) error {
	s.passMu.Lock()
	defer s.passMu.Unlock()
	c := newCrawl(s, pass, s.site)
	if err := c.loadIndex(ctx); err != nil {
		return err
	}

	queue := make([]queued, 0, len(s.seeds))
	for _, u := range s.seeds {
		queue = append(queue, queued{u: u, seed: true})
	}
	if s.cfg.Sitemap != "" {
		for _, u := range c.sitemap(ctx) {
			queue = append(queue, queued{u: u})
		}
	}
	pass.Total(max(len(queue), len(c.index)))

	for len(queue) > 0 && c.fetched < s.cfg.Crawl.MaxPages {
		q := queue[0]
		queue = queue[1:]
		follow, err := c.visit(ctx, q)
		if err != nil {
			return err
		}
		if q.depth < s.cfg.Crawl.Depth {
			for _, f := range follow {
				if !c.visited[f.String()] {
					queue = append(queue, queued{u: f, depth: q.depth + 1})
				}
			}
		}
	}
	c.partial = c.partial || len(queue) > 0
	// Known pages the crawl did not reach: revalidate (or count a miss).
	for key := range c.index {
		if c.visited[key] {
			continue
		}
		if c.fetched >= s.cfg.Crawl.MaxPages {
			c.partial = true
			break
		}
		u, err := url.Parse(key)
		if err != nil {
			continue
		}
		if _, err := c.visit(ctx, queued{u: u, depth: s.cfg.Crawl.Depth}); err != nil {
			return err
		}
	}
	if err := c.saveIndex(ctx); err != nil {
		return err
	}
	if !c.partial {
		// Every page known or reached was reported: put, unchanged (a
		// 304), failed or tombstoned by its misses. What is gone the
		// misses tombstone, so this is Whole, never Complete.
		pass.Whole()
	}
	return nil
}

// visit handles one URL and returns the in-scope links to follow from it.
func (c *crawl) visit(ctx context.Context, q queued) ([]*url.URL, error) {
	key := q.u.String()
	if c.visited[key] {
		return nil, nil
	}
	c.visited[key] = true
	st, known, err := c.state(ctx, key)
	if err != nil {
		return nil, err
	}
	if !q.seed {
		if ok, why := c.s.site.allows(q.u); !ok {
			if known {
				return nil, c.miss(ctx, key, st, fmt.Errorf("%s: %s", key, why))
			}
			return nil, nil
		}
	}
	ok, err := c.robotsAllow(ctx, q.u)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		c.pass.Fail(idOf(key, st), err)
		return nil, nil
	}
	if !ok {
		err := fmt.Errorf("%s: disallowed by robots.txt for %s", key, robotsAgent)
		if known {
			return nil, c.miss(ctx, key, st, err)
		}
		if q.seed {
			c.pass.Fail(key, err)
		}
		return nil, nil
	}

	c.fetched++
	resp, err := c.s.fetch.get(ctx, q.u, c.within, st.validators, pageAccept)
	if err != nil {
		return nil, c.fetchFailed(ctx, q, key, st, known, err)
	}
	if resp.Status == http.StatusNotModified {
		if known {
			c.pass.Unchanged(idOf(key, st))
		}
		if known && st.Misses != 0 {
			st.Misses = 0
			if err := c.saveState(ctx, key, st); err != nil {
				return nil, err
			}
		}
		return c.parseAll(st.Follow), nil
	}

	item, follow, finalID, err := c.item(ctx, resp)
	c.visited[finalID] = true
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A document that cannot be read: its state stays as it was,
		// so a version stored earlier is revalidated against the
		// validators it was read with, and a new one is fetched whole.
		c.pass.Fail(finalID, err)
		return nil, nil
	}
	if err := c.pass.Put(ctx, item); err != nil {
		return nil, err
	}
	st = pageState{ID: finalID, validators: resp.Validators}
	for _, f := range follow { // kept even at depth 0, so a deeper crawl later can start from 304s
		st.Follow = append(st.Follow, f.String())
	}
	if err := c.saveState(ctx, key, st); err != nil {
		return nil, err
	}
	if err := c.indexed(ctx, key); err != nil {
		return nil, err
	}
	return follow, nil
}

// fetchFailed decides what a failed fetch of q means: the end of ctx
// stops the crawl; a known page that now leads off the site, or is gone
// (404, 410), is a miss; a broken link on the site is logged, not
// failed; anything else fails the page, and the crawl goes on.
func (c *crawl) fetchFailed(ctx context.Context, q queued, key string, st pageState, known bool, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if re, ok := IsRefused(err); ok && known && (re.Rule == "site" || re.Rule == "downgrade") {
		// The page now leads off the site: as far as the site is
		// concerned it is gone.
		return c.miss(ctx, key, st, err)
	}
	var se *statusError
	if errors.As(err, &se) && se.gone() {
		if known {
			return c.miss(ctx, key, st, err)
		}
		if !q.seed { // a broken link on the site is not our failure
			c.s.log.Debug("url.broken_link", "url", key, "status", se.Status)
			return nil
		}
	}
	c.pass.Fail(idOf(key, st), err)
	return nil
}

// indexed records key in the crawl's index of pages, writing the index
// every indexEvery new pages.
func (c *crawl) indexed(ctx context.Context, key string) error {
	if c.index[key] {
		return nil
	}
	c.index[key] = true
	c.indexDue = true
	if c.added++; c.added%indexEvery == 0 {
		if err := c.saveIndex(ctx); err != nil {
			return err
		}
	}
	return nil
}

// miss counts one more consecutive pass in which a known page was gone,
// and tombstones it at tombstone_after.
func (c *crawl) miss(ctx context.Context, key string, st pageState, reason error) error {
	st.Misses++
	if st.Misses < c.s.cfg.TombstoneAfter {
		c.pass.Fail(idOf(key, st), fmt.Errorf("%w (gone %d of %d passes before it is tombstoned)", reason, st.Misses, c.s.cfg.TombstoneAfter))
		return c.saveState(ctx, key, st)
	}
	if err := c.pass.Delete(ctx, idOf(key, st)); err != nil {
		return fmt.Errorf("tombstone %s: %w", key, err)
	}
	c.s.log.Info("url.tombstoned", "url", key, "misses", st.Misses, "reason", reason.Error())
	if err := c.pass.SetCursor(ctx, pagePrefix+key, ""); err != nil {
		return err
	}
	delete(c.index, key)
	c.indexDue = true
	return nil
}

// item turns a fetched page into an item and returns the in-scope links to
// follow and its external id. A PDF, DOCX or ODT is read under the
// installation's extract: limits into sections (no links to follow); the
// error says why one could not be read.
func (c *crawl) item(ctx context.Context, resp *response) (ingestd.Item, []*url.URL, string, error) {
	final := canonical(resp.URL)
	id := final.String()
	if resp.Rich != rich.Unknown {
		item, err := c.document(ctx, resp, final)
		return item, nil, id, err
	}
	pg := extract(resp)
	title := pg.Title
	if title == "" {
		title = id
	}
	item := ingestd.Item{
		ExternalID: id,
		ItemKind:   "page",
		URI:        id,
		Title:      title,
		Format:     pg.Format,
		Text:       pg.Text,
		Meta:       map[string]string{"content_type": resp.MediaType},
	}
	if t, err := http.ParseTime(resp.Validators.LastModified); err == nil {
		item.UpdatedAt = t.UTC()
	}
	seen := map[string]bool{id: true}
	for _, l := range pg.Links {
		k := l.String()
		if seen[k] {
			continue
		}
		seen[k] = true
		if ok, _ := c.s.site.allows(l); ok {
			item.Links = append(item.Links, ingestd.ItemLink{ToExternalID: k, Relation: "link"})
		}
	}
	var follow []*url.URL
	fseen := map[string]bool{id: true}
	for _, l := range pg.Follow {
		k := l.String()
		if fseen[k] {
			continue
		}
		fseen[k] = true
		if ok, _ := c.s.site.allows(l); ok {
			follow = append(follow, l)
		}
	}
	return item, follow, id, nil
}

// document reads a PDF, DOCX or ODT response as an item whose sections
// carry their pages or heading paths. Its title is the document's own,
// else the last element of its URL's path.
func (c *crawl) document(ctx context.Context, resp *response, final *url.URL) (ingestd.Item, error) {
	id := final.String()
	doc, err := c.s.cfg.Extract.Read(ctx, resp.Body, resp.Rich, c.s.cfg.MaxBytes)
	if err != nil {
		return ingestd.Item{}, fmt.Errorf("%s: %w", final.Redacted(), err)
	}
	title := doc.Title
	if title == "" {
		title = id
		if b := path.Base(final.Path); b != "/" && b != "." {
			title = b
		}
	}
	item := ingestd.Item{
		ExternalID: id,
		ItemKind:   "page",
		URI:        id,
		Title:      title,
		Author:     doc.Author,
		Format:     ingestd.FormatMarkdown,
		Sections:   doc.ItemSections(),
		Meta:       map[string]string{"content_type": resp.MediaType},
	}
	doc.Describe(item.Meta)
	if t, err := http.ParseTime(resp.Validators.LastModified); err == nil {
		item.UpdatedAt = t.UTC()
	}
	return item, nil
}

func (c *crawl) parseAll(raw []string) []*url.URL {
	out := make([]*url.URL, 0, len(raw))
	for _, r := range raw {
		if u, err := url.Parse(r); err == nil {
			out = append(out, u)
		}
	}
	return out
}

func idOf(key string, st pageState) string {
	if st.ID != "" {
		return st.ID
	}
	return key
}

func (c *crawl) state(ctx context.Context, key string) (pageState, bool, error) {
	var st pageState
	raw, err := c.pass.Cursor(ctx, pagePrefix+key)
	if err != nil {
		return st, false, fmt.Errorf("read state of %s: %w", key, err)
	}
	if raw == "" {
		return st, false, nil
	}
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		c.s.log.Warn("url.bad_state", "url", key, "error", err.Error())
		return pageState{}, false, nil // refetch unconditionally; Put of unchanged text writes nothing
	}
	return st, st.ID != "", nil
}

func (c *crawl) saveState(ctx context.Context, key string, st pageState) error {
	b, _ := json.Marshal(st) // strings and ints: cannot fail
	if err := c.pass.SetCursor(ctx, pagePrefix+key, string(b)); err != nil {
		return fmt.Errorf("save state of %s: %w", key, err)
	}
	return nil
}

func (c *crawl) loadIndex(ctx context.Context) error {
	raw, err := c.pass.Cursor(ctx, indexKey)
	if err != nil {
		return fmt.Errorf("read page index: %w", err)
	}
	if raw == "" {
		return nil
	}
	var keys []string
	if err := json.Unmarshal([]byte(raw), &keys); err != nil {
		c.s.log.Warn("url.bad_index", "error", err.Error())
		return nil
	}
	for _, k := range keys {
		c.index[k] = true
	}
	return nil
}

func (c *crawl) saveIndex(ctx context.Context) error {
	if !c.indexDue {
		return nil
	}
	keys := make([]string, 0, len(c.index))
	for k := range c.index {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b, _ := json.Marshal(keys)
	if err := c.pass.SetCursor(ctx, indexKey, string(b)); err != nil {
		return fmt.Errorf("save page index: %w", err)
	}
	c.indexDue = false
	return nil
}

// robotsAllow reports whether robots.txt lets robotsAgent fetch u. A
// robots.txt that is missing (4xx) allows everything, one that answers 5xx
// disallows everything (RFC 9309); one that cannot be fetched at all is an
// error, so the reason (a guard refusal, a timeout) is not hidden. An
// unparseable robots.txt allows everything. Crawl-delay slows the host.
func (c *crawl) robotsAllow(ctx context.Context, u *url.URL) (bool, error) {
	origin := u.Scheme + "://" + u.Host
	data, ok := c.robots[origin]
	if !ok {
		ru := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}
		resp, err := c.s.fetch.get(ctx, ru, c.within, validators{}, accept{})
		var se *statusError
		switch {
		case errors.As(err, &se):
			data, _ = robotstxt.FromStatusAndBytes(se.Status, nil)
		case err != nil:
			if re, ok := IsRefused(err); ok {
				return false, re // the page itself would be refused alike
			}
			return false, fmt.Errorf("robots.txt: %w", err)
		case resp.Status == http.StatusNotModified:
			data, _ = robotstxt.FromStatusAndBytes(http.StatusNotFound, nil)
		default:
			data, err = robotstxt.FromBytes(resp.Body)
			if err != nil {
				c.s.log.Warn("url.robots_unparseable", "url", ru.String(), "error", err.Error())
				data, _ = robotstxt.FromStatusAndBytes(http.StatusNotFound, nil)
			}
		}
		if data == nil { // a status robotstxt does not know (1xx, 3xx after 5 redirects)
			data, _ = robotstxt.FromStatusAndBytes(http.StatusNotFound, nil)
		}
		c.robots[origin] = data
		if g := data.FindGroup(robotsAgent); g != nil {
			c.s.fetch.slowDown(u.Host, g.CrawlDelay)
		}
	}
	path := u.EscapedPath()
	if u.RawQuery != "" {
		path += "?" + u.RawQuery
	}
	return data.TestAgent(path, robotsAgent), nil
}

// sitemapTypes are the content types a sitemap may have.
var sitemapTypes = []string{"application/xml", "text/xml", "text/plain"}

type sitemapDoc struct {
	URLs     []sitemapLoc `xml:"url"`
	Sitemaps []sitemapLoc `xml:"sitemap"`
}

type sitemapLoc struct {
	Loc string `xml:"loc"`
}

// sitemap returns the page URLs of the configured sitemap on its own
// host, following a sitemap index one level, at most max_pages of them. A
// sitemap that cannot be read is reported with Pass.Fail and the pass
// goes on with the configured URLs.
func (c *crawl) sitemap(ctx context.Context) []*url.URL {
	root, err := url.Parse(c.s.cfg.Sitemap)
	if err != nil {
		return nil
	}
	root = canonical(root)
	var out []*url.URL
	seen := map[string]bool{}
	var read func(u *url.URL, level int)
	read = func(u *url.URL, level int) {
		resp, err := c.s.fetch.get(ctx, u, c.within, validators{}, accept{types: sitemapTypes})
		if err != nil {
			c.pass.Fail(u.String(), fmt.Errorf("sitemap: %w", err))
			c.partial = true
			return
		}
		var doc sitemapDoc
		if resp.MediaType == "text/plain" {
			for _, line := range strings.Split(decode(resp.Body, resp.ContentType), "\n") {
				if line = strings.TrimSpace(line); line != "" {
					doc.URLs = append(doc.URLs, sitemapLoc{Loc: line})
				}
			}
		} else if err := xml.Unmarshal(resp.Body, &doc); err != nil {
			c.pass.Fail(u.String(), fmt.Errorf("sitemap %s: %w", u, err))
			c.partial = true
			return
		}
		for _, sm := range doc.Sitemaps {
			if level > 0 {
				break
			}
			if su := resolve(u, sm.Loc); su != nil && su.Host == root.Host && !seen[su.String()] {
				seen[su.String()] = true
				read(su, level+1)
			}
		}
		for _, e := range doc.URLs {
			if len(out) >= c.s.cfg.Crawl.MaxPages {
				return
			}
			pu := resolve(u, e.Loc)
			if pu == nil || pu.Host != root.Host || seen[pu.String()] {
				continue
			}
			seen[pu.String()] = true
			out = append(out, pu)
		}
	}
	read(root, 0)
	return out
}
