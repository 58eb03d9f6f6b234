package github_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/github"
)

// fuzzLists are the listings a pass pages through, by the kind byte of
// FuzzSyncPages.
var fuzzLists = []string{"/repos/o/r/issues", "/repos/o/r/issues/comments", "/repos/o/r/pulls/comments"}

// FuzzSyncPages runs a full pass of one repository whose issues, issue
// comments or review comments listing answers with the fuzzer's page and
// Link header ("SITE" stands for the API's origin; the fake API ignores
// queries, so every page of that path is the same page). Properties: the
// pass returns no error (a page that cannot be decoded, or a Link back to
// a page already read, is the repository's failure, reported with Fail,
// never the pass's); no listing is paged endlessly; every stored item
// belongs to the repository, has a known kind and valid UTF-8 title and
// text, and every link names a target. Seeds: the recorded listings in
// testdata/github-api with their Link headers.
func FuzzSyncPages(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(apiDir, "github3py.*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no recordings in %s: %v", apiDir, err)
	}
	for _, p := range files {
		r := MustRecording(f, filepath.Base(p))
		kind := uint8(0)
		switch {
		case strings.Contains(p, "review_comments"):
			kind = 2
		case strings.Contains(p, "comments"):
			kind = 1
		}
		f.Add(kind, []byte(r.Body), strings.ReplaceAll(r.Headers["Link"], "https://api.github.com", "SITE"))
	}
	f.Add(uint8(0), []byte(`[{"number":1,"title":"t","body":"see #2 and o/r#3","pull_request":{"merged_at":null},"state":"closed"},{}]`), `<SITE/repos/o/r/issues?page=2>; rel="next"`)
	f.Add(uint8(1), []byte(`[{"id":5,"issue_url":"https://api.github.com/repos/o/r/issues/x","body":"\u0000"}]`), "")
	f.Add(uint8(2), []byte(`{"message":"Bad credentials"}`), `<SITE/repos/o/r/pulls/comments>; rel="next"`)
	f.Add(uint8(0), []byte(`[null, 1, "x", {"number":-1,"updated_at":"0000-01-01T00:00:00Z"}]`), "<http://127.0.0.1:1/>; rel=next")

	api := MustFakeAPI(f)
	// A Link may name any host: only the fake API answers, so a run never
	// waits on a connection to elsewhere.
	onlyAPI := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != api.Listener.Addr().String() {
			return nil, fmt.Errorf("dial %s: only the fake API is reachable", addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}}
	api.setJSON(f, "/repos/o/r", `"repo"`, map[string]any{"full_name": "o/r", "default_branch": "main", "html_url": "https://github.com/o/r"})
	f.Fuzz(func(t *testing.T, kind uint8, body []byte, link string) {
		if !httpguts.ValidHeaderFieldValue(link) {
			return // the client refuses the response, and retries: a transport error, not a page
		}
		list := fuzzLists[int(kind)%len(fuzzLists)]
		for _, l := range fuzzLists {
			api.set(l, http.StatusOK, map[string]string{"Content-Type": "application/json"}, []byte("[]"))
		}
		api.set(list, http.StatusOK, map[string]string{"Content-Type": "application/json", "Link": strings.ReplaceAll(link, "SITE", api.URL)}, body)
		served := map[string]int{}
		api.before = func(w http.ResponseWriter, r *http.Request) bool {
			// The same page (and Link) up to 4 times, then an empty one,
			// so that a pass that follows a Link cycle ends here and
			// fails the request count below.
			if served[r.URL.Path]++; served[r.URL.Path] > 4 {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte("[]"))
				return true
			}
			return false
		}
		api.Requests()

		clock := &fakeClock{now: t0}
		src, err := github.NewSource("gh", github.Config{Repos: []string{"o/r"}, Include: github.Include{Docs: no()}, BaseURL: api.URL + "/"},
			github.Options{Token: "t0k", Now: clock.Now, Sleep: clock.Sleep, HTTPClient: onlyAPI})
		if err != nil {
			t.Fatal(err)
		}
		pass := connectortest.New(nil)
		if err := src.Sync(context.Background(), pass); err != nil {
			t.Fatalf("Sync: %v", err)
		}
		kinds := map[string]bool{github.KindIssue: true, github.KindPullRequest: true, github.KindComment: true, github.KindReviewComment: true}
		for _, it := range pass.Puts() {
			if !strings.HasPrefix(it.ExternalID, "o/r#") {
				t.Fatalf("stored %q, not an item of o/r", it.ExternalID)
			}
			if !kinds[it.ItemKind] {
				t.Fatalf("%s: kind %q", it.ExternalID, it.ItemKind)
			}
			if !utf8.ValidString(it.Title) || !utf8.ValidString(it.Text) {
				t.Fatalf("%s: title or text not valid UTF-8", it.ExternalID)
			}
			for _, l := range it.Links {
				if l.ToExternalID == "" {
					t.Fatalf("%s: a link without a target: %+v", it.ExternalID, l)
				}
			}
		}
		for path, n := range served {
			if n > 2 { // its first page, and once more when a Link leads back to it
				t.Fatalf("%s requested %d times in one pass: a Link cycle is followed", path, n)
			}
		}
	})
}
