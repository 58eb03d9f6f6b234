package config

import (
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/gateway"
)

// GatewayConfig is the gateway block: the upstream MCP servers ingestd
// fronts on its own MCP surface, and every tool each may offer.
type GatewayConfig struct {
	Upstreams []GatewayUpstreamConfig `yaml:"upstreams"`
	// CallTimeout bounds an upstream call and start (default 30s);
	// MaxResultBytes an upstream result (default 1 MiB); MaxTurns the
	// turns a session remembers (default 256); ConfirmTTL how long a
	// question waits for its answer (default 5m); TurnWindow, when set,
	// is a turnless host's scope instead of its session (at least 1m).
	CallTimeout    Duration `yaml:"call_timeout"`
	MaxResultBytes int      `yaml:"max_result_bytes"`
	MaxTurns       int      `yaml:"max_turns"`
	ConfirmTTL     Duration `yaml:"confirm_ttl"`
	TurnWindow     Duration `yaml:"turn_window"`
}

// minTurnWindow is the shortest turn_window: shorter would let an
// injected instruction wait out its taint within a person's turn.
const minTurnWindow = time.Minute

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

// validateGateway checks the gateway block, each error at its line:
// every upstream an id, one of command or url, every tool a class and an
// output, no key the block does not know.
func (c *Config) validateGateway(doc *yaml.Node) error {
	g := c.Gateway
	for _, d := range []struct {
		key string
		v   Duration
		min time.Duration
	}{{"call_timeout", g.CallTimeout, time.Millisecond}, {"confirm_ttl", g.ConfirmTTL, time.Second}, {"turn_window", g.TurnWindow, minTurnWindow}} {
		if d.v != 0 && time.Duration(d.v) < d.min {
			return c.Errorf(c.KeyLine("gateway", d.key), "gateway: %s %s is too short: use at least %s, or leave it out for the default", d.key, time.Duration(d.v), d.min)
		}
	}
	ups := child(child(doc, "gateway"), "upstreams")
	seen := map[string]int{}
	for i := range c.Gateway.Upstreams {
		u := &c.Gateway.Upstreams[i]
		u.line = c.Line("gateway")
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
		return &Error{Path: c.path, Line: line, Msg: fmt.Sprintf("gateway: upstream %q: ", u.ID) + fmt.Sprintf(format, args...)}
	}
	if err := gateway.ValidID(u.ID); err != nil {
		return &Error{Path: c.path, Line: u.line, Msg: "gateway: " + ingestd.ErrorMessage(err)}
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
	tools := child(un, "tools")
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

// UpstreamProblems compares what each started upstream offers (ls, from
// gateway.Listings) with what the block declares, and returns the ids
// of those that offer exactly what is declared and a problem for each
// that does not: one that did not start and its undeclared tools at the
// line of its entry, a declared tool it does not offer at that tool's
// line.
func (c *Config) UpstreamProblems(ls []gateway.Listing) ([]string, []error) {
	byID := map[string]*GatewayUpstreamConfig{}
	for i := range c.Gateway.Upstreams {
		byID[c.Gateway.Upstreams[i].ID] = &c.Gateway.Upstreams[i]
	}
	var ok []string
	var problems []error
	for _, l := range ls {
		uc := byID[l.Upstream]
		at := func(line int, format string, args ...any) {
			problems = append(problems, c.At(line, fmt.Sprintf(format, args...)))
		}
		if l.Down != "" {
			at(uc.Line(), "gateway: upstream %q did not start: %s", l.Upstream, l.Down)
			continue
		}
		if len(l.Undeclared) > 0 {
			at(uc.Line(), "gateway: upstream %q offers tools nobody declared, never offered to a host: %s (declare each under its tools; `ingestd gateway tools` shows what their annotations suggest)",
				l.Upstream, strings.Join(l.Undeclared, ", "))
		}
		for _, m := range l.Missing {
			line := uc.Line()
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
