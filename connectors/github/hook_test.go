package github_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/github"
)

// hooksDir holds real GitHub webhook payloads (see testdata/NOTICE.md).
const hooksDir = "testdata/github-webhooks"

func mustHook(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(hooksDir, name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func delivery(event string, body []byte) connectors.Delivery {
	return connectors.Delivery{Header: http.Header{"X-Github-Event": {event}}, Body: body}
}

// TestWebhookFlavorConformance runs the flavour cases on real deliveries
// through the webhook intake.
func TestWebhookFlavorConformance(t *testing.T) {
	var ds []connectortest.Delivery
	for _, f := range []struct{ event, file string }{
		{"issues", "issues.opened.json"},
		{"issue_comment", "issue_comment.deleted.json"},
		{"pull_request", "pull_request.closed.json"},
		{"pull_request_review_comment", "pull_request_review_comment.created.json"},
		{"push", "push.with-new-branch.json"},
	} {
		ds = append(ds, connectortest.Delivery{Header: http.Header{"X-Github-Event": {f.event}}, Body: mustHook(t, f.file)})
	}
	connectortest.RunFlavor(t, github.WebhookFlavor, connectortest.FlavorCase{Deliveries: ds})
}

// TestWebhookFlavorMaps: each event maps to the jobs a sync would agree
// with; the settings steer a doc-changing push.
func TestWebhookFlavorMaps(t *testing.T) {
	const repo = "Codertocat/Hello-World"
	tests := []struct {
		name, event, file string
		settings          *github.HookConfig
		want              []string // kind:id (sync: kind:installation)
		wantErr           bool
	}{
		{"issue opened", "issues", "issues.opened.json", nil, []string{"item:" + repo + "#1"}, false},
		{"issue transferred", "issues", "issues.transferred.json", nil, []string{"delete:octo-org/octo-repo#1", "item:" + repo + "#1"}, false},
		{"comment created", "issue_comment", "issue_comment.created.json", nil, []string{"item:" + repo + "#1/comment/492700400"}, false},
		{"comment deleted", "issue_comment", "issue_comment.deleted.json", nil, []string{"delete:" + repo + "#1/comment/492700400"}, false},
		{"pr closed", "pull_request", "pull_request.closed.json", nil, []string{"item:" + repo + "#2"}, false},
		{"review comment", "pull_request_review_comment", "pull_request_review_comment.created.json", nil, []string{"item:" + repo + "#2/review_comment/284312630"}, false},
		{"push to a tag", "push", "push.json", nil, nil, false},
		{"doc push syncs itself by default", "push", "push.with-new-branch.json", nil, []string{"sync:hooks"}, false},
		{"doc push syncs the named installation", "push", "push.with-new-branch.json", &github.HookConfig{SyncInstallation: "repo"}, []string{"sync:repo"}, false},
		{"push outside docs_paths", "push", "push.with-new-branch.json", &github.HookConfig{DocsPaths: []string{"handbook/**"}}, nil, false},
		{"collaborator added", "member", "member.added.json", nil, []string{"sync:hooks"}, false},
		{"team given the repository", "team", "team.added_to_repository.json", &github.HookConfig{SyncInstallation: "repo"}, []string{"sync:repo"}, false},
		{"team taken off the repository", "team", "team.removed_from_repository.json", nil, []string{"sync:hooks"}, false},
		{"repository made private", "repository", "repository.privatized.json", nil, []string{"sync:hooks"}, false},
		{"repository made public", "repository", "repository.publicized.json", nil, []string{"sync:hooks"}, false},
		{"ping", "ping", "ping.json", nil, nil, false},
		{"unknown event", "star", "ping.json", nil, nil, false},
		{"not json", "issues", "", nil, nil, true},
		{"issue without repository", "issues", "ping.json", nil, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var settings any
			if tt.settings != nil {
				settings = tt.settings
			}
			m, err := github.WebhookFlavor.Mapper("hooks", settings)
			if err != nil {
				t.Fatal(err)
			}
			body := []byte("not json")
			if tt.file != "" {
				body = mustHook(t, tt.file)
			}
			jobs, err := m.Map(delivery(tt.event, body))
			if tt.wantErr {
				if ingestd.ErrorCode(err) != ingestd.EINVALID || len(jobs) != 0 {
					t.Fatalf("Map = %d jobs, %v; want EINVALID and none", len(jobs), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, j := range jobs {
				switch j.Kind {
				case ingestd.JobItem:
					got = append(got, "item:"+j.Item.ExternalID)
				case ingestd.JobDelete:
					got = append(got, "delete:"+j.ExternalID)
				default:
					got = append(got, j.Kind+":"+j.Installation)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("jobs = %q, want %q", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("job %d = %q, want %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestWebhookFlavorSettings(t *testing.T) {
	if _, err := github.WebhookFlavor.Mapper("hooks", &github.HookConfig{DocsPaths: []string{"docs/**", "{a"}}); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Errorf("invalid docs_paths glob: err = %v, want EINVALID", err)
	}
}
