package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ingestd/ingestd"
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
	svc, err := a.retrieval(nil)
	if err != nil {
		return err
	}
	r, err := svc.Provenance(ctx, ingestd.ProvenanceRequest{})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	printReport(e.stdout, r, *perInst)
	return nil
}

func printReport(w io.Writer, r ingestd.ProvenanceReport, perInst bool) {
	fmt.Fprintf(w, "%s; %d written outside the organisation (%.1f%%); firewall mode: %s\n",
		plural(r.Total, "document"), r.ExternallyAuthored, r.ExternallyAuthoredPct, r.Policy.FirewallMode)
	fmt.Fprintf(w, "declared: %d, undeclared: %d, orphaned: %d\n", r.Declared, r.Undeclared, r.Orphaned)
	if r.Orphaned > 0 {
		fmt.Fprintf(w, "note: %d documents belong to an installation that is no longer configured (or now has another kind): they count as %s.\n",
			r.Orphaned, ingestd.TierUntrustedExternal)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tDOCUMENTS\tSHARE")
	for _, t := range r.Tiers {
		fmt.Fprintf(tw, "%s\t%d\t%.1f%%\n", t.Tier, t.Count, t.Pct)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTALLATION\tKIND\tDECLARED TIER\tDOCUMENTS")
	for _, in := range r.Installations {
		tier := dash(in.Tier)
		if in.Kind == "" {
			tier = "not configured"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", in.ID, dash(in.Kind), tier, in.Documents)
		if perInst {
			for _, t := range in.Tiers {
				fmt.Fprintf(tw, "  └ %s\t\t\t%d (%.1f%%)\n", t.Tier, t.Count, t.Pct)
			}
		}
	}
	tw.Flush()
	if r.ExternallyAuthored > 0 && r.Policy.FirewallMode != "enforce" {
		fmt.Fprintf(w, "\nnote: with firewall mode %q, externally written text can drive tool calls.\n", r.Policy.FirewallMode)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
