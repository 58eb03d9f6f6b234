package fwbench

import (
	"fmt"
	"strings"

	"github.com/ingestd/ingestd"
)

// Mode is one way a client asks: the retrieval request it sends for a
// question.
type Mode struct {
	Name  string
	About string
	// Request builds the request for q.
	Request func(q Question) ingestd.RetrieveRequest
	// ActsOnView, when set and true for q, says the host acts on the
	// answer's trusted view (the request sets trusted_view): the turn's
	// tools follow the view's verdict and only the view's text can reach
	// a tool call; the answer's own blocks are quoted with their verdict
	// blocking. A plan-then-act host that keeps the two apart.
	ActsOnView func(q Question) bool
}

func boolp(b bool) *bool { return &b }

// Recommended names the mode README.md recommends; Goals bound it.
const Recommended = "recommended"

// Modes are the request modes the benchmark measures, in report order.
// "default" is what a client that sets nothing sends.
var Modes = []Mode{
	{Name: "default", About: "no options: top_k 8, expansion and the rejected block on",
		Request: func(q Question) ingestd.RetrieveRequest { return ingestd.RetrieveRequest{Query: q.Text} }},
	{Name: "top_k=5", About: "top_k 5",
		Request: func(q Question) ingestd.RetrieveRequest { return ingestd.RetrieveRequest{Query: q.Text, TopK: 5} }},
	{Name: "top_k=3", About: "top_k 3",
		Request: func(q Question) ingestd.RetrieveRequest { return ingestd.RetrieveRequest{Query: q.Text, TopK: 3} }},
	{Name: "primary_only", About: "top_k 8, expand false, include_rejected false",
		Request: func(q Question) ingestd.RetrieveRequest {
			return ingestd.RetrieveRequest{Query: q.Text, Expand: boolp(false), IncludeRejected: boolp(false)}
		}},
	{Name: "exclude_untrusted", About: "exclude_untrusted on every turn",
		Request: func(q Question) ingestd.RetrieveRequest {
			return ingestd.RetrieveRequest{Query: q.Text, ExcludeUntrusted: true}
		}},
	{Name: "auto", About: "grounding auto on every turn",
		Request: func(q Question) ingestd.RetrieveRequest {
			return ingestd.RetrieveRequest{Query: q.Text, Grounding: ingestd.GroundingAuto}
		}},
	{Name: Recommended, About: "grounding auto on every turn; tool turns also ask for trusted_view and act on it",
		Request: func(q Question) ingestd.RetrieveRequest {
			return ingestd.RetrieveRequest{Query: q.Text, Grounding: ingestd.GroundingAuto, TrustedView: q.Tool}
		},
		ActsOnView: func(q Question) bool { return q.Tool }},
	{Name: "exclude_on_tool_turns", About: "exclude_untrusted on tool turns only, as the retrieval package advises",
		Request: func(q Question) ingestd.RetrieveRequest {
			return ingestd.RetrieveRequest{Query: q.Text, ExcludeUntrusted: q.Tool}
		}},
}

// SelectModes returns the modes named in names (comma-separated), in
// report order; "" or "all" is every mode. An unknown name is an error
// that lists the known ones.
func SelectModes(names string) ([]Mode, error) {
	names = strings.TrimSpace(names)
	if names == "" || names == "all" {
		return Modes, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(names, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		found := false
		for _, m := range Modes {
			found = found || m.Name == n
		}
		if !found {
			return nil, fmt.Errorf("unknown mode %q (known: %s)", n, ModeNames())
		}
		want[n] = true
	}
	var out []Mode
	for _, m := range Modes {
		if want[m.Name] {
			out = append(out, m)
		}
	}
	return out, nil
}

// ModeNames lists the mode names, comma-separated.
func ModeNames() string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}
