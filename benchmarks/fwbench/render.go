package fwbench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteText writes the report as a table a person reads: the corpus, one
// row per mode, and the goals.
func (r *Report) WriteText(w io.Writer) error {
	c := r.Corpus
	var b strings.Builder
	fmt.Fprintf(&b, "firewall usefulness: %d documents in %d installations, %d planted injections, %d questions; firewall %s\n",
		c.Documents, len(c.Installations), c.Injections, c.Questions, r.FirewallMode)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, in := range c.Installations {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d documents\t%d rejected\t%s\n", in.ID, in.Kind, in.Tier, in.Documents, in.Rejected, in.About)
	}
	tw.Flush()
	fmt.Fprintf(&b, "questions: %d internal-only (%d tool turns), %d need an external document (%d tool turns), %d ambiguous (%d tool turns)\n\n",
		c.ByClass[ClassInternal], c.ToolTurns[ClassInternal], c.ByClass[ClassExternal], c.ToolTurns[ClassExternal],
		c.ByClass[ClassAmbiguous], c.ToolTurns[ClassAmbiguous])

	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tinjection\tneedless blocks\tneedless blocks\trecall\trecall\tutility loss\tambiguous\tneedless blocks: untrusted in\tfirst untrusted in primary")
	fmt.Fprintln(tw, "\treach\tinternal-only\tinternal tool turns\tinternal\texternal\tneeds-external\tblocked\tprimary/expanded/rejected\trank, score/top (medians)")
	rows := r.Modes
	if len(r.Holdout) > 0 {
		rows = append(slices.Clone(rows), r.Holdout...)
	}
	for _, f := range rows {
		rank := "-"
		if f.FirstUntrustedRankMedian > 0 {
			rank = fmt.Sprintf("%g, %.2f", f.FirstUntrustedRankMedian, f.ScoreRatioMedian)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.2f\t%.2f\t%s\t%s\t%d/%d/%d\t%s\n",
			f.Mode, f.InjectionReach, pct(f.NeedlessBlock), pct(f.NeedlessBlockTool),
			f.RecallInternal, f.RecallExternal, pct(f.UtilityLoss), pct(f.AmbiguousBlocked),
			f.NeedlessVia[BlockPrimary], f.NeedlessVia[BlockExpanded], f.NeedlessVia[BlockRejected], rank)
	}
	tw.Flush()
	b.WriteString("\nA needless block is an internal-only question whose verdict blocks tools. Recall is the share of a\n" +
		"question's needed documents served in any block, averaged per class. Utility loss: needs-external\n" +
		"questions whose needed external document was not served. score/top: the first untrusted chunk's\n" +
		"fused score over the top chunk's.\n")
	for _, f := range r.Modes {
		if f.GroundedExternal > 0 {
			fmt.Fprintf(&b, "%s: %d answers from trusted documents only, %d with the external documents grounding auto let in.\n",
				f.Mode, f.GroundedTrusted, f.GroundedExternal)
		}
		if f.ActedOnView > 0 {
			fmt.Fprintf(&b, "%s: %d tool turns acted on the trusted view (tools and injection reach judged by the view's verdict\n"+
				"  and blocks); %d of them quoted injected text in the answer, under the answer's verdict, which blocks.\n",
				f.Mode, f.ActedOnView, f.QuotedInjection)
		}
	}
	if len(r.Holdout) > 0 {
		b.WriteString("The even/odd rows split the recommended mode's questions by number (on the built-in corpus its rules\n" +
			"were chosen on even ids; odd ids are held out).\n")
	}
	b.WriteString("\ngoals:\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	measured := map[string]bool{}
	for _, g := range r.Goals {
		measured[g.Mode+"|"+string(g.Metric)] = true
		state := "met"
		if !g.Met {
			state = "MISSED"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%g\n", state, g.Measured, g.Metric, bound(g.Goal), g.Value)
	}
	for _, g := range Goals {
		if !measured[g.Mode+"|"+string(g.Metric)] {
			fmt.Fprintf(tw, "  -\t%s\t%s\t%s\tnot measured: no such mode\n", g.Mode, g.Metric, bound(g))
		}
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

func pct(r Rate) string {
	if r.Of == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d %.0f%%", r.N, r.Of, 100*r.Rate)
}

func bound(g Goal) string {
	if g.AtMost {
		return fmt.Sprintf("<= %g", g.Bound)
	}
	return fmt.Sprintf(">= %g", g.Bound)
}
