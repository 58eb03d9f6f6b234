package github

import (
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/ingestd/ingestd"
)

// Item kinds this connector (and the GitHub webhook flavour) emits.
const (
	KindIssue         = "issue"
	KindPullRequest   = "pull_request"
	KindComment       = "comment"
	KindReviewComment = "review_comment"
	KindDoc           = "doc"
)

// MetaAuthorAssociation is the Meta key carrying GitHub's author_association
// ("OWNER", "MEMBER", "COLLABORATOR", "CONTRIBUTOR", "NONE", ...) of an
// issue, pull request or comment. The installation's
// tier_by_author_association declaration is applied to it by the pipeline;
// the connector only reports the fact and never sets a tier.
const MetaAuthorAssociation = "author_association"

// IssueID is the external id of issue or pull request number in repo
// ("owner/name"): "owner/name#12". Issues and pull requests share GitHub's
// number space, so a cross-reference "#12" resolves to one id either way.
func IssueID(repo string, number int) string {
	return repo + "#" + strconv.Itoa(number)
}

// CommentID is the external id of an issue (or PR conversation) comment:
// "owner/name#12/comment/345".
func CommentID(repo string, number int, id int64) string {
	return IssueID(repo, number) + "/comment/" + strconv.FormatInt(id, 10)
}

// ReviewCommentID is the external id of a pull request review (diff)
// comment: "owner/name#12/review_comment/345".
func ReviewCommentID(repo string, number int, id int64) string {
	return IssueID(repo, number) + "/review_comment/" + strconv.FormatInt(id, 10)
}

// DocID is the external id of a file on the default branch: "owner/name:docs/a.md".
func DocID(repo, path string) string { return repo + ":" + path }

// itemFromIssue maps an issue — or a pull request as the issues API and
// issue webhooks show it (with a pull_request key) — to an item.
//
// Status: an issue closed with state_reason "not_planned" and a pull
// request closed without merge are StatusRejected (dismissed approaches);
// an issue or PR whose state_reason is "reopened" is StatusActive; anything
// else has no opinion (""), so a status a human gave is kept. A closed PR
// whose merge state the payload does not carry (old GitHub Enterprise
// servers omit pull_request.merged_at from issue listings) also gets no
// opinion: it is never marked rejected on a guess.
func itemFromIssue(repo string, is *gh.Issue) ingestd.Item {
	number := is.GetNumber()
	it := ingestd.Item{
		ExternalID: IssueID(repo, number),
		ItemKind:   KindIssue,
		URI:        is.GetHTMLURL(),
		Title:      is.GetTitle(),
		Author:     is.GetUser().GetLogin(),
		CreatedAt:  is.GetCreatedAt().Time,
		UpdatedAt:  is.GetUpdatedAt().Time,
		Format:     ingestd.FormatMarkdown,
		Text:       titleBody(is.GetTitle(), is.GetBody()),
		Meta:       issueMeta(repo, number, is.GetAuthorAssociation(), is.GetState(), is.GetStateReason(), labelNames(is.Labels)),
	}
	switch {
	case is.IsPullRequest():
		it.ItemKind = KindPullRequest
		if is.GetState() == "closed" && is.PullRequestLinks.MergedAt != nil {
			it.Meta["merged"] = "true"
		}
	case is.GetState() == "closed" && is.GetStateReason() == "not_planned":
		it.Status = ingestd.StatusRejected
	}
	if is.GetState() == "open" && is.GetStateReason() == "reopened" {
		it.Status = ingestd.StatusActive
	}
	it.Links = xrefLinks(repo, it.ExternalID, it.URI, is.GetBody())
	return it
}

