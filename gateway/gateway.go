// Package gateway fronts a host's other MCP servers (upstreams) on
// ingestd's own MCP surface, so that the firewall's verdict is enforced
// where the host cannot skip it. Every upstream tool is declared by the
// operator — its class (ingestd.ToolClass) and whether its output is
// trusted — and only declared tools are offered, as
// <upstream>__<tool>. A turn is tainted by a retrieve whose verdict
// blocks and by any result of a tool whose output is untrusted; such a
// result reaches the host inside the one fence (firewall.Fence). In a
// tainted turn, read tools run and read_open and write tools are
// refused, unless the person behind the host confirms that one exact
// call (an input request, answered once).
//
// It never reads content to decide: taint comes from the verdict and the
// declarations alone. It never believes an upstream's description of
// itself: annotations are shown to the operator as suggestions, and a
// tool whose description or schemas change while running is withheld.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/internal/rawjson"
)

// Separator joins an upstream's id and its tool's name in the name the
// host sees. Upstream ids hold no '_', so the first "__" splits a name.
const Separator = "__"

// Output says whether a tool's results may be shown to a model as they
// are.
type Output string

// The outputs.
const (
	// OutputTrusted results pass through unchanged.
	OutputTrusted Output = "trusted"
	// OutputUntrusted results are fenced and taint the turn.
	OutputUntrusted Output = "untrusted"
)

// Tool is the operator's declaration of one upstream tool.
type Tool struct {
	Class  ingestd.ToolClass
	Output Output
}

// Upstream is one MCP server the gateway fronts: started as a command
// (stdio) or reached at a URL (Streamable HTTP, with a bearer token),
// and the declaration of every tool it may offer.
type Upstream struct {
	// ID names the upstream in tool names, logs and metrics: 1 to 64
	// lower-case letters, digits or '-'.
	ID string
	// Command is the argv of a stdio upstream. It runs with PATH, HOME,
	// LANG, TMPDIR and the variables Env names, nothing else of ingestd's
	// environment.
	Command []string
	Env     []string
	// URL is a Streamable HTTP upstream; Token its bearer token, if any.
	URL   string
	Token string
	// Tools declares each tool by its upstream name.
	Tools map[string]Tool
	// Connect, when set, makes the transport instead of Command or URL:
	// an upstream in the same process (tests).
	Connect func(context.Context) (mcp.Transport, error)
}

// Options configures a gateway. Nil fields and zeros take the defaults.
type Options struct {
	Upstreams []Upstream
	// CallTimeout bounds a call to an upstream and a start (default 30s).
	CallTimeout time.Duration
	// MaxResultBytes bounds an upstream result, as JSON (default 1 MiB);
	// a larger one is refused whole.
	MaxResultBytes int
	// MaxTurns bounds the turns a session remembers (default 256); a
	// forgotten turn's taint passes to every turn made after it.
	MaxTurns int
	// TurnWindow, when set, is the scope of a host that marks no turns
	// instead of its whole session: what tainted the session stops
	// counting once TurnWindow has passed with no new taint. Zero keeps
	// the session. Taint recorded in a marked turn lasts as long as that
	// turn, whatever the window.
	TurnWindow time.Duration
	// ConfirmTTL is how long a question may wait for its answer
	// (default 5m).
	ConfirmTTL time.Duration
	Logger     *slog.Logger
	Now        func() time.Time
	// Count is told every call's outcome: ok, error, refused, asked,
	// confirmed, declined, withheld. Nil counts nothing.
	Count   func(upstream, tool, outcome string)
	Version string
}

// Gateway is the running gateway: its upstreams, the taint of each
// session's turns and the questions awaiting answers.
type Gateway struct {
	o          Options
	log        *slog.Logger
	ups        []*upstream
	byID       map[string]*upstream
	laneCalls  atomic.Int64 // calls FastCall took
	lanePassed atomic.Int64 // of those, results passed as the upstream wrote them
	turns      *turns
	confirms   *confirms
	decisions  decisions // decisions.go

	mu      sync.Mutex
	servers []*mcp.Server
}

