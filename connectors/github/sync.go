package github

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/ingestd/ingestd"
)

// Cursor keys. Every value is JSON; a value this build cannot read is
// treated as absent (the next pass lists in full, which is safe).
const cursorFullAt = "full_at"

func cursorKey(repo, kind string) string { return repo + "/" + kind }

// listCursor is the state of one since-listing: the newest updated_at
// seen, the ids updated at exactly that instant (GitHub's since is
// inclusive, so they come back and are skipped), and the ETag of the
// first page, sent as If-None-Match next time (a 304 costs no rate limit).
type listCursor struct {
	Since    time.Time `json:"since,omitzero"`
	Boundary []string  `json:"boundary,omitempty"`
	ETag     string    `json:"etag,omitempty"`
}

// repoCursor caches the repository lookup behind its ETag.
type repoCursor struct {
	ETag          string `json:"etag,omitempty"`
	FullName      string `json:"full_name"`
	DefaultBranch string `json:"default_branch"`
	HTMLURL       string `json:"html_url"`
	// Visibility is the repository's ("public", "private", "internal");
	// "" in a cursor from before it was kept, which is looked up again.
	Visibility string `json:"visibility,omitempty"`
	// Readers is the visibility the repository's items were last put
	// with (readersOf), so a change re-lists them.
	Readers string `json:"readers,omitempty"`
}

// docsCursor is the default-branch tree's ETag and the blob sha of every
// doc taken, so an unchanged doc is not fetched again and a removed one
// is tombstoned.
type docsCursor struct {
	ETag  string            `json:"etag,omitempty"`
	Blobs map[string]string `json:"blobs,omitempty"`
}

// Sync runs one pass over every configured repository.
//
// A pass is full when no full pass has completed within FullSyncEvery
// (always the first): it lists everything without since or ETag, and when
// every repository and kind was listed without error it calls
// pass.Complete, so issues deleted or transferred away and docs removed
// since are tombstoned. Every other pass is incremental: since-cursors per
// repo and kind, If-None-Match on each first page, docs fetched only when
// their blob changed; it never calls Complete, because an incremental
// listing does not show what was deleted. Docs removed from the tree are
// tombstoned on any pass; the webhook intake propagates issue and comment
// deletions between full passes.
//
// It returns an error when ctx ends, when pass.Put/Delete/SetCursor fails,
// or when GitHub rejects the credentials; a repository that cannot be
// read is reported with pass.Fail and the pass goes on.
//
// Passes of one source run one at a time; a second caller waits.
func (s *Source) Sync(ctx context.Context, pass ingestd.Pass) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	full, err := s.fullDue(ctx, pass)
	if err != nil {
		return err
	}
	repos, err := s.repoNames(ctx)
	if err != nil {
		return err
	}
	complete := true
	for _, name := range repos {
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, err := s.syncRepo(ctx, pass, name, full)
		if err != nil {
			return err
		}
		complete = complete && ok
	}
	if !full {
		return nil
	}
	if !complete {
		s.log.Warn("github: full pass incomplete; nothing tombstoned this pass", "installation", s.installation)
		return nil
	}
	if err := setJSON(ctx, pass, cursorFullAt, s.now().UTC()); err != nil {
		return err
	}
	pass.Complete()
	return nil
}

func (s *Source) fullDue(ctx context.Context, pass ingestd.Pass) (bool, error) {
	var last time.Time
	if _, err := getJSON(ctx, pass, cursorFullAt, &last); err != nil {
		return false, err
	}
	return last.IsZero() || s.now().Sub(last) >= s.cfg.FullSyncEvery, nil
}

// repoNames is the configured repos plus the organisation's, deduplicated.
func (s *Source) repoNames(ctx context.Context) ([]string, error) {
	out := slices.Clone(s.cfg.Repos)
	if s.cfg.Org != "" {
		next := "orgs/" + url.PathEscape(s.cfg.Org) + "/repos?type=all&per_page=" + strconv.Itoa(s.cfg.PerPage)
		read := map[string]bool{}
		for next != "" {
			if s.api.again(read, next) {
				return nil, fmt.Errorf("list org %s repos: Link rel=next leads back to %s, a page already read", s.cfg.Org, next)
			}
			var page []*gh.Repository
			resp, err := s.api.get(ctx, next, "", &page)
			if err != nil {
				return nil, fmt.Errorf("list org %s repos: %w", s.cfg.Org, err)
			}
			for _, r := range page {
				if !slices.Contains(out, r.GetFullName()) {
					out = append(out, r.GetFullName())
				}
			}
			next = resp.next
		}
	}
	return out, nil
}

