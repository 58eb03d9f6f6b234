package github

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	gh "github.com/google/go-github/v62/github"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/internal/jsonmsg"
)

// WebhookFlavor is the "github" webhook flavour: deliveries signed with
// X-Hub-Signature-256, routed on the X-GitHub-Event header and mapped to
// the items a sync of the same objects produces. An installation of the
// webhook kind takes it with flavor: github (the default) and may set the
// keys of HookConfig in its webhook block.
var WebhookFlavor = connectors.NewFlavor("github", connectors.SchemeHubSignature, newHookMapper)

// HookConfig is the github flavour's keys of a webhook block.
type HookConfig struct {
	// DocsPaths are the globs a push must touch on the default branch to
	// trigger a sync; default DefaultDocsPaths.
	DocsPaths []string `yaml:"docs_paths"`
	// SyncInstallation is the installation a doc-changing push asks to
	// sync (a github installation of the same repository); default the
	// webhook installation itself, whose own sync does nothing.
	SyncInstallation string `yaml:"sync_installation"`
}

// hookMapper maps one installation's verified GitHub deliveries.
type hookMapper struct {
	installation string
	cfg          HookConfig
}

var _ connectors.DeliveryMapper = (*hookMapper)(nil)

func newHookMapper(installation string, cfg HookConfig) (connectors.DeliveryMapper, error) {
	if len(cfg.DocsPaths) == 0 {
		cfg.DocsPaths = append([]string(nil), DefaultDocsPaths...)
	}
	for i, p := range cfg.DocsPaths {
		if !doublestar.ValidatePattern(p) {
			return nil, ingestd.Errorf(ingestd.EINVALID, "webhook.docs_paths[%d]: invalid glob %q", i, p)
		}
	}
	if cfg.SyncInstallation == "" {
		cfg.SyncInstallation = installation
	}
	return &hookMapper{installation: installation, cfg: cfg}, nil
}

// Map turns a verified delivery of the event its X-GitHub-Event header
// names into jobs, with the same items a sync produces. A ping, and events
// and actions that change no document, give none. An unreadable payload is
// EINVALID.
//
//   - issues: deleted → delete; transferred → delete here (and the new
//     issue as an item when the payload carries it); any other action →
//     the issue as an item, StatusActive on reopened.
//   - issue_comment, pull_request_review_comment: deleted → delete;
//     otherwise the comment as an item linked to its issue/PR.
//   - pull_request: the PR as an item (closed unmerged → StatusRejected,
//     reopened → StatusActive).
//   - push: a sync of SyncInstallation when the default branch changed a
//     path matching DocsPaths.
//   - member, membership, team, team_add, and repository's privatized,
//     publicized and transferred: a sync of SyncInstallation, which
//     reads every repository's readers again (a collaborator or team
//     removed loses the items without waiting for the schedule).
//
// Every item and delete job carries At, the updated_at (else created_at)
// of the object it is about, from the signed body: the pipeline applies it
// only if no newer state of the document was applied before. A payload
// whose object has neither is EINVALID.
func (m *hookMapper) Map(d connectors.Delivery) (jobs []ingestd.Job, err error) {
	event := d.Header.Get("X-GitHub-Event")
	defer func() {
		for _, j := range jobs {
			if j.Kind != ingestd.JobSync && j.At.IsZero() && err == nil {
				jobs, err = nil, unprocessable("%s payload: no updated_at or created_at on the object", event)
			}
		}
	}()
	h := hookEvent{m: m, event: event, body: d.Body}
	switch event {
	case "issues":
		return h.issues()
	case "issue_comment":
		return h.issueComment()
	case "pull_request":
		return h.pullRequest()
	case "pull_request_review_comment":
		return h.reviewComment()
	case "push":
		return h.push()
	case "member", "membership", "team", "team_add":
		return h.readersChanged(nil)
	case "repository":
		return h.readersChanged([]string{"privatized", "publicized", "transferred"})
	}
	// ping, installation and every other event change no document.
	return nil, nil
}

// hookEvent is one delivery being mapped: its event name and signed body.
type hookEvent struct {
	m     *hookMapper
	event string
	body  []byte
}

// item is the item job of it, at its updated_at (else created_at).
func (h hookEvent) item(it ingestd.Item) ingestd.Job {
	at := it.UpdatedAt
	if at.IsZero() {
		at = it.CreatedAt
	}
	return ingestd.Job{Kind: ingestd.JobItem, Installation: h.m.installation, Item: &it, At: at.UTC()}
}

// del is the delete job of the external id, at updated (else created).
func (h hookEvent) del(id string, updated, created gh.Timestamp) ingestd.Job {
	at := updated.Time
	if at.IsZero() {
		at = created.Time
	}
	return ingestd.Job{Kind: ingestd.JobDelete, Installation: h.m.installation, ExternalID: id, At: at.UTC()}
}

// decode reads the body into v; a body it cannot read is unprocessable.
func (h hookEvent) decode(v any) error {
	if err := json.NewDecoder(bytes.NewReader(h.body)).Decode(v); err != nil {
		return unprocessable("%s payload: %s", h.event, jsonmsg.Describe(err))
	}
	return nil
}