// Open starts every upstream and lists its tools. An upstream that does
// not start is logged and retried on its first call; Open fails only on
// a declaration it cannot serve.
func Open(ctx context.Context, o Options) (*Gateway, error) {
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = 1 << 20
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = 256
	}
	if o.ConfirmTTL <= 0 {
		o.ConfirmTTL = 5 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	g := &Gateway{o: o, log: o.Logger, turns: newTurns(o.MaxTurns, o.TurnWindow, o.Now), confirms: newConfirms(o.ConfirmTTL, o.Now), byID: map[string]*upstream{}}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	seen := map[string]bool{}
	for _, uc := range o.Upstreams {
		if err := ValidID(uc.ID); err != nil {
			return nil, err
		}
		if seen[uc.ID] {
			return nil, ingestd.Errorf(ingestd.EINVALID, "upstream %q is declared twice", uc.ID)
		}
		seen[uc.ID] = true
		for name, t := range uc.Tools {
			if !t.Class.Known() || (t.Output != OutputTrusted && t.Output != OutputUntrusted) {
				return nil, ingestd.Errorf(ingestd.EINVALID, "upstream %q: tool %q needs class read, read_open or write and output trusted or untrusted", uc.ID, name)
			}
		}
		u := &upstream{cfg: uc, g: g}
		u.mu.Lock()
		if err := u.connect(ctx); err != nil {
			u.down, u.downSince = err, time.Time{}
			g.log.Error("gateway.upstream.start", "upstream", uc.ID, "err", err)
		}
		u.mu.Unlock()
		g.ups = append(g.ups, u)
		g.byID[uc.ID] = u
	}
	return g, nil
}

// Close stops every upstream.
func (g *Gateway) Close() error {
	for _, u := range g.ups {
		u.close()
	}
	return nil
}

// ValidID checks an upstream id: 1 to 64 of a-z, 0-9 and '-'.
func ValidID(id string) error {
	ok := id != "" && len(id) <= 64
	for _, r := range id {
		ok = ok && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-')
	}
	if !ok {
		return ingestd.Errorf(ingestd.EINVALID, "upstream id %q: use 1 to 64 lower-case letters, digits or '-' (it prefixes tool names, joined by %q)", id, Separator)
	}
	return nil
}

func exposedName(upstream, tool string) string { return upstream + Separator + tool }

func validName(upstream, tool string) error {
	n := exposedName(upstream, tool)
	if len(n) > 128 {
		return fmt.Errorf("its name %q is longer than MCP's 128 characters", n)
	}
	for _, r := range tool {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("its name %q has a character MCP tool names do not allow", tool)
		}
	}
	return nil
}

// Install offers the declared tools on srv, beside srv's own, and
// watches srv's retrieve results for a blocking verdict. A server taken
// over Streamable HTTP must keep sessions (a stateless one would forget
// a turn's taint between requests).
func (g *Gateway) Install(srv *mcp.Server) {
	srv.AddReceivingMiddleware(g.watchRetrieve)
	g.mu.Lock()
	g.servers = append(g.servers, srv)
	g.mu.Unlock()
	for _, u := range g.ups {
		u.mu.Lock()
		for name, t := range u.tools {
			if _, held := u.withheld[name]; !held {
				srv.AddTool(g.exposed(u, t), g.handler(u, name))
			}
		}
		u.mu.Unlock()
	}
}

// offerLate offers a tool pinned after Install (its upstream did not
// start in time) on the servers already installed.
func (g *Gateway) offerLate(u *upstream, t *mcp.Tool, name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.servers {
		s.AddTool(g.exposed(u, t), g.handler(u, name))
	}
}

// remove stops offering a tool on every server.
func (g *Gateway) remove(name string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.servers {
		s.RemoveTools(name)
	}
}

