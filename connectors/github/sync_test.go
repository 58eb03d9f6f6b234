package github_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/github"
)

var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func MustSource(tb testing.TB, f *fakeAPI, clock *fakeClock, cfg github.Config) *github.Source {
	tb.Helper()
	cfg.BaseURL = f.URL + "/"
	src, err := github.NewSource("gh", cfg, github.Options{Token: "t0k", Now: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

func no() *bool { b := false; return &b }

// betamaxAPI serves the recorded betamax listing: the repo lookup that
// answers 301 (the repo moved to betamaxpy), then two Link-paginated pages
// of 150 issues, 67 of them pull requests.
func betamaxAPI(t *testing.T) *fakeAPI {
	f := MustFakeAPI(t)
	for i := 0; i < 4; i++ {
		f.record(t, "github3py.Repository_issues_state_all."+strconv.Itoa(i)+".json")
	}
	f.setJSON(t, "/repos/betamaxpy/betamax/issues/comments", `W/"c0"`, []any{})
	f.setJSON(t, "/repos/betamaxpy/betamax/pulls/comments", `W/"r0"`, []any{})
	return f
}

func TestSyncFullThenIncremental(t *testing.T) {
	f := betamaxAPI(t)
	clock := &fakeClock{now: t0}
	src := MustSource(t, f, clock, github.Config{Repos: []string{"sigmavirus24/betamax"}, Include: github.Include{Docs: no()}})
	pass := connectortest.New(nil)
	ctx := context.Background()

	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	if len(pass.Fails()) > 0 {
		t.Fatalf("fails: %v", pass.Fails())
	}
	items := byID(pass)
	if got, want := len(items), 150; got != want {
		t.Fatalf("items = %d, want %d", got, want)
	}
	kinds := map[string]int{}
	for _, it := range items {
		kinds[it.ItemKind]++
		if !strings.HasPrefix(it.ExternalID, "betamaxpy/betamax#") {
			t.Errorf("external id %q is not under the canonical repo", it.ExternalID)
		}
		if it.Meta[github.MetaAuthorAssociation] == "" {
			t.Errorf("%s: no author_association in Meta", it.ExternalID)
		}
		if it.Tier != "" {
			t.Errorf("%s: connector set tier %q", it.ExternalID, it.Tier)
		}
	}
	if got, want := kinds[github.KindPullRequest], 67; got != want {
		t.Errorf("pull requests = %d, want %d", got, want)
	}
	if !pass.Completed() {
		t.Error("first (full) pass did not call Complete")
	}
	reqs := f.Requests()
	var paths []string
	for _, r := range reqs {
		paths = append(paths, r.Path)
		if r.Auth != "Bearer t0k" {
			t.Errorf("%s sent Authorization %q", r.Path, r.Auth)
		}
	}
	for _, want := range []string{"/repos/sigmavirus24/betamax", "/repositories/11439734", "/repos/betamaxpy/betamax/issues", "/repositories/11439734/issues"} {
		if !containsString(paths, want) {
			t.Errorf("no request to %s (requests: %v)", want, paths)
		}
	}
	for _, r := range reqs {
		if r.Path == "/repositories/11439734/issues" && !strings.Contains(r.Query, "page=2") {
			t.Errorf("page 2 not taken from the Link header: %s?%s", r.Path, r.Query)
		}
	}

	// Second pass: nothing changed at the source.
	pass.Next()
	clock.now = clock.now.Add(10 * time.Minute)
	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	if len(pass.Puts()) != 0 || len(pass.Deletes()) != 0 {
		t.Errorf("incremental pass wrote %d puts, %d deletes; want none", len(pass.Puts()), len(pass.Deletes()))
	}
	if pass.Completed() {
		t.Error("incremental pass called Complete")
	}
	var sawIssues bool
	for _, r := range f.Requests() {
		if r.Path != "/repos/betamaxpy/betamax/issues" {
			continue
		}
		sawIssues = true
		if got, want := r.IfNoneMatch, `W/"5fe7271d508a8502ffec5e506c87996c"`; got != want {
			t.Errorf("If-None-Match = %q, want %q", got, want)
		}
		if !strings.Contains(r.Query, "since=2017-12-20T08%3A29%3A30Z") {
			t.Errorf("query %q has no since cursor", r.Query)
		}
	}
	if !sawIssues {
		t.Error("incremental pass did not list issues")
	}
}

func TestSyncEditUpdatesAndBoundarySkipped(t *testing.T) {
	f := MustFakeAPI(t)
	f.setJSON(t, "/repos/o/r", `"repo"`, map[string]any{"full_name": "o/r", "default_branch": "main", "html_url": "https://github.com/o/r"})
	issue := func(n int, body, updated string) map[string]any {
		return map[string]any{"number": n, "title": "t" + strconv.Itoa(n), "body": body, "state": "open", "author_association": "NONE",
			"html_url": "https://github.com/o/r/issues/" + strconv.Itoa(n), "updated_at": updated, "created_at": "2024-01-01T00:00:00Z", "user": map[string]any{"login": "x"}}
	}
	f.setJSON(t, "/repos/o/r/issues", `"a"`, []any{issue(1, "one", "2024-01-02T00:00:00Z"), issue(2, "two", "2024-01-03T00:00:00Z")})
	clock := &fakeClock{now: t0}
	src := MustSource(t, f, clock, github.Config{Repos: []string{"o/r"}, Include: github.Include{Docs: no(), IssueComments: no(), ReviewComments: no()}})
	pass := connectortest.New(nil)
	ctx := context.Background()
	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	// The source now returns the boundary item again (since is
	// inclusive) plus an edit of #1.
	f.setJSON(t, "/repos/o/r/issues", `"b"`, []any{issue(2, "two", "2024-01-03T00:00:00Z"), issue(1, "one, edited", "2024-01-04T00:00:00Z")})
	pass.Next()
	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	if got, want := len(pass.Puts()), 1; got != want {
		t.Fatalf("puts = %d, want %d (%v)", got, want, pass.PutIDs())
	}
	if got, want := pass.Puts()[0].Text, "t1\n\none, edited"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

func TestSyncCommentsAndDocs(t *testing.T) {
	f := MustFakeAPI(t)
	repo := MustRecording(t, "github3py.Repository_issue.0.json")
	f.set("/repos/sigmavirus24/github3.py", repo.Status, repo.Headers, repo.Body)
	issue := MustRecording(t, "github3py.Repository_issue.1.json")
	f.set("/repos/sigmavirus24/github3.py/issues", 200, map[string]string{"ETag": `W/"i"`}, []byte("["+string(issue.Body)+"]"))
	ic := MustRecording(t, "github3py.Issue_comments.1.json")
	pc := MustRecording(t, "github3py.PullRequest_issue_comments.1.json")
	both := strings.TrimSuffix(string(ic.Body), "]") + "," + strings.TrimPrefix(string(pc.Body), "[")
	f.set("/repos/sigmavirus24/github3.py/issues/comments", 200, ic.Headers, []byte(both))
	rc := MustRecording(t, "github3py.PullRequest_review_comments.1.json")
	f.set("/repos/sigmavirus24/github3.py/pulls/comments", 200, rc.Headers, rc.Body)

	tree := func(etag string, paths ...string) {
		var entries []map[string]any
		for _, p := range paths {
			entries = append(entries, map[string]any{"path": p, "type": "blob", "sha": "sha-" + p, "size": 10})
			f.setJSON(t, "/repos/sigmavirus24/github3.py/git/blobs/sha-"+p, "", map[string]any{
				"sha": "sha-" + p, "encoding": "base64", "content": base64.StdEncoding.EncodeToString([]byte("# " + p + "\nSee #187.\n"))})
		}
		f.setJSON(t, "/repos/sigmavirus24/github3.py/git/trees/develop", etag, map[string]any{"tree": entries})
	}
	tree(`"t1"`, "README.md", "docs/guide.md", "docs/logo.png", "src/notes.md")

	clock := &fakeClock{now: t0}
	src := MustSource(t, f, clock, github.Config{Repos: []string{"sigmavirus24/github3.py"}})
	pass := connectortest.New(nil)
	ctx := context.Background()
	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	if len(pass.Fails()) > 0 {
		t.Fatalf("fails: %v", pass.Fails())
	}
	items := byID(pass)
	c, ok := items["sigmavirus24/github3.py#187/comment/31799031"]
	if !ok {
		t.Fatalf("no comment item; got %v", sortedKeys(items))
	}
	if got, want := c.Links[0], (ingestd.ItemLink{ToExternalID: "sigmavirus24/github3.py#187", Relation: "parent"}); got != want {
		t.Errorf("comment link = %v, want %v", got, want)
	}
	if c.ParentExternalID != "" {
		t.Errorf("comment has ParentExternalID %q: comments are not derived content", c.ParentExternalID)
	}
	if c.Meta[github.MetaAuthorAssociation] == "" {
		t.Error("comment has no author_association")
	}
	if _, ok := items["sigmavirus24/github3.py#235/comment/42106561"]; !ok {
		t.Error("no PR conversation comment")
	}
	var reviews int
	for id, it := range items {
		if it.ItemKind == github.KindReviewComment {
			reviews++
			if !strings.HasPrefix(id, "sigmavirus24/github3.py#235/review_comment/") || it.Meta["path"] == "" {
				t.Errorf("review comment %s meta %v", id, it.Meta)
			}
		}
	}
	if reviews != 3 {
		t.Errorf("review comments = %d, want 3", reviews)
	}
	for _, want := range []string{"sigmavirus24/github3.py:README.md", "sigmavirus24/github3.py:docs/guide.md"} {
		d, ok := items[want]
		if !ok {
			t.Errorf("doc %s not taken", want)
			continue
		}
		if len(d.Links) != 1 || d.Links[0].ToExternalID != "sigmavirus24/github3.py#187" || d.Links[0].Relation != "xref" {
			t.Errorf("doc %s links = %v, want one xref to #187", want, d.Links)
		}
	}
	for _, not := range []string{"sigmavirus24/github3.py:docs/logo.png", "sigmavirus24/github3.py:src/notes.md"} {
		if _, ok := items[not]; ok {
			t.Errorf("%s taken; docs_paths do not include it", not)
		}
	}

	// docs/guide.md is removed from the default branch.
	tree(`"t2"`, "README.md", "docs/logo.png")
	pass.Next()
	f.Requests()
	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(pass.Deletes(), ","), "sigmavirus24/github3.py:docs/guide.md"; got != want {
		t.Errorf("deletes = %q, want %q", got, want)
	}
	if len(pass.Puts()) != 0 {
		t.Errorf("puts = %d, want 0 (README unchanged)", len(pass.Puts()))
	}
	for _, r := range f.Requests() {
		if strings.Contains(r.Path, "/git/blobs/") {
			t.Errorf("unchanged blob fetched again: %s", r.Path)
		}
	}
}

func TestSyncWaitsForRateLimitReset(t *testing.T) {
	f := betamaxAPI(t)
	clock := &fakeClock{now: t0}
	reset := t0.Add(90 * time.Second)
	limited := 0
	f.before = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/repos/betamaxpy/betamax/issues" || limited > 0 {
			return false
		}
		limited++
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		http.Error(w, `{"message":"API rate limit exceeded"}`, http.StatusForbidden)
		return true
	}
	src := MustSource(t, f, clock, github.Config{Repos: []string{"sigmavirus24/betamax"}, Include: github.Include{Docs: no()}})
	pass := connectortest.New(nil)
	if err := src.Sync(context.Background(), pass); err != nil {
		t.Fatal(err)
	}
	if len(pass.Fails()) > 0 {
		t.Fatalf("fails: %v", pass.Fails())
	}
	if got, want := len(pass.Puts()), 150; got != want {
		t.Errorf("puts = %d, want %d", got, want)
	}
	sleeps := clock.Sleeps()
	if len(sleeps) != 1 {
		t.Fatalf("sleeps = %v, want one wait until the reset", sleeps)
	}
	if got := sleeps[0]; got < 90*time.Second || got > 92*time.Second {
		t.Errorf("waited %v, want until the reset (90s + 1s)", got)
	}
	var n int
	for _, r := range f.Requests() {
		if r.Path == "/repos/betamaxpy/betamax/issues" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("issue listing requested %d times, want 2 (limited, then after the reset)", n)
	}
}

func TestSyncRetries(t *testing.T) {
	tests := []struct {
		name       string
		answer     func(w http.ResponseWriter)
		times      int
		wantSleeps []time.Duration
		wantFail   bool
	}{
		{name: "5xx backoff", times: 2, answer: func(w http.ResponseWriter) { http.Error(w, "boom", http.StatusBadGateway) },
			wantSleeps: []time.Duration{time.Second, 2 * time.Second}},
		{name: "secondary limit Retry-After", times: 1, answer: func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "30")
			http.Error(w, `{"message":"You have exceeded a secondary rate limit"}`, http.StatusForbidden)
		}, wantSleeps: []time.Duration{30 * time.Second}},
		{name: "secondary limit without Retry-After", times: 1, answer: func(w http.ResponseWriter) {
			http.Error(w, `{"message":"You have exceeded a secondary rate limit"}`, http.StatusForbidden)
		}, wantSleeps: []time.Duration{time.Minute}},
		{name: "5xx gives up", times: 100, answer: func(w http.ResponseWriter) { http.Error(w, "boom", http.StatusServiceUnavailable) },
			wantSleeps: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}, wantFail: true},
		{name: "forbidden is not retried", times: 1, answer: func(w http.ResponseWriter) {
			http.Error(w, `{"message":"Resource not accessible"}`, http.StatusForbidden)
		},
			wantFail: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := betamaxAPI(t)
			left := tt.times
			f.before = func(w http.ResponseWriter, r *http.Request) bool {
				if r.URL.Path != "/repos/betamaxpy/betamax/issues" || left == 0 {
					return false
				}
				left--
				tt.answer(w)
				return true
			}
			clock := &fakeClock{now: t0}
			src := MustSource(t, f, clock, github.Config{Repos: []string{"sigmavirus24/betamax"}, Include: github.Include{Docs: no()}})
			pass := connectortest.New(nil)
			if err := src.Sync(context.Background(), pass); err != nil {
				t.Fatal(err)
			}
			if got, want := len(pass.Fails()) > 0, tt.wantFail; got != want {
				t.Errorf("failed = %v, want %v (%v)", got, want, pass.Fails())
			}
			if tt.wantFail && pass.Completed() {
				t.Error("a pass that could not list everything called Complete")
			}
			if got, want := clock.Sleeps(), tt.wantSleeps; !equalDurations(got, want) {
				t.Errorf("sleeps = %v, want %v", got, want)
			}
		})
	}
}

