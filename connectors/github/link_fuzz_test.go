package github

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzNextLink reads arbitrary Link headers. Properties: no panic; a next
// URL is the text between the angle brackets of a link-value that says
// next, so "<URL>" occurs in the header; the API resolves it without a
// panic. Seeds: every Link header of the recordings in testdata.
func FuzzNextLink(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "github-api", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no recordings in testdata/github-api: %v", err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			f.Fatalf("%s: %v", p, err)
		}
		for _, h := range linkHeaders(v) {
			f.Add(h)
		}
	}
	for _, s := range []string{
		"", "<>; rel=next", `<a>; rel="prev next"`, `<a>;rel=next,<b>; rel="next"`, "<a, b>; rel=next", `< x >; REL = "next"`,
		"<https://api.github.com/x?page=2>; rel=\"next\"; title=\"a;b,c\"", "<<a>>; rel=next", "<\x00>; rel=next", "<a>; rel", ";;,,<",
	} {
		f.Add(s)
	}
	a := &api{}
	a.base, _ = a.base.Parse("https://api.github.com/")
	f.Fuzz(func(t *testing.T, h string) {
		next := nextLink(h)
		if next == "" {
			return
		}
		if !strings.Contains(h, "<"+next+">") {
			t.Fatalf("nextLink(%q) = %q, not the text between brackets", h, next)
		}
		found := false
		for _, part := range strings.Split(h, ",") {
			if strings.Contains(part, "<"+next+">") && strings.Contains(strings.ToLower(part), "next") {
				found = true
			}
		}
		if !found {
			t.Fatalf("nextLink(%q) = %q, but no link-value with it says next", h, next)
		}
		_, _ = a.resolve(next)
	})
}

// linkHeaders returns the values of every "Link" key (any case) in a
// decoded JSON recording.
func linkHeaders(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && strings.EqualFold(k, "link") {
				out = append(out, s)
			}
			out = append(out, linkHeaders(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, linkHeaders(x)...)
		}
	}
	return out
}