// itemFromPullRequest maps a pull request as the pulls API and
// pull_request webhooks show it. A closed PR is StatusRejected unless it
// was merged (merged, or merged_at set); an open one has no opinion (the
// webhook sets StatusActive itself on "reopened").
func itemFromPullRequest(repo string, pr *gh.PullRequest) ingestd.Item {
	number := pr.GetNumber()
	labels := make([]string, 0, len(pr.Labels))
	for _, l := range pr.Labels {
		labels = append(labels, l.GetName())
	}
	it := ingestd.Item{
		ExternalID: IssueID(repo, number),
		ItemKind:   KindPullRequest,
		URI:        pr.GetHTMLURL(),
		Title:      pr.GetTitle(),
		Author:     pr.GetUser().GetLogin(),
		CreatedAt:  pr.GetCreatedAt().Time,
		UpdatedAt:  pr.GetUpdatedAt().Time,
		Format:     ingestd.FormatMarkdown,
		Text:       titleBody(pr.GetTitle(), pr.GetBody()),
		Meta:       issueMeta(repo, number, pr.GetAuthorAssociation(), pr.GetState(), "", labels),
	}
	if pr.GetState() == "closed" {
		merged := pr.GetMerged() || pr.MergedAt != nil
		it.Meta["merged"] = strconv.FormatBool(merged)
		if !merged {
			it.Status = ingestd.StatusRejected
		}
	}
	it.Links = xrefLinks(repo, it.ExternalID, it.URI, pr.GetBody())
	return it
}

// itemFromComment maps an issue (or PR conversation) comment. Its number
// comes from the comment's issue_url, or from number when that is > 0 (a
// webhook knows the issue). It links to its issue/PR with relation
// "parent" — a link, not ParentExternalID: a maintainer's reply is not
// derived from a stranger's issue, so it must not inherit its tier.
func itemFromComment(repo string, number int, c *gh.IssueComment) ingestd.Item {
	if number <= 0 {
		number = trailingNumber(c.GetIssueURL())
	}
	it := ingestd.Item{
		ExternalID: CommentID(repo, number, c.GetID()),
		ItemKind:   KindComment,
		URI:        c.GetHTMLURL(),
		Title:      "Comment on " + IssueID(repo, number),
		Author:     c.GetUser().GetLogin(),
		CreatedAt:  c.GetCreatedAt().Time,
		UpdatedAt:  c.GetUpdatedAt().Time,
		Format:     ingestd.FormatMarkdown,
		Text:       c.GetBody(),
		Meta:       commentMeta(repo, number, c.GetAuthorAssociation()),
	}
	it.Links = append([]ingestd.ItemLink{{ToExternalID: IssueID(repo, number), Relation: "parent"}},
		xrefLinks(repo, IssueID(repo, number), it.URI, c.GetBody())...)
	return it
}

// itemFromReviewComment maps a pull request review (diff) comment; like
// itemFromComment it links to its PR with relation "parent". The file path
// and line are in Meta, the diff hunk is not ingested (it is code, and the
// PR's own document covers the change).
func itemFromReviewComment(repo string, number int, c *gh.PullRequestComment) ingestd.Item {
	if number <= 0 {
		number = trailingNumber(c.GetPullRequestURL())
	}
	meta := commentMeta(repo, number, c.GetAuthorAssociation())
	if p := c.GetPath(); p != "" {
		meta["path"] = p
	}
	if l := c.GetLine(); l > 0 {
		meta["line"] = strconv.Itoa(l)
	} else if l := c.GetOriginalLine(); l > 0 {
		meta["line"] = strconv.Itoa(l)
	}
	it := ingestd.Item{
		ExternalID: ReviewCommentID(repo, number, c.GetID()),
		ItemKind:   KindReviewComment,
		URI:        c.GetHTMLURL(),
		Title:      "Review comment on " + IssueID(repo, number),
		Author:     c.GetUser().GetLogin(),
		CreatedAt:  c.GetCreatedAt().Time,
		UpdatedAt:  c.GetUpdatedAt().Time,
		Format:     ingestd.FormatMarkdown,
		Text:       c.GetBody(),
		Meta:       meta,
	}
	if p := c.GetPath(); p != "" {
		it.Title += " (" + p + ")"
	}
	it.Links = append([]ingestd.ItemLink{{ToExternalID: IssueID(repo, number), Relation: "parent"}},
		xrefLinks(repo, IssueID(repo, number), it.URI, c.GetBody())...)
	return it
}

// itemFromDoc maps a Markdown file of the default branch. Docs carry no
// author_association: they get the installation's declared tier.
func itemFromDoc(repo, path, htmlURL, sha, text string) ingestd.Item {
	title := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		title = path[i+1:]
	}
	return ingestd.Item{
		ExternalID: DocID(repo, path),
		ItemKind:   KindDoc,
		URI:        htmlURL,
		Title:      repo + ": " + title,
		Format:     ingestd.FormatMarkdown,
		Text:       text,
		Meta:       map[string]string{"repo": repo, "path": path, "sha": sha},
		Links:      xrefLinks(repo, "", htmlURL, text),
	}
}