// issues maps an issues event: an issue opened, edited, closed, reopened, transferred (a delete and the new issue) or deleted.
func (h hookEvent) issues() ([]ingestd.Job, error) {
	var e gh.IssuesEvent
	if err := h.decode(&e); err != nil {
		return nil, err
	}
	repo, err := repoName(e.Repo)
	if err != nil || e.Issue == nil {
		return nil, unprocessable("issues payload without repository or issue")
	}
	id := IssueID(repo, e.Issue.GetNumber())
	switch e.GetAction() {
	case "deleted":
		return []ingestd.Job{h.del(id, e.Issue.GetUpdatedAt(), e.Issue.GetCreatedAt())}, nil
	case "transferred":
		jobs := []ingestd.Job{h.del(id, e.Issue.GetUpdatedAt(), e.Issue.GetCreatedAt())}
		var ch struct {
			Changes struct {
				NewIssue      *gh.Issue      `json:"new_issue"`
				NewRepository *gh.Repository `json:"new_repository"`
			} `json:"changes"`
		}
		if h.decode(&ch) == nil && ch.Changes.NewIssue != nil && ch.Changes.NewRepository.GetFullName() != "" {
			jobs = append(jobs, h.item(itemFromIssue(ch.Changes.NewRepository.GetFullName(), ch.Changes.NewIssue)))
		}
		return jobs, nil
	}
	it := itemFromIssue(repo, e.Issue)
	if e.GetAction() == "reopened" {
		it.Status = ingestd.StatusActive
	}
	return []ingestd.Job{h.item(it)}, nil
}

// issueComment maps an issue_comment event: a comment written, edited or deleted.
func (h hookEvent) issueComment() ([]ingestd.Job, error) {
	var e gh.IssueCommentEvent
	if err := h.decode(&e); err != nil {
		return nil, err
	}
	repo, err := repoName(e.Repo)
	if err != nil || e.Issue == nil || e.Comment == nil {
		return nil, unprocessable("issue_comment payload without repository, issue or comment")
	}
	if e.GetAction() == "deleted" {
		return []ingestd.Job{h.del(CommentID(repo, e.Issue.GetNumber(), e.Comment.GetID()), e.Comment.GetUpdatedAt(), e.Comment.GetCreatedAt())}, nil
	}
	return []ingestd.Job{h.item(itemFromComment(repo, e.Issue.GetNumber(), e.Comment))}, nil
}

// pullRequest maps a pull_request event: the pull request as it now is.
func (h hookEvent) pullRequest() ([]ingestd.Job, error) {
	var e gh.PullRequestEvent
	if err := h.decode(&e); err != nil {
		return nil, err
	}
	repo, err := repoName(e.Repo)
	if err != nil || e.PullRequest == nil {
		return nil, unprocessable("pull_request payload without repository or pull_request")
	}
	it := itemFromPullRequest(repo, e.PullRequest)
	if e.GetAction() == "reopened" {
		it.Status = ingestd.StatusActive
	}
	return []ingestd.Job{h.item(it)}, nil
}

// reviewComment maps a pull_request_review_comment event: a review comment written, edited or deleted.
func (h hookEvent) reviewComment() ([]ingestd.Job, error) {
	var e gh.PullRequestReviewCommentEvent
	if err := h.decode(&e); err != nil {
		return nil, err
	}
	repo, err := repoName(e.Repo)
	if err != nil || e.PullRequest == nil || e.Comment == nil {
		return nil, unprocessable("pull_request_review_comment payload without repository, pull_request or comment")
	}
	if e.GetAction() == "deleted" {
		return []ingestd.Job{h.del(ReviewCommentID(repo, e.PullRequest.GetNumber(), e.Comment.GetID()), e.Comment.GetUpdatedAt(), e.Comment.GetCreatedAt())}, nil
	}
	return []ingestd.Job{h.item(itemFromReviewComment(repo, e.PullRequest.GetNumber(), e.Comment))}, nil
}

// push maps a push event: a sync of SyncInstallation when a push to the default branch touches a path matching DocsPaths.
func (h hookEvent) push() ([]ingestd.Job, error) {
	var e gh.PushEvent
	if err := h.decode(&e); err != nil {
		return nil, err
	}
	if e.Repo == nil || e.GetRef() != "refs/heads/"+e.Repo.GetDefaultBranch() {
		return nil, nil
	}
	commits := e.Commits
	if e.HeadCommit != nil {
		commits = append(commits, e.HeadCommit)
	}
	for _, c := range commits {
		for _, list := range [][]string{c.Added, c.Modified, c.Removed} {
			for _, p := range list {
				if isDocPath(h.m.cfg.DocsPaths, p) {
					return []ingestd.Job{{Kind: ingestd.JobSync, Installation: h.m.cfg.SyncInstallation}}, nil
				}
			}
		}
	}
	return nil, nil
}

func repoName(r *gh.Repository) (string, error) {
	name := r.GetFullName()
	if strings.Count(name, "/") != 1 {
		return "", errors.New("no repository full_name")
	}
	return name, nil
}

// unprocessable is the error of a verified payload Map cannot read.
func unprocessable(format string, args ...any) error {
	return ingestd.Errorf(ingestd.EINVALID, "unprocessable payload: %s", fmt.Sprintf(format, args...))
}

// readersChanged is a sync of SyncInstallation for an event that may
// change who reads a repository: any action, or one of actions.
func (h hookEvent) readersChanged(actions []string) ([]ingestd.Job, error) {
	var e struct {
		Action string `json:"action"`
	}
	if err := h.decode(&e); err != nil {
		return nil, err
	}
	if actions != nil && !slices.Contains(actions, e.Action) {
		return nil, nil
	}
	return []ingestd.Job{{Kind: ingestd.JobSync, Installation: h.m.cfg.SyncInstallation}}, nil
}
