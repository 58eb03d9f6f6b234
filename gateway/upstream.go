package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// restartAfter is how long a gateway waits after an upstream went away
// before it starts it again, so a crashing upstream is not restarted in
// a loop.
const restartAfter = time.Second

// upstream is one configured upstream and its connection. Its tools are
// pinned at start: the hash of each declared tool seen then. A later
// list (after a restart, or a list_changed notification) that changes a
// tool's hash, or drops it, withholds it until ingestd starts again with
// its declaration.
type upstream struct {
	cfg Upstream
	g   *Gateway

	mu        sync.Mutex
	cs        *mcp.ClientSession
	pipe      *pipe     // cs's stdio connection, for the lane; nil for other transports
	down      error     // why the connection is gone, nil while up
	downSince time.Time // when it went
	pinned    map[string]string
	tools     map[string]*mcp.Tool // declared tools seen at start, by upstream name
	withheld  map[string]string    // tool -> why
	listing   Listing
}

// env is the environment an upstream command gets: PATH, HOME, and the
// variables its declaration names, never the rest of ingestd's (tokens,
// keys).
func (u *upstream) env() []string {
	names := append([]string{"PATH", "HOME", "LANG", "TMPDIR"}, u.cfg.Env...)
	var out []string
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			out = append(out, n+"="+v)
		}
	}
	return out
}

// transport is how to reach the upstream; a stdio one's pipe beside it.
func (u *upstream) transport(ctx context.Context) (mcp.Transport, *pipe, error) {
	switch {
	case u.cfg.Connect != nil:
		t, err := u.cfg.Connect(ctx)
		return t, nil, err
	case len(u.cfg.Command) > 0:
		cmd := exec.Command(u.cfg.Command[0], u.cfg.Command[1:]...)
		cmd.Env = u.env()
		cmd.Stderr = &logWriter{log: u.g.log, upstream: u.cfg.ID}
		p := newPipe(cmd, lineCap(u.g.o.MaxResultBytes), u.g.o.CallTimeout)
		return &pipeTransport{p: p}, p, nil
	case u.cfg.URL != "":
		hc := &http.Client{Transport: &bearer{token: u.cfg.Token, next: http.DefaultTransport}}
		return &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: hc, MaxRetries: 1}, nil, nil
	}
	return nil, nil, errors.New("neither command nor url")
}

// lineCap bounds one message from a stdio upstream: room for a result at
// the cap written with every character escaped, and never under 4 MiB.
func lineCap(maxResult int) int {
	return max(4<<20, 6*maxResult+64<<10)
}

// connect starts (or restarts) the upstream and lists its tools. Called
// with u.mu held.
func (u *upstream) connect(ctx context.Context) error {
	t, p, err := u.transport(ctx)
	if err != nil {
		return err
	}
	c := mcp.NewClient(clientInfo(u.g.o.Version), &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { go u.relist() },
		Capabilities:           &mcp.ClientCapabilities{},
	})
	cctx, cancel := context.WithTimeout(ctx, u.g.o.CallTimeout)
	defer cancel()
	cs, err := c.Connect(cctx, t, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	tools, err := listTools(cctx, cs)
	if err != nil {
		_ = cs.Close()
		return fmt.Errorf("list tools: %w", err)
	}
	if p != nil {
		var ok bool
		if p.meta, ok = requestMeta(cs.InitializeResult(), u.g.o.Version); !ok {
			p = nil // a protocol the lane does not write: every call goes through the SDK
		}
	}
	u.cs, u.pipe, u.down = cs, p, nil
	go func() {
		err := cs.Wait()
		u.mu.Lock()
		if u.cs == cs {
			u.cs, u.pipe, u.down, u.downSince = nil, nil, fmt.Errorf("connection closed: %v", err), u.g.o.Now()
			u.g.log.Warn("gateway.upstream.down", "upstream", u.cfg.ID, "err", err)
		}
		u.mu.Unlock()
	}()
	u.compare(tools)
	return nil
}

// requestMeta is what the lane puts in each request's _meta as the SDK's
// client would on a session of r's protocol: nothing under the dated
// versions before 2026-07-28, the per-request triple (version, client,
// its capabilities) under 2026-07-28; ok false for a version the lane
// does not know.
func requestMeta(r *mcp.InitializeResult, version string) (json.RawMessage, bool) {
	switch r.ProtocolVersion {
	case "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25":
		return nil, true
	case "2026-07-28":
		b, err := json.Marshal(map[string]any{
			mcp.MetaKeyProtocolVersion:    r.ProtocolVersion,
			mcp.MetaKeyClientInfo:         clientInfo(version),
			mcp.MetaKeyClientCapabilities: map[string]any{},
		})
		return b, err == nil
	}
	return nil, false
}

