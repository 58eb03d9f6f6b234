package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/terminal"
)

func runProvenance(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("provenance", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	asJSON := fs.Bool("json", false, "print the report as JSON (the shape of GET /v1/provenance)")
	perInst := fs.Bool("per-installation", false, "break the report down by installation and tier")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	// The report serve answers on GET /v1/provenance, by the same
	// declaration in force: the installations of this configuration.
	svc, err := a.Retrieval(nil)
	if err != nil {
		return err
	}
	r, err := svc.Provenance(ctx, ingestd.ProvenanceRequest{})
	if err != nil {
		return err
	}
	if *asJSON {
		return writeIndented(e.stdout, r)
	}
	printReport(e.stdout, r, *perInst)
	return nil
}

func printReport(w *terminal.Terminal, r ingestd.ProvenanceReport, perInst bool) {
	w.Printf("%s; %d written outside the organisation (%.1f%%); firewall mode: %s\n",
		plural(r.Total, "document"), r.ExternallyAuthored, r.ExternallyAuthoredPct, r.Policy.FirewallMode)
	if cs := r.Policy.UntrustedTurnToolClasses; cs != nil {
		w.Printf("policy: a turn that served untrusted text may use tool classes: %s\n",
			toolClassesText(&ingestd.Verdict{AllowedToolClasses: cs}))
	}
	w.Printf("declared: %d, undeclared: %d, orphaned: %d\n", r.Declared, r.Undeclared, r.Orphaned)
	if r.Orphaned > 0 {
		w.Printf("note: %d documents belong to an installation that is no longer configured (or now has another kind): they count as %s.\n",
			r.Orphaned, ingestd.TierUntrustedExternal)
	}
	w.Println()
	tb := w.Table("", "TIER", "DOCUMENTS", "SHARE")
	for _, t := range r.Tiers {
		tb.Row(t.Tier, t.Count, fmt.Sprintf("%.1f%%", t.Pct))
	}
	_ = tb.Flush()
	w.Println()
	tb = w.Table("", "INSTALLATION", "KIND", "DECLARED TIER", "DOCUMENTS")
	for _, in := range r.Installations {
		tier := dash(in.Tier)
		if in.Kind == "" {
			tier = "not configured"
		}
		tb.Row(in.ID, dash(in.Kind), tier, in.Documents)
		if perInst {
			for _, t := range in.Tiers {
				tb.Row("  └ "+t.Tier, "", "", fmt.Sprintf("%d (%.1f%%)", t.Count, t.Pct))
			}
		}
	}
	_ = tb.Flush()
	if r.ExternallyAuthored > 0 && r.Policy.FirewallMode != "enforce" {
		w.Printf("\nnote: with firewall mode %q, externally written text can drive tool calls.\n", r.Policy.FirewallMode)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
