package gateway

import (
	"container/list"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// confirmInput is the id of the one input request a refused call asks:
// the person's yes or no.
const confirmInput = "io.ingestd/confirm"

// maxPending bounds the questions awaiting an answer, gateway-wide; the
// oldest is forgotten first (its answer then finds nothing and refuses).
const maxPending = 1024

// pending is one question asked: the call it is about (its hash) and the
// session it was asked in. It is taken, never read twice.
type pending struct {
	id      string
	hash    string
	session *mcp.ServerSession
	expires time.Time
}

// confirms holds the questions asked and not yet answered. An answer
// runs its call only when its state names a question still here, asked
// in the same session, not expired, about the same call hash; the
// question is gone after its first answer, so a replayed answer finds
// nothing.
type confirms struct {
	mu    sync.Mutex
	byID  map[string]*list.Element
	order *list.List // of *pending, oldest at the back
	ttl   time.Duration
	now   func() time.Time
}

func newConfirms(ttl time.Duration, now func() time.Time) *confirms {
	return &confirms{byID: map[string]*list.Element{}, order: list.New(), ttl: ttl, now: now}
}

// ask records a question about hash in ss and returns its state: 128
// random bits, the only thing the host echoes back.
func (c *confirms) ask(ss *mcp.ServerSession, hash string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byID[id] = c.order.PushFront(&pending{id: id, hash: hash, session: ss, expires: c.now().Add(c.ttl)})
	for c.order.Len() > maxPending {
		old := c.order.Back()
		delete(c.byID, old.Value.(*pending).id)
		c.order.Remove(old)
	}
	return id
}

// answerState is what an answer's state turned out to be.
type answerState int

const (
	answerUnknown   answerState = iota // no such question: never asked, answered already, forgotten
	answerExpired                      // asked, but longer ago than the TTL
	answerOtherSes                     // asked in another session
	answerOtherCall                    // asked about another call: ask again
	answerValid
)

// take removes the question state names and says whether it was asked
// about hash in ss, in time.
func (c *confirms) take(ss *mcp.ServerSession, state, hash string) answerState {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byID[state]
	if !ok {
		return answerUnknown
	}
	p := e.Value.(*pending)
	delete(c.byID, state)
	c.order.Remove(e)
	switch {
	case p.session != ss:
		return answerOtherSes
	case !c.now().Before(p.expires):
		return answerExpired
	case p.hash != hash:
		return answerOtherCall
	}
	return answerValid
}

// question is the text a person is asked, rendered by ingestd from the
// call itself: never text a model or an upstream wrote, except the
// arguments, shown as canonical JSON in printable ASCII.
func question(upstream, tool, class string, canonical []byte, why *taint, hash string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ingestd stopped a tool call: this turn read text ingestd does not trust (%s).\n", why)
	b.WriteString("Run exactly this call, once?\n")
	fmt.Fprintf(&b, "upstream: %s\ntool: %s (class %s)\narguments: %s\ncall: %s", upstream, tool, class, canonical, hash)
	return b.String()
}

// confirmSchema is the form of the question: one boolean.
var confirmSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Run this exact call once", "default": false},
	},
	"required": []string{"approve"},
}

// approved reports whether an input response is a person's yes: an
// accepted form with approve true.
func approved(r mcp.InputResponse) (yes bool, action string) {
	er, ok := r.(*mcp.ElicitResult)
	if !ok || er == nil {
		return false, "malformed"
	}
	if er.Action != "accept" {
		return false, er.Action
	}
	v, ok := er.Content["approve"].(bool)
	if !ok || !v {
		return false, "accept without approve"
	}
	return true, "accept"
}