// live reports whether any installed server still holds ss.
func (g *Gateway) live(ss *mcp.ServerSession) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.servers {
		for x := range s.Sessions() {
			if x == ss {
				return true
			}
		}
	}
	return false
}

// exposed is the tool as the host sees it: renamed, its annotations
// ingestd's (from the declaration, never the upstream's), its
// description saying where it runs; an untrusted tool's output schema is
// the fence's wrapper.
func (g *Gateway) exposed(u *upstream, t *mcp.Tool) *mcp.Tool {
	d := u.cfg.Tools[t.Name]
	x := &mcp.Tool{
		Name:        exposedName(u.cfg.ID, t.Name),
		Title:       t.Title,
		Description: fmt.Sprintf("[%s via ingestd: class %s, output %s] %s", u.cfg.ID, d.Class, d.Output, t.Description),
		InputSchema: t.InputSchema,
		Annotations: annotationsOf(d),
	}
	if x.InputSchema == nil {
		x.InputSchema = map[string]any{"type": "object"}
	}
	if d.Output == OutputTrusted {
		x.OutputSchema = t.OutputSchema
	} else if t.OutputSchema != nil {
		x.OutputSchema = fencedSchema
	}
	return x
}

func annotationsOf(d Tool) *mcp.ToolAnnotations {
	f, t := false, true
	switch d.Class {
	case ingestd.ToolRead:
		return &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f, DestructiveHint: &f}
	case ingestd.ToolReadOpen:
		return &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &t, DestructiveHint: &f}
	}
	return &mcp.ToolAnnotations{DestructiveHint: &t, OpenWorldHint: &t}
}

// fencedSchema is the structuredContent of an untrusted tool's result:
// the upstream's JSON as text, in its fence.
var fencedSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"fenced": map[string]any{"type": "string"}},
	"required":   []string{"fenced"},
}

func (g *Gateway) count(upstream, tool, outcome string) {
	if g.o.Count != nil {
		g.o.Count(upstream, tool, outcome)
	}
}

// turnOf is the turn a request names in its _meta, "" for none. A value
// that is not a string is no turn id.
func turnOf(m mcp.Meta) string {
	if s, ok := m[TurnMetaKey].(string); ok && len(s) <= 256 {
		return s
	}
	return ""
}

// stampTurn says in res which scope its call was judged in (the
// TurnScopeMetaKey). Every result the gateway writes or changes carries
// it; a trusted result passes as the upstream wrote it.
func stampTurn(res *mcp.CallToolResult, turn string) {
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	if turn != "" {
		res.Meta[TurnMetaKey] = turn
		res.Meta[TurnScopeMetaKey] = "turn"
	} else {
		res.Meta[TurnScopeMetaKey] = "session"
	}
}

// watchRetrieve taints the turn of a retrieve whose verdict blocks (or
// is absent), and says in its result which turn it was judged in.
func (g *Gateway) watchRetrieve(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		cr, ok := req.(*mcp.CallToolRequest)
		if method != "tools/call" || !ok || cr.Params == nil || cr.Params.Name != "retrieve" {
			return next(ctx, method, req)
		}
		res, err := next(ctx, method, req)
		out, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || out == nil {
			return res, err
		}
		turn := turnOf(cr.Params.Meta)
		if !out.IsError {
			if why := blockingVerdict(out.Meta[ingestd.MCPVerdictKey]); why != "" {
				g.turns.Taint(cr.Session, turn, why)
			}
		}
		stampTurn(out, turn)
		g.turns.prune(g.live)
		return out, nil
	}
}

