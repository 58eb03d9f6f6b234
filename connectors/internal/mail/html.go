package mail

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTMLToText converts an HTML document (UTF-8; callers convert other
// charsets first) to readable text and returns its <title> separately.
// Script, style, head, template and noscript content is dropped; block
// elements start new lines (paragraphs and headings a blank line); list
// items become "- " lines indented by nesting; table cells are joined with
// " | "; links keep their text only; entities are decoded and runs of
// whitespace collapsed outside <pre>. Broken markup is repaired the way a
// browser would; markup x/net/html refuses (more than 512 open elements)
// is read token by token instead, as flat text. The only error is one from
// r.
func HTMLToText(r io.Reader) (title, text string, err error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return "", "", fmt.Errorf("read html: %w", err)
	}
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return flatText(data)
	}
	w := &textWriter{nl: 2}
	w.walk(doc)
	return w.title, strings.TrimSpace(w.b.String()), nil
}

// paragraphs are separated from their neighbours by a blank line; other
// block elements by a line break.
var paragraphs = map[atom.Atom]bool{
	atom.P: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
	atom.H5: true, atom.H6: true, atom.Blockquote: true, atom.Table: true,
	atom.Dl: true, atom.Hr: true, atom.Figure: true, atom.Address: true,
}

var blocks = map[atom.Atom]bool{
	atom.Div: true, atom.Section: true, atom.Article: true, atom.Header: true,
	atom.Footer: true, atom.Nav: true, atom.Main: true, atom.Aside: true,
	atom.Form: true, atom.Fieldset: true, atom.Caption: true, atom.Center: true,
	atom.Details: true, atom.Summary: true, atom.Figcaption: true, atom.Dt: true,
	atom.Dd: true, atom.Tr: true, atom.Body: true, atom.Legend: true,
	atom.Option: true, atom.Li: true, atom.Ul: true, atom.Ol: true, atom.Menu: true,
}

var dropped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Template: true, atom.Noscript: true,
	atom.Head: true, atom.Svg: true, atom.Math: true, atom.Iframe: true,
	atom.Object: true, atom.Select: true, atom.Textarea: true,
}

// maxListIndent caps the indentation of list items, in levels: each item
// repeats its depth, so without a cap a message of a hundred nested lists
// would come out about a hundred times its size as text.
const maxListIndent = 4

type textWriter struct {
	b     strings.Builder
	nl    int  // newlines at the end of b; 2 at the start so no leading ones
	space bool // a space is due before the next word
	title string
	pre   int // depth inside <pre>
	lists int // depth inside <ul>/<ol>
	cells int // cells written in the current table row
}

// walk writes n and what it holds: text as words (verbatim inside <pre>),
// elements through element.
func (w *textWriter) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		if w.pre > 0 {
			w.raw(n.Data)
		} else {
			w.words(n.Data)
		}
		return
	case html.ElementNode:
	case html.DocumentNode:
		w.children(n)
		return
	default:
		return
	}
	w.element(n)
}

// element writes an element: its title, nothing for a dropped one, or
// its children framed as the element's kind of block says.
func (w *textWriter) element(n *html.Node) {
	a := n.DataAtom
	switch {
	case a == atom.Head:
		if w.title == "" {
			w.title = findTitle(n)
		}
		return
	case a == atom.Title:
		if w.title == "" {
			w.title = collapse(textOf(n))
		}
		return
	case dropped[a]:
		return
	case a == atom.Br:
		w.lineBreak()
		return
	case a == atom.Pre:
		w.block(2)
		w.pre++
		w.children(n)
		w.pre--
		w.block(2)
		return
	case a == atom.Li:
		w.block(1)
		w.b.WriteString(strings.Repeat("  ", min(max(w.lists-1, 0), maxListIndent)) + "- ")
		w.nl, w.space = 0, false
		w.children(n)
		w.block(1)
		return
	case a == atom.Ul || a == atom.Ol || a == atom.Menu:
		w.block(1)
		w.lists++
		w.children(n)
		w.lists--
		w.block(1)
		return
	case a == atom.Tr:
		w.block(1)
		w.cells = 0
		w.children(n)
		w.block(1)
		return
	case a == atom.Td || a == atom.Th:
		if w.cells > 0 && w.nl == 0 {
			w.b.WriteString(" | ")
			w.space = false
		}
		w.cells++
		w.children(n)
		return
	case paragraphs[a]:
		w.block(2)
		w.children(n)
		w.block(2)
		return
	case blocks[a]:
		w.block(1)
		w.children(n)
		w.block(1)
		return
	}
	w.children(n)
}

func (w *textWriter) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
}

// words writes text with HTML whitespace collapsed.
func (w *textWriter) words(s string) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		if s != "" {
			w.space = true
		}
		return
	}
	if strings.TrimLeftFunc(s, unicode.IsSpace) != s {
		w.space = true
	}
	for i, f := range fields {
		if (i > 0 || w.space) && w.nl == 0 {
			w.b.WriteByte(' ')
		}
		w.b.WriteString(f)
		w.nl = 0
	}
	w.space = strings.TrimRightFunc(s, unicode.IsSpace) != s
}

// raw writes preformatted text as is.
func (w *textWriter) raw(s string) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if s == "" {
		return
	}
	w.b.WriteString(s)
	trimmed := strings.TrimRight(s, "\n")
	if trimmed == "" {
		w.nl += len(s)
	} else {
		w.nl = len(s) - len(trimmed)
	}
	w.space = false
}

// block ends the current line and makes sure n newlines end the text.
func (w *textWriter) block(n int) {
	w.space = false
	for w.nl < n {
		w.b.WriteByte('\n')
		w.nl++
	}
}

// lineBreak is <br>: a new line, and a blank one on a second <br>.
func (w *textWriter) lineBreak() {
	w.space = false
	if w.nl < 2 {
		w.b.WriteByte('\n')
		w.nl++
	}
}

func findTitle(n *html.Node) string {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.DataAtom == atom.Title {
			return collapse(textOf(c))
		}
	}
	return ""
}

// textOf concatenates the text under n, skipping script and style. It
// walks without recursion, however deep the tree.
func textOf(n *html.Node) string {
	var b strings.Builder
	stack := []*html.Node{n}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch {
		case n.Type == html.TextNode:
			b.WriteString(n.Data)
			b.WriteByte(' ')
		case n.Type == html.ElementNode && (n.DataAtom == atom.Script || n.DataAtom == atom.Style):
			continue
		}
		for c := n.LastChild; c != nil; c = c.PrevSibling {
			stack = append(stack, c)
		}
	}
	return b.String()
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

// flatText is the fallback of HTMLToText for markup the parser refuses:
// text tokens outside script and style, a line break at every tag that
// starts a block.
func flatText(data []byte) (title, text string, err error) {
	z := html.NewTokenizer(bytes.NewReader(data))
	w := &textWriter{nl: 2}
	skip := atom.Atom(0)
	inTitle := false
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			return w.title, strings.TrimSpace(w.b.String()), nil
		case html.TextToken:
			// The tokenizer passes NUL through; the parser drops it.
			text := strings.ReplaceAll(string(z.Text()), "\x00", "")
			switch {
			case skip != 0:
			case inTitle:
				w.title = collapse(w.title + " " + text)
			default:
				w.words(text)
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			start := tt != html.EndTagToken
			switch {
			case a == atom.Script || a == atom.Style:
				if start {
					skip = a
				} else if skip == a {
					skip = 0
				}
			case a == atom.Title:
				inTitle = start
			case a == atom.Br:
				w.lineBreak()
			case paragraphs[a] || blocks[a]:
				w.block(1)
			}
		}
	}
}
