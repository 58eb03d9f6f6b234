package web

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"codeberg.org/readeck/go-readability/v2/render"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"
	"golang.org/x/net/idna"

	"github.com/ingestd/ingestd"
)

// page is the readable content of one fetched response.
type page struct {
	Title  string
	Text   string
	Format string
	// Links are the absolute URLs the readable content links to (graph
	// links, before scoping).
	Links []*url.URL
	// Follow are the absolute URLs of every followable link on the page,
	// navigation included (the crawl frontier, before scoping). Links
	// marked rel=nofollow are left out.
	Follow []*url.URL
}

// extract decodes the body from its charset and turns it into readable
// text: HTML through readability (boilerplate such as navigation, footers
// and ads dropped) with its title; markdown and plain text as they are.
func extract(resp *response) page {
	text := decode(resp.Body, resp.ContentType)
	switch resp.MediaType {
	case "text/html", "application/xhtml+xml":
		return extractHTML(text, resp.URL)
	case "text/markdown", "text/x-markdown":
		p := page{Text: strings.TrimSpace(text), Format: ingestd.FormatMarkdown, Title: markdownTitle(text)}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			if u := resolve(resp.URL, m[1]); u != nil {
				p.Links = append(p.Links, u)
				p.Follow = append(p.Follow, u)
			}
		}
		return p
	default:
		return page{Text: strings.TrimSpace(text), Format: ingestd.FormatPlain}
	}
}

// decode returns body as UTF-8: the charset named by the Content-Type, else
// a byte-order mark, else an HTML meta charset, else UTF-8 when the bytes
// are valid UTF-8, else windows-1252 (what browsers assume). Bytes invalid
// in the chosen charset become U+FFFD. (A UTF-8 guess is made from the
// first 1024 bytes and decodes with encoding.Nop, which checks nothing.)
func decode(body []byte, contentType string) string {
	enc, _, _ := charset.DetermineEncoding(body, contentType)
	out, err := enc.NewDecoder().Bytes(body)
	if err != nil {
		out = body
	}
	return strings.ToValidUTF8(string(out), "\uFFFD")
}

func extractHTML(text string, pageURL *url.URL) page {
	p := page{Format: ingestd.FormatPlain}
	doc, err := html.Parse(strings.NewReader(text))
	if err != nil { // html.Parse only fails on reader errors
		p.Text = strings.TrimSpace(text)
		return p
	}
	base := pageURL
	var title string
	walk(doc, func(n *html.Node) {
		switch n.DataAtom {
		case atom.Base:
			if h := attr(n, "href"); h != "" && base == pageURL {
				if b := resolve(pageURL, h); b != nil {
					base = b
				}
			}
		case atom.Title:
			if title == "" {
				title = strings.TrimSpace(textOf(n))
			}
		case atom.A, atom.Area:
			if strings.Contains(strings.ToLower(attr(n, "rel")), "nofollow") {
				return
			}
			if u := resolve(base, attr(n, "href")); u != nil {
				p.Follow = append(p.Follow, u)
			}
		}
	})

	article, err := readability.FromDocument(doc, base)
	content := article.Node
	if err != nil || content == nil {
		content = findBody(doc)
	}
	if t := strings.TrimSpace(article.Title()); t != "" {
		title = t
	}
	p.Title = collapseSpace(title)
	if content != nil {
		p.Text = tidy(render.InnerText(content))
		walk(content, func(n *html.Node) {
			if n.DataAtom == atom.A {
				if u := resolve(base, attr(n, "href")); u != nil {
					p.Links = append(p.Links, u)
				}
			}
		})
	}
	return p
}

var (
	mdLink    = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	blankRuns = regexp.MustCompile(`\n[ \t]*\n(?:[ \t]*\n)+`)
)

// markdownTitle is the first ATX level-1 heading, or "".
func markdownTitle(text string) string {
	for _, line := range strings.Split(text, "\n") {
		if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok {
			return strings.TrimSpace(t)
		}
	}
	return ""
}

// tidy trims lines' trailing space and collapses runs of blank lines.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\u00a0")
	}
	s = strings.Join(lines, "\n")
	return strings.TrimSpace(blankRuns.ReplaceAllString(s, "\n\n"))
}

func collapseSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func walk(n *html.Node, fn func(*html.Node)) {
	if n.Type == html.ElementNode {
		fn(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && strings.EqualFold(a.Key, key) {
			return strings.TrimSpace(a.Val)
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b bytes.Buffer
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(n)
	return b.String()
}

func findBody(doc *html.Node) *html.Node {
	var body *html.Node
	walk(doc, func(n *html.Node) {
		if body == nil && n.DataAtom == atom.Body {
			body = n
		}
	})
	return body
}

// resolve returns ref resolved against base as a canonical http(s) URL, or
// nil for an empty, unparseable or non-http(s) reference (mailto:,
// javascript:, data:) and for one that names no host ("https:/:x",
// "https:x", "http:///path": a scheme makes it absolute, so the base's
// host does not fill it in).
func resolve(base *url.URL, ref string) *url.URL {
	ref = strings.TrimSpace(ref)
	if ref == "" || strings.HasPrefix(ref, "#") {
		return nil
	}
	r, err := url.Parse(ref)
	if err != nil {
		return nil
	}
	u := base.ResolveReference(r)
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil
	}
	return canonical(u)
}

// canonical returns the form of u used as a page's external id and to
// tell its site: scheme and host lower case, a host name IDNA-mapped to
// ASCII (as the HTTP client sends it) and without a trailing dot, default
// port dropped, no credentials, no fragment, an empty path as "/", dot
// segments resolved. The query is kept as sent.
func canonical(u *url.URL) *url.URL {
	c := *u
	c.Scheme = strings.ToLower(c.Scheme)
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	c.ForceQuery = false
	host := canonicalHost(c.Hostname())
	port := c.Port()
	if (c.Scheme == "http" && port == "80") || (c.Scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	c.Host = host
	if c.Path == "" && c.RawPath == "" {
		c.Path = "/"
	}
	if c.Opaque != "" {
		return &c
	}
	return c.ResolveReference(&url.URL{Path: c.Path, RawPath: c.RawPath, RawQuery: c.RawQuery})
}

// canonicalHost is a URL host (without port or brackets) as one name:
// lower case, a non-ASCII name mapped to its ASCII (punycode) form, one
// trailing dot dropped. A name IDNA cannot map is kept lower case; the
// guard and the HTTP client refuse it.
func canonicalHost(h string) string {
	if !isASCII(h) {
		if a, err := idna.Lookup.ToASCII(h); err == nil {
			h = a
		}
	}
	h = strings.ToLower(h)
	if len(h) > 1 {
		h = strings.TrimSuffix(h, ".")
	}
	return h
}
