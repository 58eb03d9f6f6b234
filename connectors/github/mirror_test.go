package github_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/github"
)

// collaboratorsFixture is octokit/fixtures' recorded
// add-and-remove-repository-collaborator scenario: two listings of a
// repository's collaborators, with user-b and after user-b was removed.
func collaboratorsFixture(t *testing.T) (before, after json.RawMessage) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(apiDir, "octokit-fixtures.add-and-remove-repository-collaborator.json"))
	if err != nil {
		t.Fatal(err)
	}
	var fx []struct {
		Method, Path string
		Response     json.RawMessage
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	var lists []json.RawMessage
	for _, f := range fx {
		if f.Method == "get" && strings.HasSuffix(f.Path, "/collaborators") {
			lists = append(lists, f.Response)
		}
	}
	if len(lists) != 2 {
		t.Fatalf("%d collaborator listings in the fixture, want 2", len(lists))
	}
	return lists[0], lists[1]
}

// recordedTeam is the team object of a recorded team webhook delivery:
// the shape GET /repos/{o}/{r}/teams lists.
func recordedTeam(t *testing.T) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "github-webhooks", "team.added_to_repository.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e struct{ Team json.RawMessage }
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e.Team
}

// privateRepo serves o/r as a private repository with two issues.
func privateRepo(t *testing.T) *fakeAPI {
	f := MustFakeAPI(t)
	f.setJSON(t, "/repos/o/r", `"private"`, map[string]any{"full_name": "o/r", "default_branch": "main",
		"html_url": "https://github.com/o/r", "private": true, "visibility": "private"})
	issue := func(n int) map[string]any {
		return map[string]any{"number": n, "title": "t" + strconv.Itoa(n), "body": "b", "state": "open", "author_association": "MEMBER",
			"html_url": "https://github.com/o/r/issues/" + strconv.Itoa(n), "updated_at": "2024-01-0" + strconv.Itoa(n+1) + "T00:00:00Z",
			"created_at": "2024-01-01T00:00:00Z", "user": map[string]any{"login": "x"}}
	}
	f.setJSON(t, "/repos/o/r/issues", `"a"`, []any{issue(1), issue(2)})
	return f
}

// TestReadersMirrorCollaboratorsAndTeams: a private repository's items
// are read by its collaborators with read access, as the people their
// logins are (logins, else login_domain), and by its teams as groups; a
// collaborator removed on GitHub (the fixture's second listing) is gone
// from every item's readers at the next pass, the items put again with
// the new readers; a listing the token may not read (403) leaves every
// item unmapped and says so in the pass, never the previous set.
func TestReadersMirrorCollaboratorsAndTeams(t *testing.T) {
	f := privateRepo(t)
	before, after := collaboratorsFixture(t)
	f.set("/repos/o/r/collaborators", 200, map[string]string{"Content-Type": "application/json"}, before)
	f.set("/repos/o/r/teams", 200, map[string]string{"Content-Type": "application/json"}, []byte("["+string(recordedTeam(t))+"]"))
	src := MustSource(t, f, &fakeClock{now: t0}, github.Config{Repos: []string{"o/r"},
		Include:     github.Include{Docs: no(), IssueComments: no(), ReviewComments: no()},
		Logins:      map[string]string{"octokit-fixture-user-a": "alice@example.com"},
		LoginDomain: "example.org"})
	pass := connectortest.New(nil)
	ctx := context.Background()
	readersOf := func(want ...ingestd.Principal) {
		t.Helper()
		if len(pass.Puts()) != 2 {
			t.Fatalf("puts %v, want both issues", pass.PutIDs())
		}
		w := ingestd.ReadersOf(want...)
		for _, it := range pass.Puts() {
			if it.Readers == nil || !it.Readers.Mapped || !it.Readers.Equal(w) {
				t.Errorf("%s: readers %+v, want %v", it.ExternalID, it.Readers, w.Principals)
			}
		}
	}
	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	readersOf("user:alice@example.com", "user:octokit-fixture-user-b@example.org", "group:github:o/github")
	if !slices.ContainsFunc(f.Requests(), func(r request) bool {
		return r.Path == "/repos/o/r/collaborators" && strings.Contains(r.Query, "affiliation=all")
	}) {
		t.Error("collaborators were not listed with affiliation=all")
	}

	// user-b removed on GitHub: both items again, without them.
	f.set("/repos/o/r/collaborators", 200, map[string]string{"Content-Type": "application/json"}, after)
	pass.Next()
	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	readersOf("user:alice@example.com", "group:github:o/github")

	// The listing refused: unmapped, and the pass says why.
	f.set("/repos/o/r/collaborators", http.StatusForbidden, map[string]string{"Content-Type": "application/json"},
		[]byte(`{"message":"Must have push access to view repository collaborators."}`))
	pass.Next()
	if err := src.Sync(ctx, pass); err != nil {
		t.Fatal(err)
	}
	if len(pass.Puts()) != 2 {
		t.Fatalf("after the refusal put %v, want both issues again", pass.PutIDs())
	}
	for _, it := range pass.Puts() {
		if it.Readers == nil || it.Readers.Mapped {
			t.Errorf("%s: readers %+v, want unmapped (no person)", it.ExternalID, it.Readers)
		}
	}
	if len(pass.Fails()) == 0 {
		t.Error("the refused listing is not among the pass's failures")
	}
}

// TestReadersDeclaredWithoutLogins: without logins or login_domain no
// collaborator is looked up, and a private repository's items take the
// installation's declared readers, as before mirroring existed.
func TestReadersDeclaredWithoutLogins(t *testing.T) {
	f := privateRepo(t)
	src := MustSource(t, f, &fakeClock{now: t0}, github.Config{Repos: []string{"o/r"},
		Include: github.Include{Docs: no(), IssueComments: no(), ReviewComments: no()}})
	pass := connectortest.New(nil)
	if err := src.Sync(context.Background(), pass); err != nil {
		t.Fatal(err)
	}
	for _, it := range pass.Puts() {
		if it.Readers != nil {
			t.Errorf("%s: readers %+v, want the installation's declaration (nil)", it.ExternalID, it.Readers)
		}
	}
	for _, r := range f.Requests() {
		if strings.HasSuffix(r.Path, "/collaborators") || strings.HasSuffix(r.Path, "/teams") {
			t.Errorf("asked %s without a mirror configured", r.Path)
		}
	}
}
