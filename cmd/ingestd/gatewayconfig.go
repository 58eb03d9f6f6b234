package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/daemon"
	"github.com/ingestd/ingestd/gateway"
	"github.com/ingestd/ingestd/mcpserver"
)

// GatewayConfig is the gateway block: the upstream MCP servers ingestd
// fronts on its own MCP surface, and every tool each may offer.
type GatewayConfig struct {
	Upstreams []GatewayUpstreamConfig `yaml:"upstreams"`
	// CallTimeout bounds an upstream call and start (default 30s);
	// MaxResultBytes an upstream result (default 1 MiB); MaxTurns the
	// turns a session remembers (default 256); ConfirmTTL how long a
	// question waits for its answer (default 5m).
	CallTimeout    Duration `yaml:"call_timeout"`
	MaxResultBytes int      `yaml:"max_result_bytes"`
	MaxTurns       int      `yaml:"max_turns"`
	ConfirmTTL     Duration `yaml:"confirm_ttl"`
}

// GatewayUpstreamConfig is one upstream: command (stdio) or url
// (Streamable HTTP, with the bearer token in token_env).
type GatewayUpstreamConfig struct {
	ID       string                       `yaml:"id"`
	Command  []string                     `yaml:"command"`
	Env      []string                     `yaml:"env"`
	URL      string                       `yaml:"url"`
	TokenEnv string                       `yaml:"token_env"`
	Tools    map[string]GatewayToolConfig `yaml:"tools"`

	line      int
	toolLines map[string]int
}

// GatewayToolConfig declares one tool: its class and its output.
type GatewayToolConfig struct {
	Class  string `yaml:"class"`
	Output string `yaml:"output"`
}

// gatewayNode returns the node of key under the mapping n, nil if none.
func gatewayChild(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// validateGateway checks the gateway block, each error at its line:
// every upstream an id, one of command or url, every tool a class and an
// output, no key the block does not know.
func (c *Config) validateGateway(doc *yaml.Node) error {
	ups := gatewayChild(gatewayChild(doc, "gateway"), "upstreams")
	seen := map[string]int{}
	for i := range c.Gateway.Upstreams {
		u := &c.Gateway.Upstreams[i]
		u.line = c.line("gateway")
		var un *yaml.Node
		if ups != nil && i < len(ups.Content) {
			un = ups.Content[i]
			u.line = un.Line
		}
		if err := c.validateUpstream(u, un, seen); err != nil {
			return err
		}
		seen[u.ID] = u.line
	}
	return nil
}

func (c *Config) validateUpstream(u *GatewayUpstreamConfig, un *yaml.Node, seen map[string]int) error {
	fail := func(line int, format string, args ...any) error {
		return &configError{path: c.path, line: line, msg: fmt.Sprintf("gateway: upstream %q: ", u.ID) + fmt.Sprintf(format, args...)}
	}
	if err := gateway.ValidID(u.ID); err != nil {
		return &configError{path: c.path, line: u.line, msg: "gateway: " + ingestd.ErrorMessage(err)}
	}
	if prev, dup := seen[u.ID]; dup {
		return fail(u.line, "declared twice (first at line %d)", prev)
	}
	switch {
	case len(u.Command) == 0 && u.URL == "":
		return fail(u.line, "needs command (an argv list, for stdio) or url (Streamable HTTP)")
	case len(u.Command) > 0 && u.URL != "":
		return fail(u.line, "has both command and url: give one")
	case u.TokenEnv != "" && u.URL == "":
		return fail(u.line, "token_env goes with url")
	case u.URL != "":
		if p, err := url.Parse(u.URL); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return fail(u.line, "url %q is not an http(s) URL", u.URL)
		}
	}
	if len(u.Tools) == 0 {
		return fail(u.line, "declares no tools: every tool it offers must be declared (run `ingestd gateway tools` to list them)")
	}
	tools := gatewayChild(un, "tools")
	u.toolLines = map[string]int{}
	for i := 0; tools != nil && i+1 < len(tools.Content); i += 2 {
		k, v := tools.Content[i], tools.Content[i+1]
		u.toolLines[k.Value] = k.Line
		if err := checkKeys(c.path, v, reflect.TypeOf(GatewayToolConfig{}), "gateway.upstreams."+u.ID+".tools."+k.Value); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(u.Tools))
	for name := range u.Tools {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t := u.Tools[name]
		line := u.toolLines[name]
		if !ingestd.ToolClass(t.Class).Known() {
			return fail(line, "tool %q: class %q is not one of read, read_open, write", name, t.Class)
		}
		if t.Output != string(gateway.OutputTrusted) && t.Output != string(gateway.OutputUntrusted) {
			return fail(line, "tool %q: output %q is not one of trusted, untrusted", name, t.Output)
		}
	}
	return nil
}

