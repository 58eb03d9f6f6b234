package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/terminal"
)

// TestRenderSearchToolClasses: `ingestd search` says which tool classes
// the verdict allows, per condition; a verdict from an older server
// (no classes) shows what its tools_allowed means.
func TestRenderSearchToolClasses(t *testing.T) {
	ids := []string{"d1"}
	for _, tt := range []struct {
		name string
		v    ingestd.Verdict
		want string
	}{
		{"clean", ingestd.Verdict{ToolsAllowed: true, Mode: "enforce", Reason: ingestd.ReasonNoUntrusted, AllowedToolClasses: ingestd.AllToolClasses()}, "tool classes allowed: read, read_open, write\n"},
		{"untrusted", ingestd.Verdict{Mode: "enforce", Reason: ingestd.ReasonUntrusted, UntrustedDocumentIDs: ids, WouldBlock: true, AllowedToolClasses: ingestd.ToolClasses{ingestd.ToolRead}}, "tool classes allowed: read (closed-world reads only)\n"},
		{"unknown provenance", ingestd.Verdict{Mode: "enforce", Reason: ingestd.ReasonUnknownProvenance, UntrustedDocumentIDs: ids, WouldBlock: true, AllowedToolClasses: ingestd.ToolClasses{}}, "tool classes allowed: none\n"},
		{"shadow", ingestd.Verdict{ToolsAllowed: true, Mode: "shadow", Reason: ingestd.ReasonUntrusted, UntrustedDocumentIDs: ids, WouldBlock: true, AllowedToolClasses: ingestd.AllToolClasses()}, "tool classes allowed: read, read_open, write\n"},
		{"older server, blocked", ingestd.Verdict{Mode: "enforce", Reason: ingestd.ReasonUntrusted, UntrustedDocumentIDs: ids, WouldBlock: true}, "tool classes allowed: none\n"},
	} {
		resp := *renderFixture
		resp.Verdict = &tt.v
		var buf bytes.Buffer
		renderSearch(terminal.New(&buf), &resp, renderOptions{})
		if out := buf.String(); !strings.Contains(out, tt.want) {
			t.Errorf("%s: output lacks %q:\n%s", tt.name, tt.want, out)
		}
	}
}