// blockingVerdict says why a retrieve's verdict taints its turn, "" when
// it allows tools.
func blockingVerdict(v any) string {
	var verdict *ingestd.Verdict
	switch x := v.(type) {
	case *ingestd.Verdict:
		verdict = x
	case nil:
	default:
		b, _ := json.Marshal(x)
		_ = json.Unmarshal(b, &verdict)
	}
	switch {
	case verdict == nil:
		return "retrieve returned no verdict"
	case verdict.ToolsAllowed:
		return ""
	}
	ids := verdict.UntrustedDocumentIDs
	more := ""
	if len(ids) > maxReasonIDs {
		more = fmt.Sprintf(" and %d more", len(ids)-maxReasonIDs)
		ids = ids[:maxReasonIDs]
	}
	return fmt.Sprintf("retrieve served untrusted documents %s%s (reason %s)", strings.Join(ids, ", "), more, verdict.Reason)
}

// handler is the call of one upstream tool.
func (g *Gateway) handler(u *upstream, tool string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := &call{g: g, u: u, tool: tool, decl: u.cfg.Tools[tool], req: req, ss: req.Session,
			args: req.Params.Arguments, turn: turnOf(req.Params.Meta)}
		return c.run(ctx), nil
	}
}

// FastCall takes a host's call of an upstream tool on stdio before the
// SDK reads it (mcpserver.FastCaller), when it is one the gateway can
// answer without the SDK: a declared, offered tool of a stdio upstream
// that is up, arguments that are one JSON object, a _meta whose turn id
// is a string when present, and no question to ask (a read, or a turn
// nothing tainted). Its answer is the SDK path's: the same checks,
// counts, taint, fence and turn stamp (call.run); only the transport
// differs, a line each way to the upstream on the pipe it shares with
// the SDK's session. Anything else is the SDK's, untouched.
func (g *Gateway) FastCall(ss *mcp.ServerSession, name string, args json.RawMessage, meta map[string]json.RawMessage) (func(func(*mcp.CallToolResult, json.RawMessage)) (cancel func()), bool) {
	id, tool, _ := strings.Cut(name, Separator)
	u := g.byID[id]
	if u == nil {
		return nil, false
	}
	u.mu.Lock()
	_, offered := u.tools[tool]
	_, held := u.withheld[tool]
	p := u.pipe
	u.mu.Unlock()
	if !offered || held || p == nil {
		return nil, false
	}
	c := &call{g: g, u: u, tool: tool, decl: u.cfg.Tools[tool], ss: ss, args: args, pipe: p}
	if t, ok := meta[TurnMetaKey]; ok && json.Unmarshal(t, &c.turn) != nil || len(c.turn) > 256 {
		return nil, false
	}
	var pass map[string]json.RawMessage
	for k, v := range meta {
		if forUpstream(k) {
			if pass == nil {
				pass = map[string]json.RawMessage{}
			}
			pass[k] = v
		}
	}
	if pass != nil {
		c.meta, _ = json.Marshal(pass)
	}
	if c.decl.Class != ingestd.ToolRead && g.turns.Of(ss, c.turn) != nil {
		return nil, false
	}
	g.laneCalls.Add(1)
	return func(done func(*mcp.CallToolResult, json.RawMessage)) func() {
		if res := c.prepare(); res != nil {
			done(c.stamped(res), nil)
			return func() {}
		}
		return p.start(c.params(c.sentArgs()), g.o.CallTimeout, func(raw json.RawMessage, err error) {
			done(c.finishRaw(raw, err))
		})
	}, true
}

// call is one tools/call of an upstream tool, from the SDK's handler or
// the lane (FastCall).
type call struct {
	g    *Gateway
	u    *upstream
	tool string
	decl Tool
	req  *mcp.CallToolRequest // the SDK's request; nil on the lane, which never asks
	ss   *mcp.ServerSession
	args json.RawMessage
	meta json.RawMessage // on the lane: the host's _meta for the upstream (forUpstream), nil for none
	turn string
	pipe *pipe // set on the lane
}

func (c *call) name() string { return exposedName(c.u.cfg.ID, c.tool) }

func (c *call) run(ctx context.Context) *mcp.CallToolResult {
	if res := c.prepare(); res != nil {
		return c.stamped(res)
	}
	return c.forward(ctx)
}

