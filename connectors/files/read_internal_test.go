package files

import "testing"

func TestMarkdownTitle(t *testing.T) {
	for _, tt := range []struct {
		name, text, want string
	}{
		{name: "atx", text: "intro\n\n# Title #\n\n## Sub", want: "Title"},
		{name: "h2 only", text: "## Sub\n\ntext", want: ""},
		{name: "in code fence", text: "```\n# comment\n```\n# Real", want: "Real"},
		{name: "tilde fence", text: "~~~\n# comment\n~~~", want: ""},
		{name: "front matter", text: "---\ntitle: 'Front'\n---\n# Heading", want: "Front"},
		{name: "front matter without title", text: "---\nowner: x\n---\n# Heading", want: "Heading"},
		{name: "setext", text: "Setext Title\n============\n\nbody", want: "Setext Title"},
		{name: "hashtag is not a heading", text: "#tag\nbody", want: ""},
		{name: "empty", text: "", want: ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := markdownTitle(tt.text); got != tt.want {
				t.Errorf("markdownTitle = %q, want %q", got, tt.want)
			}
		})
	}
}
