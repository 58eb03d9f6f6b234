package mail_test

import (
	"strings"
	"testing"

	"github.com/ingestd/ingestd/connectors/internal/mail"
)

func TestHTMLToText(t *testing.T) {
	for _, tt := range []struct {
		name, html, title, text string
	}{
		{
			name:  "title and paragraphs",
			html:  "<html><head><title> The  Title </title><style>p{}</style></head><body><p>One\n two</p><p>Three</p></body></html>",
			title: "The Title",
			text:  "One two\n\nThree",
		},
		{
			name: "script dropped, entities decoded",
			html: "<div>a &amp; b&nbsp;&lt;c&gt;</div><script>alert('x')</script><noscript>no</noscript>",
			text: "a & b <c>",
		},
		{
			name: "links keep text",
			html: `<p>See <a href="https://example.com/x">the docs</a>.</p>`,
			text: "See the docs.",
		},
		{
			name: "lists",
			html: "<p>Steps:</p><ul><li>one</li><li>two<ol><li>two.a</li></ol></li></ul><p>after</p>",
			text: "Steps:\n\n- one\n- two\n  - two.a\n\nafter",
		},
		{
			name: "br and headings",
			html: "<h1>Head</h1>line1<br>line2<br><br>line3",
			text: "Head\n\nline1\nline2\n\nline3",
		},
		{
			name: "table",
			html: "<table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>",
			text: "k | v\na | 1",
		},
		{
			name: "pre keeps whitespace",
			html: "<p>code:</p><pre>x  = 1\n  y = 2</pre><p>end</p>",
			text: "code:\n\nx  = 1\n  y = 2\n\nend",
		},
		{
			name: "broken markup",
			html: "<div><p>unclosed <b>bold<div>next",
			text: "unclosed bold\n\nnext", // the div closes the p, as in a browser
		},
		{
			name: "deep nesting flattened",
			html: strings.Repeat("<div>", 5000) + "deep <b>text</b>" + strings.Repeat("</div>", 5000),
			text: "deep text",
		},
		{
			name: "inline elements do not break",
			html: "<p>a<span>b</span> <em>c</em></p>",
			text: "ab c",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			title, text, err := mail.HTMLToText(strings.NewReader(tt.html))
			if err != nil {
				t.Fatal(err)
			}
			if title != tt.title {
				t.Errorf("title = %q, want %q", title, tt.title)
			}
			if text != tt.text {
				t.Errorf("text = %q, want %q", text, tt.text)
			}
		})
	}
}