// stamped is res, a result the gateway wrote or changed, with its scope.
func (c *call) stamped(res *mcp.CallToolResult) *mcp.CallToolResult {
	stampTurn(res, c.turn)
	return res
}

// prepare decides a call before it is sent: the answer when it is not to
// be sent (withheld, arguments that are no object, a tainted turn's
// question or refusal), nil to send it.
func (c *call) prepare() *mcp.CallToolResult {
	g := c.g
	if why := c.u.withheldWhy(c.tool); why != "" {
		g.count(c.u.cfg.ID, c.tool, "withheld")
		return toolError("ingestd gateway: %s is withheld: %s; declare it again and restart ingestd", c.name(), why)
	}
	// Canonical refuses what two readers could read as two calls; what
	// the strict scan takes it takes too (FuzzValidAsCanonical), so it
	// is computed to check a call only when the scan refuses it, and
	// otherwise only for a call to be refused or asked about.
	if !rawjson.Valid(c.args, maxDepth) {
		if _, err := Canonical(c.args); err != nil {
			return c.badArguments(err)
		}
	}
	if c.decl.Class != ingestd.ToolRead {
		if why := g.turns.Of(c.ss, c.turn); why != nil {
			canon, err := Canonical(c.args)
			if err != nil {
				return c.badArguments(err)
			}
			return c.gate(canon, why)
		}
	}
	return nil
}

// badArguments is the tool error of a call whose arguments Canonical
// refuses.
func (c *call) badArguments(err error) *mcp.CallToolResult {
	c.g.count(c.u.cfg.ID, c.tool, "error")
	return toolError("ingestd gateway: %s", err)
}

// turnKey names the turn for a confirmation's hash.
func (c *call) turnKey() string {
	if c.turn == "" {
		return "session"
	}
	return "turn:" + c.turn
}

// gate decides a call of a side-effecting class in a tainted turn: nil
// runs it (the person's yes to this exact call), else the question or
// the refusal.
func (c *call) gate(canon []byte, why *taint) *mcp.CallToolResult {
	g, up := c.g, c.u.cfg.ID
	hash := CallHash(up, c.tool, canon, c.turnKey())
	if c.req == nil {
		// On the lane, tainted between FastCall and now: no question can
		// be put there, so the refusal; a call again is asked.
		return c.refuse(why, hash, "the turn was tainted as this call began; call it again to be asked")
	}
	p := c.req.Params
	if p.RequestState != "" || p.InputResponses != nil {
		state := g.confirms.take(c.ss, p.RequestState, hash)
		yes, action := false, "none"
		if r, ok := p.InputResponses[confirmInput]; ok {
			yes, action = approved(r)
		}
		g.log.Info("gateway.confirm.answer", "upstream", up, "tool", c.tool, "call_hash", hash, "action", action, "state", stateName(state))
		switch {
		case state == answerValid && yes:
			g.count(up, c.tool, "confirmed")
			c.decide(ingestd.GatewayConfirmed, why, hash, "")
			return nil
		case state == answerValid:
			g.count(up, c.tool, "declined")
			return c.refuseAs(ingestd.GatewayDeclined, why, hash, "the person declined this call")
		case state != answerOtherCall:
			return c.refuse(why, hash, "the confirmation is "+stateName(state)+": a confirmation runs one call once")
		}
	}
	caps := c.req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return c.refuse(why, hash, "the host cannot ask its user to confirm")
	}
	state := g.confirms.ask(c.ss, hash)
	g.log.Info("gateway.confirm.ask", "upstream", up, "tool", c.tool, "call_hash", hash, "taint", why.String())
	g.count(up, c.tool, "asked")
	c.decide(ingestd.GatewayAsked, why, hash, "")
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{confirmInput: &mcp.ElicitParams{
			Mode:            "form",
			Message:         question(up, c.tool, string(c.decl.Class), canon, why, hash),
			RequestedSchema: confirmSchema,
		}},
		RequestState: state,
	}
}