// syncRepo syncs one repository; ok is false when something could not be
// listed (the pass then must not call Complete).
func (s *Source) syncRepo(ctx context.Context, pass ingestd.Pass, name string, full bool) (ok bool, err error) {
	r, err := s.repo(ctx, pass, name)
	if err != nil {
		if fatal(err) {
			return false, err
		}
		pass.Fail(name, err)
		return false, nil
	}
	readers, state, err := s.readersOf(ctx, pass, r)
	if err != nil {
		return false, err
	}
	if r.Readers != state {
		// Who may read the repository changed (made private, or public):
		// list everything again, so every stored item takes the new
		// readers (unchanged content is written as readers alone).
		full = full || r.Readers != ""
		defer func() {
			if err == nil && ok {
				r.Readers = state
				err = setJSON(ctx, pass, cursorKey(name, "repo"), r)
			}
		}()
	}
	pass = readersPass{Pass: pass, readers: readers}
	ok = true
	steps := []struct {
		on  bool
		run func(context.Context, ingestd.Pass, repoCursor, bool) error
	}{
		{on(s.cfg.Include.Issues) || on(s.cfg.Include.Pulls), s.syncIssues},
		{on(s.cfg.Include.IssueComments), s.syncComments},
		{on(s.cfg.Include.ReviewComments), s.syncReviewComments},
		{on(s.cfg.Include.Docs), s.syncDocs},
	}
	for _, st := range steps {
		if !st.on {
			continue
		}
		if err := st.run(ctx, pass, r, full); err != nil {
			if fatal(err) {
				return false, err
			}
			pass.Fail(name, err)
			ok = false
		}
	}
	return ok, nil
}

// fatal reports errors that stop the pass: cancellation, bad credentials
// and a failing pass (store); anything else is one repository's problem.
func fatal(err error) bool {
	var pe passError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.As(err, &pe):
		return true
	}
	return ingestd.ErrorCode(err) == ingestd.EUNAUTHORIZED
}

// passError marks an error from the pass (Put, Delete, cursors).
type passError struct{ err error }

func (e passError) Error() string { return e.err.Error() }
func (e passError) Unwrap() error { return e.err }

// repo looks the repository up (following a rename's 301), behind its ETag.
func (s *Source) repo(ctx context.Context, pass ingestd.Pass, name string) (repoCursor, error) {
	key := cursorKey(name, "repo")
	var cur repoCursor
	if _, err := getJSON(ctx, pass, key, &cur); err != nil {
		return cur, err
	}
	etag := cur.ETag
	if cur.FullName == "" || cur.Visibility == "" {
		etag = ""
	}
	var r gh.Repository
	resp, err := s.api.get(ctx, "repos/"+name, etag, &r)
	switch {
	case errors.Is(err, errNotModified):
		return cur, nil
	case err != nil:
		return cur, fmt.Errorf("get repo %s: %w", name, err)
	}
	prevReaders := cur.Readers
	cur = repoCursor{ETag: resp.etag, FullName: r.GetFullName(), DefaultBranch: r.GetDefaultBranch(), HTMLURL: r.GetHTMLURL(),
		Visibility: visibility(&r), Readers: prevReaders}
	if cur.FullName == "" {
		cur.FullName = name
	}
	if cur.FullName != name {
		s.log.Info("github: repository moved", "installation", s.installation, "configured", name, "now", cur.FullName)
	}
	return cur, setJSON(ctx, pass, key, cur)
}

// listed is one element of a since-listing, decoded.
type listed struct {
	id      string // stable identity for the boundary set
	updated time.Time
	items   []ingestd.Item // empty: seen but not taken (excluded kind)
}

