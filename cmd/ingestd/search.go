package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
	"github.com/ingestd/ingestd/internal/cli"
	"github.com/ingestd/ingestd/internal/terminal"
	"github.com/ingestd/ingestd/provenance"
)

// searchFlags are search's flags: one for every field of a retrieve
// request, and how to print the answer.
type searchFlags struct {
	cfgPath, insts, tiers, kinds, grounding, requestID *string
	asUser                                             *string
	asJSON, fenced, exclude, noExpand, noRejected      *bool
	trustedView                                        *bool
	topK                                               *int
}

func newSearchFlags(fs *flag.FlagSet, e *env) *searchFlags {
	return &searchFlags{
		cfgPath:     configFlag(fs, e),
		asJSON:      fs.Bool("json", false, "print exactly the POST /v1/retrieve response"),
		insts:       fs.String("installations", "", "comma-separated installation ids to search (default all)"),
		topK:        fs.Int("top-k", 8, "primary chunks to return (1..100)"),
		fenced:      fs.Bool("fenced", false, "print each chunk's fenced text, as a model would read it"),
		exclude:     fs.Bool("exclude-untrusted", false, "leave untrusted documents out of all blocks"),
		noExpand:    fs.Bool("no-expand", false, "skip the expanded block"),
		noRejected:  fs.Bool("no-rejected", false, "skip the rejected block (dismissed approaches)"),
		tiers:       fs.String("tiers", "", "comma-separated tiers in force to search (default all)"),
		kinds:       fs.String("source-kinds", "", "comma-separated connector kinds to search (default all)"),
		grounding:   fs.String("grounding", "", "all (rank every tier together) or auto (untrusted text only when it answers better)"),
		trustedView: fs.Bool("trusted-view", false, "also answer with the blocks exclude_untrusted would serve, and their own verdict"),
		requestID:   fs.String("request-id", "", "an id carried into the firewall log"),
		asUser:      fs.String("as-user", "", "answer as this person (user:<address>) may read: their documents, their groups', public ones"),
	}
}

// request is the retrieve request the flags and the query ask for, or a
// usage error naming the flag out of range.
func (f *searchFlags) request(query string) (ingestd.RetrieveRequest, error) {
	if *f.topK < 1 || *f.topK > ingestd.MaxTopK {
		return ingestd.RetrieveRequest{}, &usageError{Cmd: "search", Msg: fmt.Sprintf("--top-k %d: want a whole number from 1 to %d", *f.topK, ingestd.MaxTopK)}
	}
	switch *f.grounding {
	case "", ingestd.GroundingAll, ingestd.GroundingAuto:
	default:
		return ingestd.RetrieveRequest{}, &usageError{Cmd: "search", Msg: fmt.Sprintf("--grounding %q is not one of all, auto", *f.grounding)}
	}
	expand, rejected := !*f.noExpand, !*f.noRejected
	return ingestd.RetrieveRequest{
		Query:            query,
		TopK:             *f.topK,
		Installations:    cli.SplitList(*f.insts),
		Tiers:            cli.SplitList(*f.tiers),
		SourceKinds:      cli.SplitList(*f.kinds),
		Expand:           &expand,
		IncludeRejected:  &rejected,
		ExcludeUntrusted: *f.exclude,
		RequestID:        *f.requestID,
		Grounding:        *f.grounding,
		TrustedView:      *f.trustedView,
		Principal:        *f.asUser,
	}, nil
}

func runSearch(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	f := newSearchFlags(fs, e)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return &usageError{Cmd: "search", Msg: "want a query"}
	}
	req, err := f.request(strings.Join(pos, " "))
	if err != nil {
		return err
	}
	a, err := openApp(ctx, e, *f.cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	svc, err := a.Retrieval(nil)
	if err != nil {
		return err
	}
	// The operator's view, through the one scope check: --as-user
	// narrows it to what that person may read.
	op := access.Operator()
	op.Groups = a.cfg.Membership()
	resp, err := access.NewRetriever(svc).Retrieve(access.NewContext(ctx, op), req)
	if ingestd.ErrorCode(err) == ingestd.EINVALID {
		// The request came from the command line: an installation that is
		// not configured, a --top-k out of range.
		return &usageError{Cmd: "search", Msg: ingestd.ErrorMessage(err)}
	}
	if err != nil {
		return err
	}
	if *f.asJSON {
		return writeIndented(e.stdout, resp)
	}
	o := renderOptions{color: e.stdout.IsTTY(), fenced: *f.fenced}
	renderSearch(e.stdout, resp, o)
	if tv := resp.TrustedView; tv != nil {
		e.stdout.Printf("\ntrusted view (what exclude_untrusted serves, with its own verdict):\n")
		renderSearch(e.stdout, &ingestd.RetrieveResponse{Primary: tv.Primary, Expanded: tv.Expanded, Rejected: tv.Rejected,
			Verdict: tv.Verdict, ExcludedUntrustedDocuments: tv.ExcludedUntrustedDocuments}, o)
	}
	return nil
}

