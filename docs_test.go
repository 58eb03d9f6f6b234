package ingestd_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink is an inline Markdown link or image: [text](target) or
// [text](target "title").
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinksResolve: every relative link in the repository's Markdown
// (README, docs/, examples/; not testdata, which holds inputs) names a
// file or folder that exists, and every #fragment names a heading of the
// page it points to, as GitHub makes its anchors. A page moved or a
// heading renamed breaks the test instead of a reader's click.
func TestDocLinksResolve(t *testing.T) {
	pages := map[string]bool{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && p != ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			pages[p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !pages["README.md"] {
		t.Fatal("README.md not found: run from the module root")
	}
	anchors := map[string]map[string]bool{}
	for page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(stripCode(string(b)), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.Join(filepath.Dir(page), file)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %q: no such file %s", page, i+1, target, dest)
						continue
					}
				}
				if frag == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				if anchors[dest] == nil {
					anchors[dest] = headingAnchors(t, dest)
				}
				if !anchors[dest][frag] {
					t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", page, i+1, target, dest, frag)
				}
			}
		}
	}
}

// fence matches a fenced code block; codeSpan an inline one. Links inside
// code are examples, not links.
var (
	fence    = regexp.MustCompile("(?ms)^\\s*```.*?^\\s*```")
	codeSpan = regexp.MustCompile("`[^`\n]*`")
)

// stripCode blanks code blocks and spans, keeping the line count.
func stripCode(s string) string {
	s = fence.ReplaceAllStringFunc(s, func(b string) string { return strings.Repeat("\n", strings.Count(b, "\n")) })
	return codeSpan.ReplaceAllString(s, "")
}

// headingAnchors is the set of anchors GitHub makes for a page's headings:
// lower case, punctuation other than '-' and '_' dropped, spaces to '-',
// a repeated anchor suffixed -1, -2, …
func headingAnchors(t *testing.T, page string) map[string]bool {
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	out := map[string]bool{}
	for _, line := range strings.Split(stripFences(string(b)), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := slug(h)
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// stripFences blanks fenced code blocks only (a heading keeps its code
// spans' text).
func stripFences(s string) string {
	return fence.ReplaceAllStringFunc(s, func(b string) string { return strings.Repeat("\n", strings.Count(b, "\n")) })
}

func slug(h string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			sb.WriteRune('-')
		case r == '-' || r == '_':
			sb.WriteRune(r)
		case unicode.IsLetter(r), unicode.IsDigit(r):
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// userDocs are the pages a user reads to run ingestd (the others,
// DESIGN, SECURITY and BENCHMARKS, are for developing it and may cite
// the issues their rows came from).
var userDocs = []string{"README.md", "docs/configuration.md", "docs/api.md", "docs/mcp.md", "docs/operations.md",
	"docs/upgrading.md", "docs/people.md", "docs/gateway.md", "docs/development.md"}

// issueRef is a mention of this project's issue tracker: "issue 17",
// "(issue 26)", an anchor like "#sync-health-issue-19".
var issueRef = regexp.MustCompile(`(?i)\bissues? \d+\b|-issue-\d+\b`)

// TestUserDocsNameNoIssues: the pages a user reads say what ingestd does,
// not which issue brought it; a reader outside the project cannot follow
// "(issue 31)".
func TestUserDocsNameNoIssues(t *testing.T) {
	readmes, err := filepath.Glob("connectors/*/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range append(slices.Clone(userDocs), readmes...) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := issueRef.FindString(line); m != "" {
				t.Errorf("%s:%d: names an issue (%q): say what it does instead", page, i+1, m)
			}
		}
	}
}