// listSince walks a since-listing from its cursor and Puts what changed.
func (s *Source) listSince(ctx context.Context, pass ingestd.Pass, key, path string, full bool, decode func(json.RawMessage) (listed, error)) error {
	var cur listCursor
	if !full {
		if _, err := getJSON(ctx, pass, key, &cur); err != nil {
			return err
		}
	}
	q := url.Values{}
	q.Set("sort", "updated")
	q.Set("direction", "asc")
	q.Set("per_page", strconv.Itoa(s.cfg.PerPage))
	if !cur.Since.IsZero() {
		q.Set("since", cur.Since.UTC().Format(time.RFC3339))
	}
	if strings.HasSuffix(path, "/issues") {
		q.Set("state", "all")
	}
	next := path + "?" + q.Encode()
	etag := cur.ETag
	newCur := listCursor{Since: cur.Since, Boundary: slices.Clone(cur.Boundary)}
	read := map[string]bool{}
	for first := true; next != ""; first = false {
		if s.api.again(read, next) {
			return fmt.Errorf("list %s: Link rel=next leads back to %s, a page already read", path, next)
		}
		var page []json.RawMessage
		resp, err := s.api.get(ctx, next, etag, &page)
		if first && errors.Is(err, errNotModified) {
			return nil // nothing changed since the last pass
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", path, err)
		}
		if first {
			newCur.ETag = resp.etag
			etag = ""
		}
		for _, raw := range page {
			l, err := decode(raw)
			if err != nil {
				pass.Fail(key, fmt.Errorf("decode %s element: %w", path, err))
				continue
			}
			if l.updated.Equal(cur.Since) && slices.Contains(cur.Boundary, l.id) {
				continue // seen at the boundary last pass
			}
			for _, it := range l.items {
				if err := pass.Put(ctx, it); err != nil {
					return passError{fmt.Errorf("put %s: %w", it.ExternalID, err)}
				}
			}
			switch {
			case l.updated.After(newCur.Since):
				newCur.Since, newCur.Boundary = l.updated, []string{l.id}
			case l.updated.Equal(newCur.Since) && !slices.Contains(newCur.Boundary, l.id):
				newCur.Boundary = append(newCur.Boundary, l.id)
			}
		}
		next = resp.next
	}
	return setJSON(ctx, pass, key, newCur)
}

func (s *Source) syncIssues(ctx context.Context, pass ingestd.Pass, r repoCursor, full bool) error {
	issues, pulls := on(s.cfg.Include.Issues), on(s.cfg.Include.Pulls)
	return s.listSince(ctx, pass, cursorKey(r.FullName, "issues"), "repos/"+r.FullName+"/issues", full, func(raw json.RawMessage) (listed, error) {
		var is gh.Issue
		if err := json.Unmarshal(raw, &is); err != nil {
			return listed{}, err
		}
		l := listed{id: strconv.Itoa(is.GetNumber()), updated: is.GetUpdatedAt().Time}
		if is.IsPullRequest() && !pulls || !is.IsPullRequest() && !issues {
			return l, nil
		}
		it := itemFromIssue(r.FullName, &is)
		if is.IsPullRequest() && is.GetState() == "closed" && is.PullRequestLinks.MergedAt == nil {
			// merged_at: null says "closed without merge"; an absent key
			// (older servers) says nothing, so no status is given.
			var pr struct {
				PR *struct {
					MergedAt json.RawMessage `json:"merged_at"`
				} `json:"pull_request"`
			}
			if json.Unmarshal(raw, &pr) == nil && pr.PR != nil && string(pr.PR.MergedAt) == "null" {
				it.Meta["merged"] = "false"
				it.Status = ingestd.StatusRejected
			}
		}
		l.items = []ingestd.Item{it}
		return l, nil
	})
}

func (s *Source) syncComments(ctx context.Context, pass ingestd.Pass, r repoCursor, full bool) error {
	return s.listSince(ctx, pass, cursorKey(r.FullName, "issue_comments"), "repos/"+r.FullName+"/issues/comments", full, func(raw json.RawMessage) (listed, error) {
		var c gh.IssueComment
		if err := json.Unmarshal(raw, &c); err != nil {
			return listed{}, err
		}
		it := itemFromComment(r.FullName, 0, &c)
		return listed{id: strconv.FormatInt(c.GetID(), 10), updated: c.GetUpdatedAt().Time, items: []ingestd.Item{it}}, nil
	})
}

func (s *Source) syncReviewComments(ctx context.Context, pass ingestd.Pass, r repoCursor, full bool) error {
	return s.listSince(ctx, pass, cursorKey(r.FullName, "review_comments"), "repos/"+r.FullName+"/pulls/comments", full, func(raw json.RawMessage) (listed, error) {
		var c gh.PullRequestComment
		if err := json.Unmarshal(raw, &c); err != nil {
			return listed{}, err
		}
		it := itemFromReviewComment(r.FullName, 0, &c)
		return listed{id: strconv.FormatInt(c.GetID(), 10), updated: c.GetUpdatedAt().Time, items: []ingestd.Item{it}}, nil
	})
}

