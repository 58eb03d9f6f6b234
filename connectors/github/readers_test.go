package github_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/github"
)

// TestReadersFollowVisibility: a public repository's items are readable
// by everyone (the recorded repository answer says private: false); one
// made private is listed again whole, its items put without readers of
// their own, so the installation's declared readers (unmapped when none)
// replace everyone's on every stored item.
func TestReadersFollowVisibility(t *testing.T) {
	f := MustFakeAPI(t)
	repo := MustRecording(t, "github3py.Repository_issue.0.json")
	f.set("/repos/o/r", repo.Status, repo.Headers, repo.Body)
	issue := func(n int, updated string) map[string]any {
		return map[string]any{"number": n, "title": "t" + strconv.Itoa(n), "body": "b", "state": "open", "author_association": "NONE",
			"html_url": "https://github.com/o/r/issues/" + strconv.Itoa(n), "updated_at": updated, "created_at": "2024-01-01T00:00:00Z", "user": map[string]any{"login": "x"}}
	}
	f.setJSON(t, "/repos/sigmavirus24/github3.py/issues", `"a"`, []any{issue(1, "2024-01-02T00:00:00Z"), issue(2, "2024-01-03T00:00:00Z")})
	src := MustSource(t, f, &fakeClock{now: t0}, github.Config{Repos: []string{"o/r"}, Include: github.Include{Docs: no(), IssueComments: no(), ReviewComments: no()}})
	pass := connectortest.New(nil)
	ctx := context.Background()
	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	if len(pass.Puts()) != 2 {
		t.Fatalf("puts %v, want two issues", pass.PutIDs())
	}
	for _, it := range pass.Puts() {
		if it.Readers == nil || !it.Readers.IsPublic() {
			t.Errorf("%s: readers %+v, want everyone (a public repository)", it.ExternalID, it.Readers)
		}
	}

	// Nothing changed: an incremental pass puts nothing.
	pass.Next()
	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	if len(pass.Puts()) != 0 {
		t.Fatalf("unchanged pass put %v", pass.PutIDs())
	}

	// Made private: everything is listed again, without everyone.
	f.setJSON(t, "/repos/o/r", `"private"`, map[string]any{"full_name": "sigmavirus24/github3.py", "default_branch": "main",
		"html_url": "https://github.com/sigmavirus24/github3.py", "private": true, "visibility": "private"})
	pass.Next()
	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	if len(pass.Puts()) != 2 {
		t.Fatalf("after going private put %v, want both issues again", pass.PutIDs())
	}
	for _, it := range pass.Puts() {
		if it.Readers != nil {
			t.Errorf("%s: readers %+v, want none of its own (the installation's declaration)", it.ExternalID, it.Readers)
		}
	}
}