func titleBody(title, body string) string {
	body = strings.TrimSpace(body)
	if body == "" {
		return title
	}
	return title + "\n\n" + body
}

func issueMeta(repo string, number int, assoc, state, reason string, labels []string) map[string]string {
	m := map[string]string{"repo": repo, "number": strconv.Itoa(number), "state": state}
	if assoc != "" {
		m[MetaAuthorAssociation] = assoc
	}
	if reason != "" {
		m["state_reason"] = reason
	}
	if len(labels) > 0 {
		m["labels"] = strings.Join(labels, ",")
	}
	return m
}

func commentMeta(repo string, number int, assoc string) map[string]string {
	m := map[string]string{"repo": repo, "number": strconv.Itoa(number)}
	if assoc != "" {
		m[MetaAuthorAssociation] = assoc
	}
	return m
}

func labelNames(ls []*gh.Label) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.GetName())
	}
	return out
}

// trailingNumber returns the number at the end of an API or HTML URL
// (".../issues/187"), 0 when there is none.
func trailingNumber(u string) int {
	u = strings.TrimRight(u, "/")
	n, _ := strconv.Atoi(u[strings.LastIndexByte(u, '/')+1:])
	return n
}

// urlRef matches issue and pull request URLs on any host.
var urlRef = regexp.MustCompile(`https?://([^/\s]+)/([\w.-]+/[\w.-]+)/(?:issues|pull)/(\d+)\b`)

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// shortRefs calls add for each "#123" and "owner/name#123" in text. A
// "#" preceded by a word character or "&" (an HTML entity) is not a
// reference, nor is one inside a URL ("x.io/page#12").
func shortRefs(text string, add func(repo, num string)) {
	for off := 0; ; {
		i := strings.IndexByte(text[off:], '#')
		if i < 0 {
			return
		}
		i += off
		off = i + 1
		j := i + 1
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		if j == i+1 || j < len(text) && isWord(text[j]) {
			continue
		}
		start := i
		for start > 0 && (isWord(text[start-1]) || text[start-1] == '.' || text[start-1] == '-' || text[start-1] == '/') {
			start--
		}
		seg := text[start:i]
		if start > 0 && text[start-1] == '&' {
			continue
		}
		if seg == "" {
			add("", text[i+1:j])
			continue
		}
		owner, name, ok := strings.Cut(seg, "/")
		if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			continue
		}
		add(seg, text[i+1:j])
	}
}

// xrefLinks returns "xref" links for the cross-references in text that
// point into the same repo: "#123", "owner/name#123" and issue/PR URLs on
// the host of selfURL. self is left out, duplicates once.
func xrefLinks(repo, self, selfURL, text string) []ingestd.ItemLink {
	host := ""
	if u, err := url.Parse(selfURL); err == nil {
		host = strings.ToLower(u.Host)
	}
	seen := map[string]bool{}
	add := func(r, num string) {
		if !strings.EqualFold(r, repo) {
			return
		}
		n, err := strconv.Atoi(num)
		if err != nil || n <= 0 {
			return
		}
		id := IssueID(repo, n)
		if id != self {
			seen[id] = true
		}
	}
	shortRefs(text, func(r, num string) {
		if r == "" {
			r = repo
		}
		add(r, num)
	})
	if !strings.Contains(text, "/issues/") && !strings.Contains(text, "/pull/") {
		return sortedLinks(seen)
	}
	for _, m := range urlRef.FindAllStringSubmatch(text, -1) {
		if host != "" && strings.ToLower(m[1]) != host {
			continue
		}
		add(m[2], m[3])
	}
	return sortedLinks(seen)
}

func sortedLinks(seen map[string]bool) []ingestd.ItemLink {
	if len(seen) == 0 {
		return nil
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]ingestd.ItemLink, len(ids))
	for i, id := range ids {
		out[i] = ingestd.ItemLink{ToExternalID: id, Relation: "xref"}
	}
	return out
}
