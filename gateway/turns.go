package gateway

import (
	"container/list"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TurnMetaKey is the request _meta key under which a host names its
// turn. Calls that carry the same id in one MCP session share a taint; a
// call without one is judged by the whole session's.
const TurnMetaKey = "io.ingestd/turn"

// TurnScopeMetaKey is the result _meta key saying which scope a call was
// judged in: "turn" (the host's id, echoed under TurnMetaKey) or
// "session".
const TurnScopeMetaKey = "io.ingestd/turn_scope"

// Bounds of the taint bookkeeping, per session.
const (
	maxReasons   = 16 // taint reasons kept per turn; more are counted
	maxReasonIDs = 32 // document ids kept per reason
)

// taint is why a turn is tainted: what tainted it, in order, capped.
type taint struct {
	reasons []string
	more    int // reasons past maxReasons, counted
}

func (t *taint) add(r string) {
	if t == nil || r == "" {
		return
	}
	if len(t.reasons) >= maxReasons {
		if !contains(t.reasons, r) {
			t.more++
		}
		return
	}
	if !contains(t.reasons, r) {
		t.reasons = append(t.reasons, r)
	}
}

func (t *taint) merge(o *taint) {
	for _, r := range o.reasons {
		t.add(r)
	}
	t.more += o.more
}

func (t *taint) tainted() bool { return t != nil && (len(t.reasons) > 0 || t.more > 0) }

// String names what tainted the turn, for a refusal and a question.
func (t *taint) String() string {
	s := strings.Join(t.reasons, "; ")
	if t.more > 0 {
		s += fmt.Sprintf("; and %d more", t.more)
	}
	return s
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// session is one MCP session's taint: the whole session's (what a call
// without a turn id is judged by, and which every turn's taint joins),
// what was recorded without a turn id (which every turn is judged by),
// the turns it named, least recently used first out, and what evicted
// turns carried (which every turn created after an eviction inherits,
// so forgetting a turn never makes it clean).
type session struct {
	whole    taint
	unscoped taint     // recorded without a turn id: every turn is judged by it too
	last     time.Time // when whole was last tainted (for the window)
	evicted  taint
	turns    map[string]*list.Element
	order    *list.List // of *turnEntry, front most recent
	maxTurns int
}

type turnEntry struct {
	id string
	t  taint
}

// turns holds the sessions' taint, keyed by the SDK's session (one per
// stdio process, one per Streamable HTTP session). A session's entry
// lives as long as the session: prune drops those no server lists.
type turns struct {
	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session
	maxTurns int
	window   time.Duration // Options.TurnWindow: 0 is the whole session
	now      func() time.Time
	added    int
}

func newTurns(maxTurns int, window time.Duration, now func() time.Time) *turns {
	return &turns{sessions: map[*mcp.ServerSession]*session{}, maxTurns: maxTurns, window: window, now: now}
}

// session returns the session's taint, made when new; with a window,
// what was recorded without a turn (and the whole session's) is
// forgotten once the window passed with no new taint.
func (ts *turns) session(ss *mcp.ServerSession) *session {
	s := ts.sessions[ss]
	if s == nil {
		s = &session{turns: map[string]*list.Element{}, order: list.New(), maxTurns: ts.maxTurns}
		ts.sessions[ss] = s
		ts.added++
	}
	if ts.window > 0 && !s.last.IsZero() && ts.now().Sub(s.last) >= ts.window {
		s.whole, s.unscoped, s.last = taint{}, taint{}, time.Time{}
	}
	return s
}

// turn returns the turn's entry, made (and the least recent evicted)
// when new.
func (s *session) turn(id string) *turnEntry {
	if e, ok := s.turns[id]; ok {
		s.order.MoveToFront(e)
		return e.Value.(*turnEntry)
	}
	te := &turnEntry{id: id}
	te.t.merge(&s.evicted)
	s.turns[id] = s.order.PushFront(te)
	for s.order.Len() > s.maxTurns {
		old := s.order.Back()
		ot := old.Value.(*turnEntry)
		s.evicted.merge(&ot.t)
		s.order.Remove(old)
		delete(s.turns, ot.id)
	}
	return te
}

// Taint records reason in the turn id of ss (and in the whole session).
func (ts *turns) Taint(ss *mcp.ServerSession, id, reason string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s := ts.session(ss)
	s.whole.add(reason)
	s.last = ts.now()
	if id == "" {
		s.unscoped.add(reason)
	} else {
		s.turn(id).t.add(reason)
	}
}

// Of returns a copy of what tainted the turn id of ss (the whole
// session's when id is empty); nil when nothing did.
func (ts *turns) Of(ss *mcp.ServerSession, id string) *taint {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	s := ts.session(ss)
	c := &taint{}
	if id == "" {
		c.merge(&s.whole)
	} else {
		c.merge(&s.turn(id).t)
		c.merge(&s.unscoped)
	}
	if !c.tainted() {
		return nil
	}
	return c
}

// prune drops the sessions live does not report, once enough sessions
// were added since the last prune.
func (ts *turns) prune(live func(*mcp.ServerSession) bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.added < 256 {
		return
	}
	ts.added = 0
	for ss := range ts.sessions {
		if !live(ss) {
			delete(ts.sessions, ss)
		}
	}
}

// sessionTurns is the number of turns a session holds (tests, benchmarks).
func (ts *turns) sessionTurns(ss *mcp.ServerSession) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.session(ss).order.Len()
}
