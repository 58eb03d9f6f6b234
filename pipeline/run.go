package pipeline

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ingestd/ingestd"
)

// Bounds of what a pass's record keeps of its cursors and its error: the
// history is for people reading a table, not for replaying a pass.
const (
	maxCursorKeys    = 4
	maxCursorValue   = 96
	maxErrorInRecord = 2000
)

// Run is the record of the pass for the sync history: its summary, the
// trigger that started it and err, what Sync or SyncDispatch returned
// (nil for a pass that succeeded). The error is kept as text without the
// "sync <installation>: " its caller already knows, in valid UTF-8 with
// control characters replaced, at most 2000 bytes; an error that is not
// an *ingestd.Error is kept too: the history is for the operator, and
// the routes that show it need the admin scope.
func (s Summary) Run(trigger string, err error) ingestd.SyncRun {
	r := ingestd.SyncRun{
		Installation: s.Installation, Trigger: trigger, StartedAt: s.StartedAt, Duration: s.Duration,
		Seen: s.Seen, Added: s.Added, Changed: s.Changed, Unchanged: s.Unchanged, Deleted: s.Deleted,
		Failed: s.Failed, Skipped: s.Skipped, Queued: s.Queued, Complete: s.Complete, Cursors: s.Cursors,
	}
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "sync "+s.Installation+": ")
		var ie *ingestd.Error
		if errors.As(err, &ie) && strings.HasSuffix(msg, ie.Error()) {
			// "unavailable: ..." is for programs; the history is for people.
			msg = strings.TrimSuffix(msg, ie.Error()) + ie.Message
		}
		if msg = printable(msg, maxErrorInRecord); msg == "" {
			msg = "failed" // a pass that failed never reads as one that succeeded
		}
		r.Error = msg
	}
	return r
}

// cursorLog remembers the cursors a pass wrote, in the order first
// written, with the last value of each.
type cursorLog struct {
	keys   []string
	values map[string]string
}

func (c *cursorLog) set(key, value string) {
	if c.values == nil {
		c.values = map[string]string{}
	}
	if _, ok := c.values[key]; !ok {
		c.keys = append(c.keys, key)
	}
	c.values[key] = value
}

// summary is "key=value; key=value (+N more)": the first four keys
// written, each value cut to 96 bytes. A connector may keep large state
// in a cursor (a mailbox's known UIDs); the summary says where the pass
// got to, not all it knows.
func (c *cursorLog) summary() string {
	if len(c.keys) == 0 {
		return ""
	}
	var b strings.Builder
	for i, k := range c.keys[:min(len(c.keys), maxCursorKeys)] {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(printable(k, maxCursorValue))
		b.WriteByte('=')
		b.WriteString(printable(c.values[k], maxCursorValue))
	}
	if n := len(c.keys) - maxCursorKeys; n > 0 {
		fmt.Fprintf(&b, " (+%d more)", n)
	}
	return b.String()
}

// printable returns s in valid UTF-8 with control characters (NUL, line
// breaks) as spaces, cut to at most max bytes at a character boundary
// with "…" marking the cut.
func printable(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
