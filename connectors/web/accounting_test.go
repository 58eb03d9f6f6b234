package web

import (
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
)

// TestUnchangedPagesAreCounted: a page that answers 304 is reported
// unchanged (seen, as many as the pass expected), and a pass that saw
// every page it knows says so (Whole), the first pass as much as the
// second; a pass stopped by max_pages does not.
func TestUnchangedPagesAreCounted(t *testing.T) {
	site := MustSite(t, map[string]sitePage{
		"/":  htmlPage("Home", `<p>Welcome. <a href="/a">A</a></p>`),
		"/a": htmlPage("A", "<p>page a</p>"),
	})
	src := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{site.URL + "/"}, Crawl: CrawlConfig{Depth: 1}, AllowPrivateNetworks: true}, nil)
	p1 := newPass(nil)
	MustSync(t, src, p1)
	if !p1.IsWhole() {
		t.Errorf("first pass saw every page but is not whole")
	}
	p2 := p1.Next()
	MustSync(t, src, p2)
	got := p2.UnchangedIDs()
	slices.Sort(got)
	if want := []string{site.URL + "/", site.URL + "/a"}; !slices.Equal(got, want) {
		t.Errorf("second pass unchanged %v, want %v", got, want)
	}
	if p2.Seen() != 2 || p2.LastTotal() > p2.Seen() {
		t.Errorf("second pass seen %d, expected %d: want 2 seen, none missing", p2.Seen(), p2.LastTotal())
	}
	if !p2.IsWhole() {
		t.Errorf("second pass saw every page (as 304s) but is not whole")
	}

	capped := MustSource(t, ingestd.TierTrustedInternal, Config{URLs: []string{site.URL + "/"}, Crawl: CrawlConfig{Depth: 1, MaxPages: 1}, AllowPrivateNetworks: true}, nil)
	p3 := newPass(nil)
	MustSync(t, capped, p3)
	if p3.IsWhole() {
		t.Errorf("a pass stopped by max_pages says it saw every page")
	}
}
