package extract

import (
	"context"
	"strings"
	"testing"
)

// TestDOCXStructure reads small hand-written WordprocessingML bodies and
// checks the text and the locators they become.
func TestDOCXStructure(t *testing.T) {
	p := func(style, text string) string {
		pPr := ""
		if style != "" {
			pPr = `<w:pPr><w:pStyle w:val="` + style + `"/></w:pPr>`
		}
		return `<w:p>` + pPr + `<w:r><w:t xml:space="preserve">` + text + `</w:t></w:r></w:p>`
	}
	tests := []struct {
		name     string
		body     string
		want     string
		locators []string
	}{
		{"heading by style id without a styles part", p("Heading2", "Setup") + p("", "text"),
			"## Setup\n\ntext", []string{"Setup"}},
		{"heading by outline level", `<w:p><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:r><w:t>Top</w:t></w:r></w:p>` + p("", "a"),
			"# Top\n\na", []string{"Top"}},
		{"heading path", p("Heading1", "A") + p("Heading2", "B") + p("", "x") + p("Heading2", "C") + p("", "y") + p("Heading1", "D"),
			"# A\n\n## B\n\nx\n\n## C\n\ny\n\n# D", []string{"A", "A > B", "A > C", "D"}},
		{"text before the first heading has no locator", p("", "intro") + p("Heading1", "A"),
			"intro\n\n# A", []string{"", "A"}},
		{"tabs, breaks and hyphens", `<w:p><w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t><w:noBreakHyphen/><w:t>d</w:t></w:r></w:p>`,
			"a\tb\nc-d", nil},
		{"tracked deletion and field code left out", `<w:p><w:r><w:t>kept </w:t></w:r><w:del><w:r><w:delText>deleted </w:delText></w:r></w:del><w:ins><w:r><w:t>inserted </w:t></w:r></w:ins><w:r><w:instrText> PAGE </w:instrText></w:r><w:r><w:t>1</w:t></w:r></w:p>`,
			"kept inserted 1", nil},
		{"alternate content read once", `<w:p><w:r><mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><mc:Choice Requires="wps"><w:drawing><w:txbxContent><w:p><w:r><w:t>box</w:t></w:r></w:p></w:txbxContent></w:drawing></mc:Choice><mc:Fallback><w:pict><w:txbxContent><w:p><w:r><w:t>box</w:t></w:r></w:p></w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r><w:r><w:t>anchor</w:t></w:r></w:p>`,
			"anchor\n\nbox", nil},
		{"table with a pipe and a nested table", `<w:tbl><w:tr><w:tc>` + p("", "h1") + `</w:tc><w:tc>` + p("", "h|2") + `</w:tc></w:tr><w:tr><w:tc><w:tbl><w:tr><w:tc>` + p("", "in") + `</w:tc><w:tc>` + p("", "ner") + `</w:tc></w:tr></w:tbl></w:tc><w:tc>` + p("", "x") + `</w:tc></w:tr></w:tbl>` + p("", "after"),
			"| h1 | h\\|2 |\n|---|---|\n| in ner | x |\n\nafter", nil},
		{"a line that looks like a heading is escaped", p("", "# not a heading") + p("", "---"),
			"\\# not a heading\n\n\\---", nil},
		{"list without a numbering part is bulleted", `<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="3"/></w:numPr></w:pPr><w:r><w:t>one</w:t></w:r></w:p><w:p><w:pPr><w:numPr><w:ilvl w:val="1"/><w:numId w:val="3"/></w:numPr></w:pPr><w:r><w:t>two</w:t></w:r></w:p>` + p("", "after"),
			"- one\n  - two\n\nafter", nil},
		{"a byte-order mark inside the text dropped", p("", "a\ufeffbc"), "abc", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := extractBytes(context.Background(), DOCX, docxOf(t, tt.body), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Text(); got != tt.want {
				t.Errorf("text\n got %q\nwant %q", got, tt.want)
			}
			if tt.locators != nil {
				var got []string
				for _, s := range d.Sections {
					got = append(got, s.Locator)
				}
				if strings.Join(got, "|") != strings.Join(tt.locators, "|") {
					t.Errorf("locators %q, want %q", got, tt.locators)
				}
			}
		})
	}
}

// TestODTStructure reads small hand-written OpenDocument bodies.
func TestODTStructure(t *testing.T) {
	doc := func(body string) string {
		return `<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0">` +
			`<office:automatic-styles><text:list-style style:name="N" xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0"><text:list-level-style-number text:level="1" style:num-format="1"/></text:list-style></office:automatic-styles>` +
			`<office:body><office:text>` + body + `</office:text></office:body></office:document-content>`
	}
	tests := []struct {
		name, body, want string
	}{
		{"spaces, tabs and line breaks", `<text:p>a<text:s text:c="3"/>b<text:tab/>c<text:line-break/>d</text:p>`, "a   b\tc\nd"},
		{"numbered list continues across an interruption", `<text:list text:style-name="N"><text:list-item><text:p>one</text:p></text:list-item></text:list><text:p>between</text:p><text:list text:style-name="N" text:continue-numbering="true"><text:list-item><text:p>two</text:p></text:list-item></text:list>`,
			"1. one\n\nbetween\n\n2. two"},
		{"numbered list restarts", `<text:list text:style-name="N"><text:list-item><text:p>one</text:p></text:list-item></text:list><text:list text:style-name="N"><text:list-item><text:p>again</text:p></text:list-item></text:list>`,
			"1. one\n1. again"},
		{"frame anchored to the page", `<draw:frame><draw:text-box><text:p>boxed</text:p></draw:text-box></draw:frame><text:p>body</text:p>`, "boxed\n\nbody"},
		{"table of contents and tracked deletions left out", `<text:table-of-content><text:index-body><text:p>Heading 1 .... 3</text:p></text:index-body></text:table-of-content><text:tracked-changes><text:changed-region><text:deletion><text:p>gone</text:p></text:deletion></text:changed-region></text:tracked-changes><text:h text:outline-level="2">Real</text:h>`,
			"## Real"},
		{"covered cells add nothing", `<table:table><table:table-row><table:table-cell table:number-columns-spanned="2"><text:p>wide</text:p></table:table-cell><table:covered-table-cell/></table:table-row></table:table>`,
			"| wide |\n|---|"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := extractBytes(context.Background(), ODT, odtOf(t, doc(tt.body)), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Text(); got != tt.want {
				t.Errorf("text\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