// gatewayOptions is the gateway's options from the block, with each
// upstream's token read from its token_env. Nil when no upstream is
// configured.
func (c *Config) gatewayOptions(e *env, log *slog.Logger) (*gateway.Options, error) {
	g := c.Gateway
	if len(g.Upstreams) == 0 {
		return nil, nil
	}
	o := &gateway.Options{CallTimeout: time.Duration(g.CallTimeout), MaxResultBytes: g.MaxResultBytes,
		MaxTurns: g.MaxTurns, ConfirmTTL: time.Duration(g.ConfirmTTL), Logger: log, Version: versionString()}
	for _, uc := range g.Upstreams {
		u := gateway.Upstream{ID: uc.ID, Command: uc.Command, Env: uc.Env, URL: uc.URL, Tools: map[string]gateway.Tool{}}
		if uc.TokenEnv != "" {
			v, ok := e.lookupEnv(uc.TokenEnv)
			if !ok || v == "" {
				return nil, &configError{path: c.path, line: uc.line, msg: fmt.Sprintf("gateway: upstream %q: environment variable %s is not set", uc.ID, uc.TokenEnv)}
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
func (c *Config) openGateway(ctx context.Context, e *env, log *slog.Logger) (*gateway.Gateway, error) {
	o, err := c.gatewayOptions(e, log)
	if o == nil || err != nil {
		return nil, err
	}
	return c.startGateway(ctx, *o, log)
}

// startGateway opens the gateway with o and logs what start-up found.
func (c *Config) startGateway(ctx context.Context, o gateway.Options, log *slog.Logger) (*gateway.Gateway, error) {
	g, err := gateway.Open(ctx, o)
	if err != nil {
		return nil, &configError{path: c.path, line: c.line("gateway"), msg: "gateway: " + ingestd.ErrorMessage(err)}
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
func (c *Config) gatewayExtension(ctx context.Context, e *env, log *slog.Logger) (mcpserver.Extension, func() error, error) {
	g, err := c.openGateway(ctx, e, log)
	if g == nil || err != nil {
		return nil, func() error { return nil }, err
	}
	return g, g.Close, nil
}

// serveGateway opens the configured gateway for serve's /mcp, its calls
// counted in ingestd_gateway_calls_total{upstream, tool, outcome}.
func (c *Config) serveGateway(ctx context.Context, e *env, log *slog.Logger, so *daemon.ServeOptions) (func() error, error) {
	o, err := c.gatewayOptions(e, log)
	if o == nil || err != nil {
		return func() error { return nil }, err
	}
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ingestd_gateway_calls_total",
		Help: "Calls of gateway upstream tools by outcome: ok, error, refused (a tainted turn), asked, confirmed, declined, withheld.",
	}, []string{"upstream", "tool", "outcome"})
	o.Count = func(upstream, tool, outcome string) { calls.WithLabelValues(upstream, tool, outcome).Inc() }
	g, err := c.startGateway(ctx, *o, log)
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
func (c *Config) upstreamProblems(ctx context.Context, e *env) ([]string, []error) {
	o, err := c.gatewayOptions(e, slog.New(slog.DiscardHandler))
	if o == nil || err != nil {
		return nil, nil
	}
	g, err := gateway.Open(ctx, *o)
	if err != nil {
		return nil, []error{&configError{path: c.path, line: c.line("gateway"), msg: "gateway: " + ingestd.ErrorMessage(err)}}
	}
	defer g.Close()
	byID := map[string]*GatewayUpstreamConfig{}
	for i := range c.Gateway.Upstreams {
		byID[c.Gateway.Upstreams[i].ID] = &c.Gateway.Upstreams[i]
	}
	var ok []string
	var problems []error
	for _, l := range g.Listings() {
		uc := byID[l.Upstream]
		at := func(line int, format string, args ...any) {
			problems = append(problems, &configError{path: c.path, line: line, msg: fmt.Sprintf(format, args...)})
		}
		if l.Down != "" {
			at(uc.line, "gateway: upstream %q did not start: %s", l.Upstream, l.Down)
			continue
		}
		if len(l.Undeclared) > 0 {
			at(uc.line, "gateway: upstream %q offers tools nobody declared, never offered to a host: %s (declare each under its tools; `ingestd gateway tools` shows what their annotations suggest)",
				l.Upstream, strings.Join(l.Undeclared, ", "))
		}
		for _, m := range l.Missing {
			line := uc.line
			if tl, found := uc.toolLines[m]; found {
				line = tl
			}
			at(line, "gateway: upstream %q: tool %q is declared but the upstream does not offer it", l.Upstream, m)
		}
		if len(l.Undeclared) == 0 && len(l.Missing) == 0 {
			ok = append(ok, l.Upstream)
		}
	}
	return ok, problems
}
