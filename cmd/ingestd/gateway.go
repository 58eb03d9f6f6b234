package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/daemon"
	"github.com/ingestd/ingestd/gateway"
	"github.com/ingestd/ingestd/internal/cli"
	"github.com/ingestd/ingestd/mcpserver"
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

// gatewayOptions is the gateway's options from the block, with each
// upstream's token read from its token_env. Nil when no upstream is
// configured.
func gatewayOptions(c *config.Config, e *env, log *slog.Logger) (*gateway.Options, error) {
	g := c.Gateway
	if len(g.Upstreams) == 0 {
		return nil, nil
	}
	o := &gateway.Options{CallTimeout: time.Duration(g.CallTimeout), MaxResultBytes: g.MaxResultBytes,
		MaxTurns: g.MaxTurns, ConfirmTTL: time.Duration(g.ConfirmTTL), TurnWindow: time.Duration(g.TurnWindow), Logger: log, Version: versionString()}
	for _, uc := range g.Upstreams {
		u := gateway.Upstream{ID: uc.ID, Command: uc.Command, Env: uc.Env, URL: uc.URL, Tools: map[string]gateway.Tool{}}
		if uc.TokenEnv != "" {
			v, ok := e.lookupEnv(uc.TokenEnv)
			if !ok || v == "" {
				return nil, c.At(uc.Line(), fmt.Sprintf("gateway: upstream %q: environment variable %s is not set", uc.ID, uc.TokenEnv))
			}
			u.Token = v
		}
		for name, t := range uc.Tools {
			u.Tools[name] = gateway.Tool{Class: ingestd.ToolClass(t.Class), Output: gateway.Output(t.Output)}
		}
		o.Upstreams = append(o.Upstreams, u)
	}
	return o, nil
}

// openGateway starts the configured upstreams and names, on the log,
// every tool an upstream offers that is not declared (never offered to
// a host). Nil without upstreams.
func openGateway(ctx context.Context, c *config.Config, e *env, log *slog.Logger) (*gateway.Gateway, error) {
	o, err := gatewayOptions(c, e, log)
	if o == nil || err != nil {
		return nil, err
	}
	return startGateway(ctx, c, *o, log)
}

// startGateway opens the gateway with o and logs what start-up found.
func startGateway(ctx context.Context, c *config.Config, o gateway.Options, log *slog.Logger) (*gateway.Gateway, error) {
	g, err := gateway.Open(ctx, o)
	if err != nil {
		return nil, c.At(c.Line("gateway"), "gateway: "+ingestd.ErrorMessage(err))
	}
	for _, l := range g.Listings() {
		switch {
		case l.Down != "":
			log.Error("gateway: upstream did not start; its tools are offered once it does", "upstream", l.Upstream, "err", l.Down)
		case len(l.Undeclared) > 0:
			log.Warn("gateway: upstream offers undeclared tools, never offered to a host: declare each under gateway.upstreams[].tools",
				"upstream", l.Upstream, "tools", strings.Join(l.Undeclared, ", "))
		}
	}
	return g, nil
}

// gatewayExtension opens the configured gateway for an MCP server and
// returns it with its close; no extension (and a close that does
// nothing) without upstreams.
func gatewayExtension(ctx context.Context, c *config.Config, e *env, log *slog.Logger) (mcpserver.Extension, func() error, error) {
	g, err := openGateway(ctx, c, e, log)
	if g == nil || err != nil {
		return nil, func() error { return nil }, err
	}
	return g, g.Close, nil
}

// serveGateway opens the configured gateway for serve's /mcp, its calls
// counted in ingestd_gateway_calls_total{upstream, tool, outcome}.
func serveGateway(ctx context.Context, c *config.Config, e *env, log *slog.Logger, so *daemon.ServeOptions) (func() error, error) {
	o, err := gatewayOptions(c, e, log)
	if o == nil || err != nil {
		return func() error { return nil }, err
	}
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ingestd_gateway_calls_total",
		Help: "Calls of gateway upstream tools by outcome: ok, error, refused (a tainted turn), asked, confirmed, declined, withheld.",
	}, []string{"upstream", "tool", "outcome"})
	o.Count = func(upstream, tool, outcome string) { calls.WithLabelValues(upstream, tool, outcome).Inc() }
	g, err := startGateway(ctx, c, *o, log)
	if err != nil {
		return nil, err
	}
	so.MCPExtension, so.MCPCollector, so.GatewayDecisions = g, calls, g
	return g.Close, nil
}

// upstreamProblems is `ingestd check --upstreams`: it starts each
// configured upstream, as serve would, and returns the ids of those that
// offer exactly what is declared and a problem for each that does not:
// one that did not start and its undeclared tools at the line of its
// block, a declared tool it does not offer at that tool's line. Nothing
// when the block itself is refused (check named that already).
func upstreamProblems(ctx context.Context, c *config.Config, e *env) ([]string, []error) {
	o, err := gatewayOptions(c, e, slog.New(slog.DiscardHandler))
	if o == nil || err != nil {
		return nil, nil
	}
	g, err := gateway.Open(ctx, *o)
	if err != nil {
		return nil, []error{c.At(c.Line("gateway"), "gateway: "+ingestd.ErrorMessage(err))}
	}
	defer g.Close()
	return c.UpstreamProblems(g.Listings())
}