// renderOptions says how renderSearch prints.
type renderOptions struct {
	color  bool // ANSI colours, for a terminal
	fenced bool // each chunk's fenced text under it
}

// snippetRunes is how much of a chunk's text a row shows.
const snippetRunes = 100

// renderSearch prints a response for people: the three blocks, each row
// with its title and locator ("p. 3"), tier in force, score and document
// id (the ids the verdict names), its URI and a one-line snippet of its
// display text, then the verdict. With fenced it prints the fenced text
// as stored, never unfenced. Stored values go through the terminal's
// escape, each on one line, so no document can drive the terminal,
// reorder what it shows or forge a row. Write errors are ignored, as for
// fmt.Fprintf.
func renderSearch(w *terminal.Terminal, resp *ingestd.RetrieveResponse, o renderOptions) {
	paint := func(code, s string) { w.Paint(o.color, code, s) }
	blocks := []struct {
		name   string
		chunks []ingestd.ServedChunk
	}{{"primary", resp.Primary}, {"expanded", resp.Expanded}, {"rejected", resp.Rejected}}
	if resp.Grounding == ingestd.GroundedNothing {
		w.Printf("nothing in the corpus matches the query: no word of it is indexed and no chunk is similar enough\n")
	}
	for _, b := range blocks {
		paint(terminal.Bold, b.name)
		w.Printf(" (%d)\n", len(b.chunks))
		for i, c := range b.chunks {
			renderChunk(w, i, c, o)
		}
	}
	renderVerdict(w, resp, o)
}

// renderChunk prints one served chunk: its row, URI, snippet and, with
// o.fenced, its fenced text.
func renderChunk(w *terminal.Terminal, i int, c ingestd.ServedChunk, o renderOptions) {
	paint := func(code, s string) { w.Paint(o.color, code, s) }
	title := c.Title
	if title == "" {
		title = "(no title)"
	}
	tierColour := terminal.Green
	switch {
	case c.Tier == provenance.Undeclared:
		tierColour = terminal.Yellow
	case provenance.Untrusted(ingestd.Tier(c.Tier)):
		tierColour = terminal.Red
	}
	if c.Locator != "" {
		title += " · " + c.Locator
	}
	w.Printf("  %2d. %s  [", i+1, title)
	paint(tierColour, c.Tier)
	w.Printf("]  %.4f  %s", c.Score, c.DocumentID)
	if c.Via != "" {
		w.Printf("  via %s", c.Via)
	}
	w.Println()
	if c.URI != "" {
		w.Printf("      ")
		paint(terminal.Dim, c.URI)
		w.Println()
	}
	if sn := snippet(c.Text, snippetRunes); sn != "" {
		w.Printf("      %s\n", sn)
	}
	if o.fenced {
		for _, line := range strings.Split(strings.TrimRight(c.Fenced, "\n"), "\n") {
			w.Printf("      %s\n", line)
		}
	}
}

// renderVerdict prints the verdict; an answer without one allows no tool.
func renderVerdict(w *terminal.Terminal, resp *ingestd.RetrieveResponse, o renderOptions) {
	paint := func(code, s string) { w.Paint(o.color, code, s) }
	v := resp.Verdict
	if v == nil { // an answer whose verdict could not be read allows nothing
		paint(terminal.Bold, "verdict")
		w.Printf(": ")
		paint(terminal.Red, "tools BLOCKED")
		w.Printf(" (the answer carried none)\n")
		return
	}
	paint(terminal.Bold, "verdict")
	w.Printf(": ")
	if v.ToolsAllowed {
		paint(terminal.Green, "tools allowed")
	} else {
		paint(terminal.Red, "tools BLOCKED")
	}
	w.Printf(" (mode %s, reason %s", v.Mode, v.Reason)
	if v.WouldBlock && v.ToolsAllowed {
		w.Printf(", ")
		paint(terminal.Yellow, "would block in enforce")
	}
	w.Println(")")
	w.Printf("  tool classes allowed: %s\n", toolClassesText(v))
	if len(v.UntrustedDocumentIDs) > 0 {
		w.Printf("  untrusted documents: %s\n", strings.Join(v.UntrustedDocumentIDs, ", "))
	}
	if n := resp.ExcludedUntrustedDocuments; n > 0 {
		w.Printf("  left out by exclude_untrusted: %s\n", plural(n, "document"))
	}
}

// snippet is text on one line: runs of white space become one space,
// and past max runes it is cut at a word boundary when one is near,
// ending in "…". Printing it escapes what it holds (see terminal).
func snippet(text string, max int) string {
	s := strings.Join(strings.Fields(text), " ")
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	cut := max - 1
	if sp := strings.LastIndexByte(string(r[:cut]), ' '); sp > 0 && utf8.RuneCountInString(string(r[:cut])[:sp]) > max*3/4 {
		return string(r[:cut])[:sp] + "…"
	}
	return string(r[:cut]) + "…"
}
