package github

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
)

// The mapping of GitHub objects to items is unexported: a sync and the
// webhook flavour are its only users. These tests reach it from inside.

var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

func TestXrefLinks(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"short", "Fixes #12 and #7.", []string{"o/r#12", "o/r#7"}},
		{"qualified same repo", "see o/r#3", []string{"o/r#3"}},
		{"other repo ignored", "see other/repo#3", nil},
		{"url same host", "dup of https://github.com/o/r/issues/9 and https://github.com/o/r/pull/10", []string{"o/r#10", "o/r#9"}},
		{"url other host", "https://gitlab.com/o/r/issues/9", nil},
		{"self and duplicates", "#5 #5 #1", []string{"o/r#1"}},
		{"html entity and anchors", "&#39; and https://x.io/page#12 and color #fff", nil},
		{"heading is not a ref", "# Title\n#12 at line start", []string{"o/r#12"}},
		{"punctuation around", "(#3), [#4]", []string{"o/r#3", "o/r#4"}},
		{"word before", "v1.2#3 abc#4 #5x", nil},
		{"url fragment", "https://github.com/o/r#12", nil},
		{"end of text", "#8", []string{"o/r#8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := &gh.Issue{Number: gh.Int(5), Body: gh.String(tt.body), HTMLURL: gh.String("https://github.com/o/r/issues/5")}
			it := itemFromIssue("o/r", is)
			var got []string
			for _, l := range it.Links {
				if l.Relation != "xref" {
					t.Errorf("relation %q", l.Relation)
				}
				got = append(got, l.ToExternalID)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("xrefs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestItemFromPullRequestStatus(t *testing.T) {
	tests := []struct {
		name  string
		pr    gh.PullRequest
		want  ingestd.Status
		merge string
	}{
		{"open", gh.PullRequest{State: gh.String("open")}, "", ""},
		{"closed unmerged", gh.PullRequest{State: gh.String("closed"), Merged: gh.Bool(false)}, ingestd.StatusRejected, "false"},
		{"merged", gh.PullRequest{State: gh.String("closed"), Merged: gh.Bool(true)}, "", "true"},
		{"merged_at only", gh.PullRequest{State: gh.String("closed"), MergedAt: &gh.Timestamp{Time: t0}}, "", "true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.pr.Number = gh.Int(2)
			tt.pr.AuthorAssociation = gh.String("CONTRIBUTOR")
			it := itemFromPullRequest("o/r", &tt.pr)
			if it.Status != tt.want || it.Meta["merged"] != tt.merge {
				t.Errorf("status %q merged %q, want %q %q", it.Status, it.Meta["merged"], tt.want, tt.merge)
			}
			if it.ItemKind != KindPullRequest || it.ExternalID != "o/r#2" || it.Meta[MetaAuthorAssociation] != "CONTRIBUTOR" {
				t.Errorf("item = %+v", it)
			}
		})
	}
}

// TestWebhookItemMatchesSync checks that a delivery and a sync of the same
// issue produce the same item: both map it with itemFromIssue.
func TestWebhookItemMatchesSync(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "github-webhooks", "issues.opened.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := WebhookFlavor.Mapper("gh", nil)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := m.Map(connectors.Delivery{Header: http.Header{"X-Github-Event": {"issues"}}, Body: body})
	if err != nil || len(jobs) != 1 || jobs[0].Kind != ingestd.JobItem {
		t.Fatalf("Map = %+v, %v; want one item job", jobs, err)
	}
	var e struct {
		Issue json.RawMessage `json:"issue"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatal(err)
	}
	var is gh.Issue
	if err := json.Unmarshal(e.Issue, &is); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(jobs[0].Item)
	want, _ := json.Marshal(itemFromIssue("Codertocat/Hello-World", &is))
	if !bytes.Equal(got, want) {
		t.Errorf("webhook item\n%s\nsync item\n%s", got, want)
	}
}

// BenchmarkItemFromIssue maps the 100 recorded issues of one listing page.
func BenchmarkItemFromIssue(b *testing.B) {
	var issues []*gh.Issue
	if err := json.Unmarshal(mustRecordedBody(b, "github3py.Repository_issues_state_all.2.json"), &issues); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, is := range issues {
			itemFromIssue("betamaxpy/betamax", is)
		}
	}
}

// mustRecordedBody is the body of a github3py recording in
// testdata/github-api.
func mustRecordedBody(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "github-api", name))
	if err != nil {
		tb.Fatal(err)
	}
	var r struct {
		Body json.RawMessage `json:"body"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	return r.Body
}
