package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/gateway"
	"github.com/ingestd/ingestd/internal/cli"
)

// runGateway is `ingestd gateway tools`: it starts each configured
// upstream and lists what it offers against what is declared. An
// upstream's annotations are shown as a suggestion only: the gateway
// never decides by them.
func runGateway(ctx context.Context, e *env, args []string) error {
	switch {
	case len(args) > 0 && cli.IsHelp(args[0]):
		fmt.Fprintf(e.stdout, "Usage:\n%s", groupUsage("gateway"))
		return nil
	case len(args) == 0 || args[0] != "tools":
		return &usageError{Cmd: "gateway", Msg: "want tools"}
	}
	fs := flag.NewFlagSet("gateway tools", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	asJSON := fs.Bool("json", false, "print the listings as JSON")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return &usageError{Cmd: fs.Name(), Msg: fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	cfg, err := config.Load(*cfgPath, registry())
	if err != nil {
		return err
	}
	if len(cfg.Gateway.Upstreams) == 0 {
		return cfg.At(0, "gateway: no upstreams are configured")
	}
	g, err := openGateway(ctx, cfg, e, newLogger(e.stderr, cfg.Log, false))
	if err != nil {
		return err
	}
	defer g.Close()
	ls := g.Listings()
	if *asJSON {
		return writeIndented(e.stdout, ls)
	}
	printListings(e, ls)
	return nil
}

// printListings is the table of each upstream's tools: the name the
// host sees, the declaration (or UNDECLARED), and what the upstream's
// annotations suggest.
func printListings(e *env, ls []gateway.Listing) {
	for _, l := range ls {
		e.stdout.Printf("upstream %s\n", l.Upstream)
		if l.Down != "" {
			e.stdout.Printf("  not started: %s\n", l.Down)
			continue
		}
		tb := e.stdout.Table("  ", "TOOL", "OFFERED AS", "DECLARED", "ANNOTATIONS SUGGEST")
		for _, o := range l.Offered {
			as, decl := o.Name, "UNDECLARED: never offered"
			switch why, held := l.Withheld[o.Name]; {
			case held:
				as, decl = "-", fmt.Sprintf("%s, %s; WITHHELD: %s", o.Decl.Class, o.Decl.Output, why)
			case o.Declared:
				as, decl = l.Upstream+gateway.Separator+o.Name, fmt.Sprintf("%s, %s", o.Decl.Class, o.Decl.Output)
			default:
				as = "-"
			}
			tb.Row(o.Name, as, decl, string(o.Suggested)+" (a suggestion, never believed)")
		}
		_ = tb.Flush()
		for _, m := range l.Missing {
			e.stdout.Printf("  declared but not offered by the upstream: %s\n", m)
		}
	}
}
