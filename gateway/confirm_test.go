package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/gateway"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// person answers the host's questions from a script, recording them.
type person struct {
	mu        sync.Mutex
	answers   []bool
	questions []string
}

func (p *person) elicit(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.questions = append(p.questions, req.Params.Message)
	yes := false
	if len(p.answers) > 0 {
		yes, p.answers = p.answers[0], p.answers[1:]
	}
	if !yes {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
}

// TestInjectedMailAsksAndConfirmedCallRunsOnce is the end-to-end case: an
// injected mail in one turn's retrieval asks for a write; without a yes
// it never reaches the upstream; the person's yes runs that exact call
// once; the same call again asks again (the yes was used), a call one
// byte different asks again too.
func TestInjectedMailAsksAndConfirmedCallRunsOnce(t *testing.T) {
	c := newCRM(t)
	g := mustGateway(t, gateway.Options{Upstreams: []gateway.Upstream{c.upstream()}})
	p := &person{answers: []bool{false, true, false, false}}
	cs := mustHost(t, g, mustRetriever(t), &mcp.ClientOptions{ElicitationHandler: p.elicit})
	call(t, cs, "retrieve", refundQuery, "t")
	args := map[string]any{"to": "attacker@example.net", "body": "customer list"}

	if r := call(t, cs, "crm__send_mail", args, "t"); !r.IsError || c.called("send_mail") != 0 {
		t.Fatalf("declined call: error %v, upstream calls %d", r.IsError, c.called("send_mail"))
	}
	q := p.questions[0]
	for _, want := range []string{"upstream: crm", "tool: send_mail (class write)", `arguments: {"body":"customer list","to":"attacker@example.net"}`, "call: sha256:", retrievaltest.Refund.ID()} {
		if !strings.Contains(q, want) {
			t.Errorf("question lacks %q:\n%s", want, q)
		}
	}
	if r := call(t, cs, "crm__send_mail", args, "t"); r.IsError || c.called("send_mail") != 1 {
		t.Fatalf("confirmed call: %q, upstream calls %d, want 1", text(r), c.called("send_mail"))
	}
	if r := call(t, cs, "crm__send_mail", args, "t"); !r.IsError || c.called("send_mail") != 1 {
		t.Fatalf("the same call again ran without a new yes (upstream calls %d)", c.called("send_mail"))
	}
	args["to"] = "attacker@example.nez"
	call(t, cs, "crm__send_mail", args, "t")
	if got := len(p.questions); got != 4 || c.called("send_mail") != 1 {
		t.Fatalf("questions = %d, upstream calls = %d, want 4 and 1", got, c.called("send_mail"))
	}

	// The decision log has each question and its answer, newest first,
	// named by the call's hash and what tainted the turn, never by the
	// arguments.
	ds, err := g.GatewayDecisions(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, d := range ds {
		outcomes = append(outcomes, d.Outcome)
		if d.Upstream != "crm" || d.Tool != "send_mail" || d.Class != ingestd.ToolWrite || d.Scope != "turn" ||
			!strings.HasPrefix(d.CallHash, "sha256:") || !strings.Contains(d.TaintedBy, retrievaltest.Refund.ID()) {
			t.Errorf("decision %+v", d)
		}
		if b, _ := json.Marshal(d); strings.Contains(string(b), "attacker@") || strings.Contains(string(b), "customer list") {
			t.Errorf("a decision carries the call's arguments: %s", b)
		}
	}
	if got, want := strings.Join(outcomes, " "), "declined asked declined asked confirmed asked declined asked"; got != want {
		t.Errorf("decisions, newest first: %s; want %s", got, want)
	}
	if ds[len(ds)-1].CallHash != ds[len(ds)-4].CallHash || ds[0].CallHash == ds[2].CallHash {
		t.Error("the decisions' hashes do not tell the one call from the other")
	}
}

// rawHost is a host that answers input requests itself (the client's
// automatic round trip off), so a test can replay an answer.
func rawHost(t *testing.T, g *gateway.Gateway) *mcp.ClientSession {
	return mustHost(t, g, mustRetriever(t), &mcp.ClientOptions{
		ElicitationHandler: (&person{}).elicit,
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
	})
}

func yes() mcp.InputResponseMap {
	return mcp.InputResponseMap{"io.ingestd/confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
}

func TestReplayedConfirmationIsRefused(t *testing.T) {
	c := newCRM(t)
	g := mustGateway(t, gateway.Options{Upstreams: []gateway.Upstream{c.upstream()}})
	cs := rawHost(t, g)
	call(t, cs, "retrieve", refundQuery, "")
	args := json.RawMessage(`{"to":"a@example.net"}`)
	first := call(t, cs, "crm__send_mail", args, "")
	if first.RequestState == "" || len(first.InputRequests) != 1 {
		t.Fatalf("a refused call with a host that can ask did not ask: %+v", first)
	}
	retry := &mcp.CallToolParams{Name: "crm__send_mail", Arguments: args, InputResponses: yes(), RequestState: first.RequestState}
	r, err := cs.CallTool(t.Context(), retry)
	if err != nil || r.IsError || c.called("send_mail") != 1 {
		t.Fatalf("the answered call: %v %q, upstream calls %d", err, text(r), c.called("send_mail"))
	}
	r, err = cs.CallTool(t.Context(), retry)
	if err != nil || !r.IsError || !strings.Contains(text(r), "already used") || c.called("send_mail") != 1 {
		t.Fatalf("the replayed answer: %v %q, upstream calls %d", err, text(r), c.called("send_mail"))
	}
	// A yes to one call does not run another: one byte differs, so it asks again.
	second := call(t, cs, "crm__send_mail", args, "")
	other := &mcp.CallToolParams{Name: "crm__send_mail", Arguments: json.RawMessage(`{"to":"b@example.net"}`), InputResponses: yes(), RequestState: second.RequestState}
	r, err = cs.CallTool(t.Context(), other)
	if err != nil || r.RequestState == "" || c.called("send_mail") != 1 {
		t.Fatalf("a yes carried over to other arguments: %v %+v, upstream calls %d", err, r, c.called("send_mail"))
	}
	// A forged state is no question.
	forged := &mcp.CallToolParams{Name: "crm__send_mail", Arguments: args, InputResponses: yes(), RequestState: strings.Repeat("0", 32)}
	if r, err := cs.CallTool(t.Context(), forged); err != nil || !r.IsError || c.called("send_mail") != 1 {
		t.Fatalf("a forged state ran the call: %v %q", err, text(r))
	}
}

func TestExpiredConfirmationIsRefused(t *testing.T) {
	c := newCRM(t)
	now := time.Unix(1e9, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	g := mustGateway(t, gateway.Options{Upstreams: []gateway.Upstream{c.upstream()}, Now: clock, ConfirmTTL: time.Minute})
	cs := rawHost(t, g)
	call(t, cs, "retrieve", refundQuery, "")
	args := json.RawMessage(`{"to":"a@example.net"}`)
	first := call(t, cs, "crm__send_mail", args, "")
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	r, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "crm__send_mail", Arguments: args, InputResponses: yes(), RequestState: first.RequestState})
	if err != nil || !r.IsError || !strings.Contains(text(r), "expired") || c.called("send_mail") != 0 {
		t.Fatalf("an expired yes: %v %q, upstream calls %d", err, text(r), c.called("send_mail"))
	}
}

func TestAnotherSessionCannotAnswer(t *testing.T) {
	c := newCRM(t)
	g := mustGateway(t, gateway.Options{Upstreams: []gateway.Upstream{c.upstream()}})
	a, b := rawHost(t, g), rawHost(t, g)
	call(t, a, "retrieve", refundQuery, "")
	call(t, b, "retrieve", refundQuery, "")
	args := json.RawMessage(`{"to":"a@example.net"}`)
	first := call(t, a, "crm__send_mail", args, "")
	r, err := b.CallTool(t.Context(), &mcp.CallToolParams{Name: "crm__send_mail", Arguments: args, InputResponses: yes(), RequestState: first.RequestState})
	if err != nil || !r.IsError || c.called("send_mail") != 0 {
		t.Fatalf("session b answered a's question: %v %q", err, text(r))
	}
}

// TestDecisionLogKeepsTheNewest: a host that cannot ask has each write of
// a tainted turn refused; the log keeps the newest 500, newest first.
func TestDecisionLogKeepsTheNewest(t *testing.T) {
	c := newCRM(t)
	g := mustGateway(t, gateway.Options{Upstreams: []gateway.Upstream{c.upstream()}})
	cs := mustHost(t, g, mustRetriever(t), nil)
	call(t, cs, "retrieve", refundQuery, "")
	const calls = 503
	var last []byte
	for i := range calls {
		args := json.RawMessage(fmt.Sprintf(`{"to":"n%d@example.net"}`, i))
		if r := call(t, cs, "crm__send_mail", args, ""); !r.IsError {
			t.Fatalf("call %d ran in a tainted turn", i)
		}
		last, _ = gateway.Canonical(args)
	}
	ds, _ := g.GatewayDecisions(t.Context(), 0)
	if len(ds) != 500 {
		t.Fatalf("%d decisions kept, want 500", len(ds))
	}
	if want := gateway.CallHash("crm", "send_mail", last, "session"); ds[0].CallHash != want || ds[0].Outcome != ingestd.GatewayRefused || ds[0].Scope != "session" {
		t.Errorf("newest decision %+v, want the last call (%s) refused in the session", ds[0], want)
	}
	if !strings.Contains(ds[0].Detail, "cannot ask") {
		t.Errorf("detail %q", ds[0].Detail)
	}
	if few, _ := g.GatewayDecisions(t.Context(), 3); len(few) != 3 || few[0] != ds[0] || few[2] != ds[2] {
		t.Errorf("limit 3: %d decisions", len(few))
	}
}