func TestSyncStatus(t *testing.T) {
	f := MustFakeAPI(t)
	f.setJSON(t, "/repos/o/r", `"repo"`, map[string]any{"full_name": "o/r", "default_branch": "main", "html_url": "https://github.com/o/r"})
	f.set("/repos/o/r/issues", 200, map[string]string{"ETag": `"x"`}, []byte(`[
 {"number":1,"title":"closed unmerged","state":"closed","author_association":"NONE","updated_at":"2024-01-01T00:00:00Z",
  "pull_request":{"url":"u","merged_at":null}},
 {"number":2,"title":"merged","state":"closed","author_association":"MEMBER","updated_at":"2024-01-01T00:00:01Z",
  "pull_request":{"url":"u","merged_at":"2024-01-01T00:00:00Z"}},
 {"number":3,"title":"old server","state":"closed","author_association":"NONE","updated_at":"2024-01-01T00:00:02Z",
  "pull_request":{"url":"u"}},
 {"number":4,"title":"won't do","state":"closed","state_reason":"not_planned","author_association":"NONE","updated_at":"2024-01-01T00:00:03Z"},
 {"number":5,"title":"done","state":"closed","state_reason":"completed","author_association":"NONE","updated_at":"2024-01-01T00:00:04Z"},
 {"number":6,"title":"back","state":"open","state_reason":"reopened","author_association":"OWNER","updated_at":"2024-01-01T00:00:05Z"}
]`))
	clock := &fakeClock{now: t0}
	src := MustSource(t, f, clock, github.Config{Repos: []string{"o/r"}, Include: github.Include{Docs: no(), IssueComments: no(), ReviewComments: no()}})
	pass := connectortest.New(nil)
	if err := src.Sync(context.Background(), pass); err != nil {
		t.Fatal(err)
	}
	items := byID(pass)
	for id, want := range map[string]ingestd.Status{
		"o/r#1": ingestd.StatusRejected, "o/r#2": "", "o/r#3": "",
		"o/r#4": ingestd.StatusRejected, "o/r#5": "", "o/r#6": ingestd.StatusActive,
	} {
		if got := items[id].Status; got != want {
			t.Errorf("%s status = %q, want %q", id, got, want)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