func stateName(s answerState) string {
	switch s {
	case answerExpired:
		return "expired"
	case answerOtherSes:
		return "from another session"
	case answerOtherCall:
		return "about another call"
	case answerValid:
		return "valid"
	}
	return "unknown or already used"
}

// refuse is the tool error of a call withheld in a tainted turn, logged
// as the firewall's blocked event.
func (c *call) refuse(why *taint, hash, detail string) *mcp.CallToolResult {
	return c.refuseAs(ingestd.GatewayRefused, why, hash, detail)
}

// refuseAs is refuse, recorded as outcome (refused, or declined by the
// person).
func (c *call) refuseAs(outcome string, why *taint, hash, detail string) *mcp.CallToolResult {
	g := c.g
	c.decide(outcome, why, hash, detail)
	g.log.Info("provenance.tool_firewall.blocked",
		slog.String("surface", "gateway"),
		slog.String("upstream", c.u.cfg.ID),
		slog.String("tool", c.tool),
		slog.String("class", string(c.decl.Class)),
		slog.String("tainted_by", why.String()),
		slog.String("call_hash", hash),
		slog.String("detail", detail))
	g.count(c.u.cfg.ID, c.tool, "refused")
	return toolError("ingestd gateway: %s (class %s) is refused in this turn: it read text ingestd does not trust (%s); %s.",
		c.name(), c.decl.Class, why, detail)
}

// forward calls the upstream through the SDK's session, bounded in
// time, and finishes the call.
func (c *call) forward(ctx context.Context) *mcp.CallToolResult {
	cs, err := c.u.session(ctx)
	if err != nil {
		c.g.count(c.u.cfg.ID, c.tool, "error")
		return c.stamped(toolError("ingestd gateway: upstream %s is unavailable: %v", c.u.cfg.ID, err))
	}
	ctx, cancel := context.WithTimeout(ctx, c.g.o.CallTimeout)
	defer cancel()
	params := &mcp.CallToolParams{Name: c.tool, Arguments: c.sentArgs(), Meta: passMeta(c.req.Params.Meta)}
	res, err := cs.CallTool(ctx, params)
	return c.finish(res, -1, err)
}

// sentArgs are the arguments as the upstream gets them: {} for none.
func (c *call) sentArgs() json.RawMessage {
	if len(c.args) == 0 {
		return json.RawMessage("{}")
	}
	return c.args
}

// finish is the host's answer to a call the upstream answered (or did
// not): bounded in size (size is the result's length as the upstream
// wrote it, when known; else, -1, it is measured encoded), an upstream's
// question refused, an untrusted result fenced and its turn tainted. The
// SDK's path and the lane both end here.
func (c *call) finish(res *mcp.CallToolResult, size int, err error) *mcp.CallToolResult {
	g, up := c.g, c.u.cfg.ID
	if err != nil {
		g.count(up, c.tool, "error")
		if errors.Is(err, context.DeadlineExceeded) {
			return c.stamped(toolError("ingestd gateway: upstream %s did not answer %s within %s", up, c.tool, g.o.CallTimeout))
		}
		return c.stamped(toolError("ingestd gateway: upstream %s failed %s: %v", up, c.tool, err))
	}
	if res.InputRequests != nil || res.RequestState != "" || res.NeedsInput() {
		g.count(up, c.tool, "error")
		return c.stamped(toolError("ingestd gateway: upstream %s answered %s with a question for the person; the gateway puts only its own questions, rendered from the call", up, c.tool))
	}
	if size < 0 {
		b, err := json.Marshal(res)
		if size = len(b); err != nil {
			size = math.MaxInt
		}
	}
	if size > g.o.MaxResultBytes {
		g.count(up, c.tool, "error")
		return c.stamped(toolError("ingestd gateway: upstream %s answered %s with %d bytes, over the %d-byte cap", up, c.tool, size, g.o.MaxResultBytes))
	}
	g.count(up, c.tool, "ok")
	if c.decl.Output == OutputTrusted {
		return res
	}
	g.turns.Taint(c.ss, c.turn, "untrusted output of "+c.name())
	return c.stamped(fenceResult(res, up, c.tool))
}

