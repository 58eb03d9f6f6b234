package gateway_test

import (
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd/gateway"
)

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TestTurnWindow: with a window, a host that marks no turns has its
// writes refused after a blocking retrieve until the window has passed
// with no new taint — a new taint starts it again — while a turn the
// host marked stays tainted; without a window the session stays tainted.
func TestTurnWindow(t *testing.T) {
	const window = 10 * time.Minute
	for _, w := range []time.Duration{0, window} {
		c := newCRM(t)
		clk := &clock{now: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)}
		g := mustGateway(t, gateway.Options{Upstreams: []gateway.Upstream{c.upstream()}, TurnWindow: w, Now: clk.Now})
		cs := mustHost(t, g, mustRetriever(t), nil)
		send := func(turn string) bool {
			t.Helper()
			return !call(t, cs, "crm__send_mail", map[string]any{"to": "a@example.net"}, turn).IsError
		}
		call(t, cs, "retrieve", refundQuery, "")
		call(t, cs, "retrieve", refundQuery, "marked")
		if send("") {
			t.Fatalf("window %v: a write ran right after a blocking retrieve", w)
		}
		clk.Add(window - time.Second)
		call(t, cs, "retrieve", refundQuery, "") // a new taint: the window starts again
		clk.Add(window - time.Second)
		if send("") {
			t.Fatalf("window %v: a write ran within the window of the last taint", w)
		}
		clk.Add(2 * time.Second)
		if got, want := send(""), w > 0; got != want {
			t.Errorf("window %v: a write %v the window after the last taint passed, want %v", w, map[bool]string{true: "ran", false: "was refused"}[got], want)
		}
		if send("marked") {
			t.Errorf("window %v: the marked turn's write ran: its taint lasts as long as the turn", w)
		}
	}
}
