package github

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	gh "github.com/google/go-github/v62/github"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
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
	item := func(it ingestd.Item) ingestd.Job {
		at := it.UpdatedAt
		if at.IsZero() {
			at = it.CreatedAt
		}
		return ingestd.Job{Kind: ingestd.JobItem, Installation: m.installation, Item: &it, At: at.UTC()}
	}
	del := func(id string, updated, created gh.Timestamp) ingestd.Job {
		at := updated.Time
		if at.IsZero() {
			at = created.Time
		}
		return ingestd.Job{Kind: ingestd.JobDelete, Installation: m.installation, ExternalID: id, At: at.UTC()}
	}
	decode := func(v any) error {
		if err := json.NewDecoder(bytes.NewReader(d.Body)).Decode(v); err != nil {
			return unprocessable("%s payload: %v", event, err)
		}
		return nil
	}
	switch event {
	case "issues":
		var e gh.IssuesEvent
		if err := decode(&e); err != nil {
			return nil, err
		}
		repo, err := repoName(e.Repo)
		if err != nil || e.Issue == nil {
			return nil, unprocessable("issues payload without repository or issue")
		}
		id := IssueID(repo, e.Issue.GetNumber())
		switch e.GetAction() {
		case "deleted":
			return []ingestd.Job{del(id, e.Issue.GetUpdatedAt(), e.Issue.GetCreatedAt())}, nil
		case "transferred":
			jobs = []ingestd.Job{del(id, e.Issue.GetUpdatedAt(), e.Issue.GetCreatedAt())}
			var ch struct {
				Changes struct {
					NewIssue      *gh.Issue      `json:"new_issue"`
					NewRepository *gh.Repository `json:"new_repository"`
				} `json:"changes"`
			}
			if decode(&ch) == nil && ch.Changes.NewIssue != nil && ch.Changes.NewRepository.GetFullName() != "" {
				jobs = append(jobs, item(itemFromIssue(ch.Changes.NewRepository.GetFullName(), ch.Changes.NewIssue)))
			}
			return jobs, nil
		}
		it := itemFromIssue(repo, e.Issue)
		if e.GetAction() == "reopened" {
			it.Status = ingestd.StatusActive
		}
		return []ingestd.Job{item(it)}, nil
	case "issue_comment":
		var e gh.IssueCommentEvent
		if err := decode(&e); err != nil {
			return nil, err
		}
		repo, err := repoName(e.Repo)
		if err != nil || e.Issue == nil || e.Comment == nil {
			return nil, unprocessable("issue_comment payload without repository, issue or comment")
		}
		if e.GetAction() == "deleted" {
			return []ingestd.Job{del(CommentID(repo, e.Issue.GetNumber(), e.Comment.GetID()), e.Comment.GetUpdatedAt(), e.Comment.GetCreatedAt())}, nil
		}
		return []ingestd.Job{item(itemFromComment(repo, e.Issue.GetNumber(), e.Comment))}, nil
	case "pull_request":
		var e gh.PullRequestEvent
		if err := decode(&e); err != nil {
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
		return []ingestd.Job{item(it)}, nil
	case "pull_request_review_comment":
		var e gh.PullRequestReviewCommentEvent
		if err := decode(&e); err != nil {
			return nil, err
		}
		repo, err := repoName(e.Repo)
		if err != nil || e.PullRequest == nil || e.Comment == nil {
			return nil, unprocessable("pull_request_review_comment payload without repository, pull_request or comment")
		}
		if e.GetAction() == "deleted" {
			return []ingestd.Job{del(ReviewCommentID(repo, e.PullRequest.GetNumber(), e.Comment.GetID()), e.Comment.GetUpdatedAt(), e.Comment.GetCreatedAt())}, nil
		}
		return []ingestd.Job{item(itemFromReviewComment(repo, e.PullRequest.GetNumber(), e.Comment))}, nil
	case "push":
		var e gh.PushEvent
		if err := decode(&e); err != nil {
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
					if isDocPath(m.cfg.DocsPaths, p) {
						return []ingestd.Job{{Kind: ingestd.JobSync, Installation: m.cfg.SyncInstallation}}, nil
					}
				}
			}
		}
		return nil, nil
	}
	// ping, installation and every other event change no document.
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
