package web

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// scope says which URLs belong to an installation: those on one of its
// sites that match an include pattern (when there are any) and no exclude
// pattern.
//
// A site is an origin, scheme://host[:port], taken from the configured
// URLs and sitemap in canonical form (host lower case, IDNA-mapped,
// without a trailing dot or a default port). A site configured as http
// also takes the https pages of the same host and port (an upgrade); one
// configured as https never takes http (a downgrade would let anyone on
// the path write into the installation). Another port, another host name
// or another scheme is another site.
//
// A pattern is matched against the URL's path, or against the whole URL
// when it starts with http:// or https://. A pattern with a glob
// metacharacter (* ? [ {) is a glob in which * stays within one path
// segment and ** spans segments ("/blog/**/*.html"); any other pattern is
// a prefix ("/docs/" takes /docs/ and everything under it).
type scope struct {
	inst    string          // the installation, named in refusals
	origins map[string]bool // scheme://host[:port], canonical
	include []string
	exclude []string
	// anywhere admits every site the guard lets through: the scope of a
	// URL submitted to an untrusted-external installation.
	anywhere bool
}

func newScope(inst string, include, exclude []string) (*scope, error) {
	for _, p := range append(append([]string(nil), include...), exclude...) {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("empty crawl pattern")
		}
		if isGlob(p) && !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("crawl pattern %q is not a valid glob", p)
		}
	}
	return &scope{inst: inst, origins: map[string]bool{}, include: include, exclude: exclude}, nil
}

// anywhereFor is the scope of a page submitted to an untrusted-external
// installation: any site, with inst's patterns.
func (s *scope) anywhereFor() *scope {
	c := *s
	c.anywhere = true
	return &c
}

func (s *scope) addSite(u *url.URL) {
	c := canonical(u)
	s.origins[c.Scheme+"://"+c.Host] = true
	if c.Scheme == "http" {
		s.origins["https://"+c.Host] = true
	}
}

// onSite reports whether u is on one of the installation's sites.
func (s *scope) onSite(u *url.URL) bool { return s.site(u) == "" }

// site returns "" when u is on one of the installation's sites, or the
// rule that keeps it off: "downgrade" for http on a host the installation
// reaches over https, "site" for anything else.
func (s *scope) site(u *url.URL) string {
	if s.anywhere {
		return ""
	}
	c := canonical(u)
	switch {
	case s.origins[c.Scheme+"://"+c.Host]:
		return ""
	case c.Scheme == "http" && s.origins["https://"+c.Host]:
		return "downgrade"
	default:
		return "site"
	}
}

// refuse explains why u is off the sites; what says where u came from
// ("redirect 2 of https://docs.example.com/a goes to"). It returns nil
// when u is on a site.
func (s *scope) refuse(u *url.URL, what string) *RefusedError {
	rule := s.site(u)
	if rule == "" {
		return nil
	}
	target := canonical(u).String()
	subject := target
	if what != "" {
		subject = what + " " + target + ", which"
	}
	reason := fmt.Sprintf("%s is not on a site of installation %q (%s); only an untrusted-external installation takes pages from anywhere", subject, s.inst, strings.Join(s.sites(), ", "))
	if rule == "downgrade" {
		reason = fmt.Sprintf("%s is plain http on a site installation %q reaches over https", subject, s.inst)
	}
	return &RefusedError{Target: target, Rule: rule, Reason: reason}
}

// sites lists the origins, sorted.
func (s *scope) sites() []string {
	out := make([]string, 0, len(s.origins))
	for o := range s.origins {
		out = append(out, o)
	}
	slices.Sort(out)
	return out
}

// allows reports whether u is on a site and passes the patterns; when not,
// it says why.
func (s *scope) allows(u *url.URL) (bool, string) {
	if !s.onSite(u) {
		return false, "not on the installation's sites"
	}
	if len(s.include) > 0 && !matchAny(s.include, u) {
		return false, "matches no crawl.include pattern"
	}
	if matchAny(s.exclude, u) {
		return false, "matches a crawl.exclude pattern"
	}
	return true, ""
}

func matchAny(patterns []string, u *url.URL) bool {
	for _, p := range patterns {
		if match(p, u) {
			return true
		}
	}
	return false
}

func match(p string, u *url.URL) bool {
	subject := u.EscapedPath()
	if strings.HasPrefix(p, "http://") || strings.HasPrefix(p, "https://") {
		subject = u.String()
	}
	if isGlob(p) {
		ok, _ := doublestar.Match(p, subject)
		return ok
	}
	return strings.HasPrefix(subject, p)
}

func isGlob(p string) bool { return strings.ContainsAny(p, "*?[{") }
