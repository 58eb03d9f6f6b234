package web

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// scope says which URLs belong to an installation: those on one of its
// sites (the hosts of its configured URLs and sitemap, http or https)
// that match an include pattern (when there are any) and no exclude
// pattern.
//
// A pattern is matched against the URL's path, or against the whole URL
// when it starts with http:// or https://. A pattern with a glob
// metacharacter (* ? [ {) is a glob in which * stays within one path
// segment and ** spans segments ("/blog/**/*.html"); any other pattern is
// a prefix ("/docs/" takes /docs/ and everything under it).
type scope struct {
	hosts   map[string]bool
	include []string
	exclude []string
}

func newScope(include, exclude []string) (*scope, error) {
	for _, p := range append(append([]string(nil), include...), exclude...) {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("empty crawl pattern")
		}
		if isGlob(p) && !doublestar.ValidatePattern(p) {
			return nil, fmt.Errorf("crawl pattern %q is not a valid glob", p)
		}
	}
	return &scope{hosts: map[string]bool{}, include: include, exclude: exclude}, nil
}

func (s *scope) addSite(u *url.URL) { s.hosts[u.Host] = true }

// onSite reports whether u is on one of the installation's sites.
func (s *scope) onSite(u *url.URL) bool { return s.hosts[u.Host] }

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
