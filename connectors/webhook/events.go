package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/github"
)

// Outcomes of a delivery besides queued jobs.
const (
	outcomeQueued  = "queued"
	outcomeIgnored = "ignored"
	outcomePong    = "pong"
)

// ErrUnprocessable marks a verified payload that cannot be mapped (422).
var ErrUnprocessable = errors.New("unprocessable payload")

func unprocessable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnprocessable, fmt.Sprintf(format, args...))
}

// GitHubJobs turns a verified GitHub delivery of the event (the
// X-GitHub-Event header) into jobs, with the same items package
// connectors/github syncs. outcome is "queued" when there are jobs,
// "pong" for ping and "ignored" for events and actions that change no
// document. An unreadable payload is ErrUnprocessable.
//
//   - issues: deleted → delete; transferred → delete here (and the new
//     issue as an item when the payload carries it); any other action →
//     the issue as an item, StatusActive on reopened.
//   - issue_comment, pull_request_review_comment: deleted → delete;
//     otherwise the comment as an item linked to its issue/PR.
//   - pull_request: the PR as an item (closed unmerged → StatusRejected,
//     reopened → StatusActive).
//   - push: a sync of ep.SyncInstallation when the default branch changed
//     a path matching ep.DocsPaths.
//
// Every item and delete job carries At, the updated_at (else created_at)
// of the object it is about, from the signed body: the pipeline applies it
// only if no newer state of the document was applied before. A payload
// whose object has neither is ErrUnprocessable.
func GitHubJobs(ep Endpoint, event string, body []byte) (jobs []ingestd.Job, outcome string, err error) {
	defer func() {
		for _, j := range jobs {
			if j.Kind != ingestd.JobSync && j.At.IsZero() && err == nil {
				jobs, outcome, err = nil, "", unprocessable("%s payload: no updated_at or created_at on the object", event)
			}
		}
	}()
	item := func(it ingestd.Item) ingestd.Job {
		at := it.UpdatedAt
		if at.IsZero() {
			at = it.CreatedAt
		}
		return ingestd.Job{Kind: ingestd.JobItem, Installation: ep.Installation, Item: &it, At: at.UTC()}
	}
	del := func(id string, updated, created gh.Timestamp) ingestd.Job {
		at := updated.Time
		if at.IsZero() {
			at = created.Time
		}
		return ingestd.Job{Kind: ingestd.JobDelete, Installation: ep.Installation, ExternalID: id, At: at.UTC()}
	}
	decode := func(v any) error {
		d := json.NewDecoder(bytes.NewReader(body))
		if err := d.Decode(v); err != nil {
			return unprocessable("%s payload: %v", event, err)
		}
		return nil
	}
	switch event {
	case "ping":
		return nil, outcomePong, nil
	case "issues":
		var e gh.IssuesEvent
		if err := decode(&e); err != nil {
			return nil, "", err
		}
		repo, err := repoName(e.Repo)
		if err != nil || e.Issue == nil {
			return nil, "", unprocessable("issues payload without repository or issue")
		}
		id := github.IssueID(repo, e.Issue.GetNumber())
		switch e.GetAction() {
		case "deleted":
			return []ingestd.Job{del(id, e.Issue.GetUpdatedAt(), e.Issue.GetCreatedAt())}, outcomeQueued, nil
		case "transferred":
			jobs = []ingestd.Job{del(id, e.Issue.GetUpdatedAt(), e.Issue.GetCreatedAt())}
			var ch struct {
				Changes struct {
					NewIssue      *gh.Issue      `json:"new_issue"`
					NewRepository *gh.Repository `json:"new_repository"`
				} `json:"changes"`
			}
			if decode(&ch) == nil && ch.Changes.NewIssue != nil && ch.Changes.NewRepository.GetFullName() != "" {
				jobs = append(jobs, item(github.ItemFromIssue(ch.Changes.NewRepository.GetFullName(), ch.Changes.NewIssue)))
			}
			return jobs, outcomeQueued, nil
		}
		it := github.ItemFromIssue(repo, e.Issue)
		if e.GetAction() == "reopened" {
			it.Status = ingestd.StatusActive
		}
		return []ingestd.Job{item(it)}, outcomeQueued, nil
	case "issue_comment":
		var e gh.IssueCommentEvent
		if err := decode(&e); err != nil {
			return nil, "", err
		}
		repo, err := repoName(e.Repo)
		if err != nil || e.Issue == nil || e.Comment == nil {
			return nil, "", unprocessable("issue_comment payload without repository, issue or comment")
		}
		if e.GetAction() == "deleted" {
			return []ingestd.Job{del(github.CommentID(repo, e.Issue.GetNumber(), e.Comment.GetID()), e.Comment.GetUpdatedAt(), e.Comment.GetCreatedAt())}, outcomeQueued, nil
		}
		return []ingestd.Job{item(github.ItemFromComment(repo, e.Issue.GetNumber(), e.Comment))}, outcomeQueued, nil
	case "pull_request":
		var e gh.PullRequestEvent
		if err := decode(&e); err != nil {
			return nil, "", err
		}
		repo, err := repoName(e.Repo)
		if err != nil || e.PullRequest == nil {
			return nil, "", unprocessable("pull_request payload without repository or pull_request")
		}
		it := github.ItemFromPullRequest(repo, e.PullRequest)
		if e.GetAction() == "reopened" {
			it.Status = ingestd.StatusActive
		}
		return []ingestd.Job{item(it)}, outcomeQueued, nil
	case "pull_request_review_comment":
		var e gh.PullRequestReviewCommentEvent
		if err := decode(&e); err != nil {
			return nil, "", err
		}
		repo, err := repoName(e.Repo)
		if err != nil || e.PullRequest == nil || e.Comment == nil {
			return nil, "", unprocessable("pull_request_review_comment payload without repository, pull_request or comment")
		}
		if e.GetAction() == "deleted" {
			return []ingestd.Job{del(github.ReviewCommentID(repo, e.PullRequest.GetNumber(), e.Comment.GetID()), e.Comment.GetUpdatedAt(), e.Comment.GetCreatedAt())}, outcomeQueued, nil
		}
		return []ingestd.Job{item(github.ItemFromReviewComment(repo, e.PullRequest.GetNumber(), e.Comment))}, outcomeQueued, nil
	case "push":
		var e gh.PushEvent
		if err := decode(&e); err != nil {
			return nil, "", err
		}
		if e.Repo == nil || e.GetRef() != "refs/heads/"+e.Repo.GetDefaultBranch() {
			return nil, outcomeIgnored, nil
		}
		commits := e.Commits
		if e.HeadCommit != nil {
			commits = append(commits, e.HeadCommit)
		}
		for _, c := range commits {
			for _, list := range [][]string{c.Added, c.Modified, c.Removed} {
				for _, p := range list {
					if github.IsDocPath(ep.DocsPaths, p) {
						return []ingestd.Job{{Kind: ingestd.JobSync, Installation: ep.SyncInstallation}}, outcomeQueued, nil
					}
				}
			}
		}
		return nil, outcomeIgnored, nil
	}
	// installation and every other event change no document.
	return nil, outcomeIgnored, nil
}