// finishRaw is finish for a result as the upstream wrote it (the lane's):
// a trusted one that finish would pass unchanged — plain (text content,
// nothing that asks the person) and within the cap — is passed as its
// bytes, unread; any other is decoded and finished.
func (c *call) finishRaw(raw json.RawMessage, err error) (*mcp.CallToolResult, json.RawMessage) {
	if err == nil && c.decl.Output == OutputTrusted && len(raw) <= c.g.o.MaxResultBytes && plainResult(raw, nil) {
		c.g.count(c.u.cfg.ID, c.tool, "ok")
		c.g.lanePassed.Add(1)
		return nil, raw
	}
	var res *mcp.CallToolResult
	if err == nil {
		res, err = decodeResult(raw)
	}
	return c.finish(res, len(raw), err), nil
}

// params is the upstream's tools/call params on the lane, as the SDK's
// client writes them.
func (c *call) params(args json.RawMessage) []byte {
	b := make([]byte, 0, len(args)+len(c.meta)+len(c.tool)+32)
	b = append(b, `{"name":`...)
	b, _ = rawjson.AppendString(b, c.tool) // a declared name, valid UTF-8
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	meta := c.meta
	switch {
	case meta == nil:
		meta = c.pipe.meta
	case c.pipe.meta != nil:
		// The host's keys beside the protocol's, the protocol's winning.
		var m, proto map[string]json.RawMessage
		_ = json.Unmarshal(meta, &m)
		_ = json.Unmarshal(c.pipe.meta, &proto)
		maps.Copy(m, proto)
		meta, _ = json.Marshal(m)
	}
	if meta != nil {
		b = append(b, `,"_meta":`...)
		b = append(b, meta...)
	}
	return append(b, '}')
}

// passMeta is the host's _meta for the upstream (forUpstream).
func passMeta(m mcp.Meta) mcp.Meta {
	if len(m) == 0 {
		return nil
	}
	out := mcp.Meta{}
	for k, v := range m {
		if forUpstream(k) {
			out[k] = v
		}
	}
	return out
}

// forUpstream reports whether a key of the host's _meta goes on to the
// upstream: not ingestd's own keys, and not MCP's, which speak of the
// host's hop to ingestd (its protocol version, capabilities, progress),
// not ingestd's to the upstream.
func forUpstream(k string) bool {
	return !strings.HasPrefix(k, "io.ingestd/") && !strings.HasPrefix(k, "io.modelcontextprotocol/") && k != "progressToken"
}

// fenceResult is an untrusted result as the host sees it: each text in
// its own fence, naming the upstream and tool; what is not text (an
// image, audio, a resource) described in a fence instead of passed; the
// structuredContent as JSON text in a fence; the upstream's _meta
// dropped.
func fenceResult(res *mcp.CallToolResult, upstream, tool string) *mcp.CallToolResult {
	o := firewall.Origin{Installation: "gateway:" + upstream, SourceKind: "mcp", Tier: string(ingestd.TierUntrustedExternal),
		URI: "mcp://" + upstream + "/" + tool, Title: tool}
	out := &mcp.CallToolResult{IsError: res.IsError}
	for _, ct := range res.Content {
		var text string
		switch x := ct.(type) {
		case *mcp.TextContent:
			text = x.Text
		case *mcp.EmbeddedResource:
			if x.Resource != nil && x.Resource.Text != "" {
				text = x.Resource.Text
			} else {
				text = "[a resource ingestd does not pass from an untrusted tool]"
			}
		default:
			text = fmt.Sprintf("[%T content ingestd does not pass from an untrusted tool]", ct)
		}
		out.Content = append(out.Content, &mcp.TextContent{Text: firewall.Fence(text, o)})
	}
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		out.StructuredContent = map[string]any{"fenced": firewall.Fence(string(b), o)}
	}
	return out
}

func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}