func clientInfo(version string) *mcp.Implementation {
	return &mcp.Implementation{Name: "ingestd-gateway", Version: version}
}

func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		out = append(out, t)
		if len(out) > 10000 {
			return nil, errors.New("more than 10000 tools")
		}
	}
	return out, nil
}

// compare reads a tool list against the declaration and what was pinned.
// The first list pins; later ones withhold what changed. Called with u.mu
// held.
func (u *upstream) compare(tools []*mcp.Tool) {
	first := u.pinned == nil
	if first {
		u.pinned, u.tools, u.withheld = map[string]string{}, map[string]*mcp.Tool{}, map[string]string{}
	}
	l := Listing{Upstream: u.cfg.ID}
	seen := map[string]bool{}
	for _, t := range tools {
		seen[t.Name] = true
		d, declared := u.cfg.Tools[t.Name]
		l.Offered = append(l.Offered, Offered{Name: t.Name, Declared: declared, Decl: d, Suggested: Suggest(t.Annotations), Title: t.Title})
		if !declared {
			l.Undeclared = append(l.Undeclared, t.Name)
			continue
		}
		h := schemaHash(t.Description, t.InputSchema, t.OutputSchema)
		switch prev, ok := u.pinned[t.Name]; {
		case first:
			if err := validName(u.cfg.ID, t.Name); err != nil {
				u.withheld[t.Name] = err.Error()
				continue
			}
			u.pinned[t.Name], u.tools[t.Name] = h, t
			u.g.offerLate(u, t, t.Name)
		case !ok:
			// Declared but absent at start: offered after a restart.
		case prev != h:
			u.withhold(t.Name, "its description or schema changed since start")
		}
	}
	for name := range u.pinned {
		if !seen[name] {
			u.withhold(name, "the upstream no longer offers it")
		}
	}
	for name := range u.cfg.Tools {
		if !seen[name] {
			l.Missing = append(l.Missing, name)
		}
	}
	slices.Sort(l.Undeclared)
	slices.Sort(l.Missing)
	u.listing = l
	if len(l.Undeclared) > 0 {
		u.g.log.Warn("gateway.undeclared_tools", "upstream", u.cfg.ID, "tools", l.Undeclared,
			"note", "an undeclared tool is never offered; declare it under gateway.upstreams[].tools")
	}
}

// withhold stops offering the tool. Called with u.mu held.
func (u *upstream) withhold(name, why string) {
	if _, done := u.withheld[name]; done {
		return
	}
	u.withheld[name] = why
	u.g.log.Warn("gateway.tool_withheld", "upstream", u.cfg.ID, "tool", name, "reason", why)
	u.g.count(u.cfg.ID, name, "withheld")
	go u.g.remove(exposedName(u.cfg.ID, name))
}

func (u *upstream) relist() {
	u.mu.Lock()
	cs := u.cs
	u.mu.Unlock()
	if cs == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), u.g.o.CallTimeout)
	defer cancel()
	tools, err := listTools(ctx, cs)
	if err != nil {
		u.g.log.Warn("gateway.upstream.list", "upstream", u.cfg.ID, "err", err)
		return
	}
	u.mu.Lock()
	u.compare(tools)
	u.mu.Unlock()
}

// session returns the live connection, restarting a gone upstream when
// restartAfter has passed since it went.
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != nil {
		return u.cs, nil
	}
	if u.down != nil && u.g.o.Now().Sub(u.downSince) < restartAfter {
		return nil, u.down
	}
	if err := u.connect(ctx); err != nil {
		u.down, u.downSince = err, u.g.o.Now()
		return nil, err
	}
	u.g.log.Info("gateway.upstream.up", "upstream", u.cfg.ID)
	return u.cs, nil
}

// withheldWhy says why the tool is withheld, "" when it is offered.
func (u *upstream) withheldWhy(name string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.withheld[name]
}

func (u *upstream) close() {
	u.mu.Lock()
	cs := u.cs
	u.cs, u.pipe = nil, nil
	u.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

// logWriter sends an upstream's stderr to the log, a line at a time,
// each cut to 1 KiB.
type logWriter struct {
	log      *slog.Logger
	upstream string
}

func (w *logWriter) Write(p []byte) (int, error) {
	s := string(p)
	if len(s) > 1024 {
		s = s[:1024]
	}
	w.log.Debug("gateway.upstream.stderr", "upstream", w.upstream, "text", s)
	return len(p), nil
}