// syncDocs takes the Markdown docs of the default branch: the recursive
// tree behind its ETag, then each doc whose blob sha changed.
func (s *Source) syncDocs(ctx context.Context, pass ingestd.Pass, r repoCursor, full bool) error {
	if r.DefaultBranch == "" {
		return nil // an empty repository has no branch
	}
	key := cursorKey(r.FullName, "docs")
	var cur docsCursor
	if _, err := getJSON(ctx, pass, key, &cur); err != nil {
		return err
	}
	etag := cur.ETag
	if full {
		etag = ""
	}
	var tree gh.Tree
	resp, err := s.api.get(ctx, "repos/"+r.FullName+"/git/trees/"+url.PathEscape(r.DefaultBranch)+"?recursive=1", etag, &tree)
	switch {
	case errors.Is(err, errNotModified):
		return nil
	case ingestd.ErrorCode(err) == ingestd.ENOTFOUND || resp.status == http.StatusConflict:
		return nil // no branch (404) or an empty repository (409): nothing to take
	case err != nil:
		return fmt.Errorf("get tree %s@%s: %w", r.FullName, r.DefaultBranch, err)
	}
	next := docsCursor{ETag: resp.etag, Blobs: map[string]string{}}
	for _, e := range tree.Entries {
		path, sha := e.GetPath(), e.GetSHA()
		if e.GetType() != "blob" || !isDocPath(s.cfg.DocsPaths, path) {
			continue
		}
		id := DocID(r.FullName, path)
		if !full && cur.Blobs[path] == sha {
			next.Blobs[path] = sha
			continue
		}
		if e.GetSize() > MaxDocBytes {
			pass.Fail(id, ingestd.Errorf(ingestd.ETOOLARGE, "%d bytes is over %d", e.GetSize(), MaxDocBytes))
			continue
		}
		var blob gh.Blob
		if _, err := s.api.get(ctx, "repos/"+r.FullName+"/git/blobs/"+sha, "", &blob); err != nil {
			if fatal(err) {
				return err
			}
			pass.Fail(id, err)
			if old, ok := cur.Blobs[path]; ok {
				next.Blobs[path] = old + "!" // keeps it listed, forces a re-fetch
			}
			continue
		}
		text, err := blobText(&blob)
		if err != nil {
			pass.Fail(id, err)
			continue
		}
		htmlURL := strings.TrimSuffix(r.HTMLURL, "/") + "/blob/" + r.DefaultBranch + "/" + path
		if err := pass.Put(ctx, itemFromDoc(r.FullName, path, htmlURL, sha, text)); err != nil {
			return passError{fmt.Errorf("put %s: %w", id, err)}
		}
		next.Blobs[path] = sha
	}
	if tree.GetTruncated() {
		// A truncated tree does not list every path: keep what it did
		// not show rather than tombstone it.
		for p, sha := range cur.Blobs {
			if _, ok := next.Blobs[p]; !ok {
				next.Blobs[p] = sha
			}
		}
		s.log.Warn("github: tree truncated; removed docs are not tombstoned", "installation", s.installation, "repo", r.FullName)
	} else {
		for p := range cur.Blobs {
			if _, ok := next.Blobs[p]; !ok {
				if err := pass.Delete(ctx, DocID(r.FullName, p)); err != nil {
					return passError{fmt.Errorf("delete %s: %w", DocID(r.FullName, p), err)}
				}
			}
		}
	}
	return setJSON(ctx, pass, key, next)
}

func blobText(b *gh.Blob) (string, error) {
	if b.GetEncoding() != "base64" {
		return b.GetContent(), nil
	}
	raw, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(b.GetContent(), "\n", ""))
	if err != nil {
		return "", fmt.Errorf("decode blob %s: %w", b.GetSHA(), err)
	}
	return string(raw), nil
}

// getJSON reads a cursor into v; found is false when unset or unreadable.
func getJSON(ctx context.Context, pass ingestd.Pass, key string, v any) (found bool, err error) {
	s, err := pass.Cursor(ctx, key)
	if err != nil {
		return false, passError{fmt.Errorf("cursor %s: %w", key, err)}
	}
	if s == "" {
		return false, nil
	}
	return json.Unmarshal([]byte(s), v) == nil, nil
}

func setJSON(ctx context.Context, pass ingestd.Pass, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := pass.SetCursor(ctx, key, string(b)); err != nil {
		return passError{fmt.Errorf("set cursor %s: %w", key, err)}
	}
	return nil
}