func repoName(r *gh.Repository) (string, error) {
	name := r.GetFullName()
	if strings.Count(name, "/") != 1 {
		return "", errors.New("no repository full_name")
	}
	return name, nil
}

// StandardJob maps a verified Standard Webhooks body to one job by the
// endpoint's field pointers (see Fields): an item, or a delete when the
// deleted field is true. The job's At is the body's updated_at, else
// sentAt (the signed webhook-timestamp). A body that is not a JSON
// object, has no id, has neither title nor body or has an updated_at that
// is not a time is ErrUnprocessable with a message naming the pointer.
func StandardJob(ep Endpoint, body []byte, sentAt time.Time) (ingestd.Job, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var doc any
	if err := d.Decode(&doc); err != nil {
		return ingestd.Job{}, unprocessable("body is not JSON: %v", err)
	}
	if d.More() {
		return ingestd.Job{}, unprocessable("body has data after the JSON document")
	}
	if _, ok := doc.(map[string]any); !ok {
		return ingestd.Job{}, unprocessable("body is not a JSON object")
	}
	f := ep.Fields
	id, err := scalar(doc, f.ID)
	if err != nil {
		return ingestd.Job{}, err
	}
	if id == "" {
		return ingestd.Job{}, unprocessable("no id at %s (accepted shape: {\"id\", \"title\", \"body\" or \"text\", \"url\", \"author\", \"deleted\", \"updated_at\"})", f.ID)
	}
	updated, err := timeAt(doc, f.UpdatedAt)
	if err != nil {
		return ingestd.Job{}, err
	}
	at := updated
	if at.IsZero() {
		at = sentAt.UTC()
	}
	if v, ok := lookupPointer(doc, f.Deleted); ok && v == true {
		return ingestd.Job{Kind: ingestd.JobDelete, Installation: ep.Installation, ExternalID: id, At: at}, nil
	}
	it := ingestd.Item{ExternalID: id, ItemKind: "webhook", Format: ep.Format, UpdatedAt: updated}
	if it.Title, err = scalar(doc, f.Title); err != nil {
		return ingestd.Job{}, err
	}
	bodyPtr := f.Body
	if bodyPtr == "" { // default: "body", else "text"
		bodyPtr = "/body"
		if _, ok := lookupPointer(doc, "/body"); !ok {
			bodyPtr = "/text"
		}
	}
	if it.Text, err = scalar(doc, bodyPtr); err != nil {
		return ingestd.Job{}, err
	}
	if it.URI, err = scalar(doc, f.URL); err != nil {
		return ingestd.Job{}, err
	}
	if it.Author, err = scalar(doc, f.Author); err != nil {
		return ingestd.Job{}, err
	}
	if strings.TrimSpace(it.Title) == "" && strings.TrimSpace(it.Text) == "" {
		return ingestd.Job{}, unprocessable("neither a title at %s nor a body at %s", f.Title, bodyPtr)
	}
	if it.Title != "" && it.Text != "" {
		it.Text = it.Title + "\n\n" + it.Text
	} else if it.Text == "" {
		it.Text = it.Title
	}
	return ingestd.Job{Kind: ingestd.JobItem, Installation: ep.Installation, Item: &it, At: at}, nil
}

// timeAt returns the time at ptr: an RFC 3339 string or a number of unix
// seconds; zero when absent or null.
func timeAt(doc any, ptr string) (time.Time, error) {
	v, ok := lookupPointer(doc, ptr)
	if !ok || v == nil {
		return time.Time{}, nil
	}
	switch x := v.(type) {
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return time.Time{}, unprocessable("%s is not an RFC 3339 time", ptr)
		}
		return t.UTC(), nil
	case json.Number:
		if f, err := x.Float64(); err == nil && f > 0 && f < 1e11 {
			sec := int64(f)
			return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC(), nil
		}
	}
	return time.Time{}, unprocessable("%s is not a time (RFC 3339 or unix seconds)", ptr)
}

// scalar returns the string or number at ptr, "" when absent or null.
func scalar(doc any, ptr string) (string, error) {
	v, ok := lookupPointer(doc, ptr)
	if !ok || v == nil {
		return "", nil
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", unprocessable("%s is an object or array; want a string", ptr)
}

// lookupPointer evaluates an RFC 6901 JSON pointer ("" is the whole doc).
func lookupPointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
