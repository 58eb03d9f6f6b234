package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ingestd/ingestd/provenance"
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
	counts, err := a.store.CountDocuments(ctx)
	if err != nil {
		return err
	}
	r := provenance.BuildReport(counts, a.installations(), a.cfg.Firewall.Mode)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	printReport(e.stdout, r, *perInst)
	return nil
}

func printReport(w io.Writer, r provenance.Report, perInst bool) {
	fmt.Fprintf(w, "%d documents; %d written outside the organisation (%.1f%%); firewall mode: %s\n",
		r.Total, r.ExternallyAuthored, r.ExternallyAuthoredPct, r.Policy.FirewallMode)
	fmt.Fprintf(w, "declared: %d, undeclared: %d\n\n", r.Declared, r.Undeclared)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", in.ID, dash(in.Kind), dash(in.Tier), in.Documents)
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
