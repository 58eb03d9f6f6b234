package retrieval

import (
	"fmt"
	"io"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

// RenderOptions says how Render prints.
type RenderOptions struct {
	// Color uses ANSI colours (for a terminal).
	Color bool
	// ShowFenced prints each chunk's fenced text under it.
	ShowFenced bool
}

const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

// Render prints a response for people: the three blocks (title, tier,
// score, uri, and the fenced text on request) and the verdict. The fenced
// text is printed as stored, never unfenced; titles and URIs are printed
// with control characters made visible so a stored value cannot drive the
// terminal. An answer without a verdict prints as blocked. Write errors
// are ignored, as for fmt.Fprintf.
func Render(w io.Writer, resp *ingestd.RetrieveResponse, o RenderOptions) {
	paint := func(code, s string) string {
		if !o.Color {
			return s
		}
		return code + s + ansiReset
	}
	blocks := []struct {
		name   string
		chunks []ingestd.ServedChunk
	}{{"primary", resp.Primary}, {"expanded", resp.Expanded}, {"rejected", resp.Rejected}}
	for _, b := range blocks {
		fmt.Fprintf(w, "%s (%d)\n", paint(ansiBold, b.name), len(b.chunks))
		for i, c := range b.chunks {
			title := c.Title
			if title == "" {
				title = c.DocumentID
			}
			tier := c.Tier
			tierColour := ansiGreen
			switch {
			case tier == provenance.Undeclared:
				tierColour = ansiYellow
			case provenance.Untrusted(ingestd.Tier(tier)):
				tierColour = ansiRed
			}
			fmt.Fprintf(w, "  %2d. %s  [%s]  %.4f", i+1, visible(title), paint(tierColour, tier), c.Score)
			if c.Via != "" {
				fmt.Fprintf(w, "  via %s", visible(c.Via))
			}
			fmt.Fprintln(w)
			if c.URI != "" {
				fmt.Fprintf(w, "      %s\n", paint(ansiDim, visible(c.URI)))
			}
			if o.ShowFenced {
				for _, line := range strings.Split(strings.TrimRight(c.Fenced, "\n"), "\n") {
					fmt.Fprintf(w, "      %s\n", visible(line))
				}
			}
		}
	}
	v := resp.Verdict
	if v == nil {
		fmt.Fprintf(w, "%s: %s (the answer carried none)\n", paint(ansiBold, "verdict"), paint(ansiRed, "tools BLOCKED"))
		return
	}
	tools := paint(ansiGreen, "tools allowed")
	if !v.ToolsAllowed {
		tools = paint(ansiRed, "tools BLOCKED")
	}
	fmt.Fprintf(w, "%s: %s (mode %s, reason %s", paint(ansiBold, "verdict"), tools, v.Mode, v.Reason)
	if v.WouldBlock {
		fmt.Fprintf(w, ", %s", paint(ansiYellow, "would block in enforce"))
	}
	fmt.Fprintln(w, ")")
	if len(v.UntrustedDocumentIDs) > 0 {
		fmt.Fprintf(w, "  untrusted documents: %s\n", strings.Join(v.UntrustedDocumentIDs, ", "))
	}
	if resp.ExcludedUntrustedDocuments > 0 {
		fmt.Fprintf(w, "  left out by exclude_untrusted: %d documents\n", resp.ExcludedUntrustedDocuments)
	}
}

// visible replaces control characters with their escaped form.
func visible(s string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return '?'
		}
		return r
	}, s)
}
