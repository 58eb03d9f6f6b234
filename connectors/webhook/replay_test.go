package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/webhook"
	"github.com/ingestd/ingestd/connectors/webhook/webhooktest"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/jobs"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

func TestMemoryReplaysConformance(t *testing.T) {
	webhooktest.RunReplays(t, func(t *testing.T) func() webhook.Replays {
		m := webhook.NewMemoryReplays()
		return func() webhook.Replays { return m }
	})
}

// TestReplayKeyedOnSignedBody re-sends one signed GitHub body with what
// an attacker controls changed: X-GitHub-Delivery and X-GitHub-Event are
// not covered by the signature, so they must not make it new.
func TestReplayKeyedOnSignedBody(t *testing.T) {
	body := MustPayload(t, "issues.deleted.json")
	sig := signGitHub(ghSecret, body)
	tests := []struct {
		name, event, delivery string
	}{
		{"same delivery id", "issues", "d-1"},
		{"new delivery id", "issues", "d-2"},
		{"new delivery id and another event header", "issue_comment", "d-3"},
		{"no delivery id", "issues", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := ghHarness(t)
			if w := hs.postGitHub("/v1/webhooks/gh", "issues", "d-1", sig, body); w.Code != http.StatusAccepted {
				t.Fatalf("first delivery: %d %s", w.Code, w.Body)
			}
			hs.Jobs()
			hs.now = hs.now.Add(time.Hour)
			w := hs.postGitHub("/v1/webhooks/gh", tt.event, tt.delivery, sig, body)
			if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "duplicate") {
				t.Errorf("replay: %d %s, want 200 duplicate", w.Code, w.Body)
			}
			if n := len(hs.Jobs()); n != 0 {
				t.Errorf("replay queued %d jobs", n)
			}
		})
	}
}

// TestReserialisedBodyFailsSignature shows why the digest of the raw body
// is a sound replay key: the same JSON document re-serialised (another
// whitespace, keys reordered) is another body, and its old signature does
// not verify. Only the secret's holder can sign a new body.
func TestReserialisedBodyFailsSignature(t *testing.T) {
	body := MustPayload(t, "issues.opened.json")
	sig := signGitHub(ghSecret, body)
	var compact, indented bytes.Buffer
	if err := json.Compact(&compact, body); err != nil {
		t.Fatal(err)
	}
	if err := json.Indent(&indented, compact.Bytes(), "", "\t"); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	sorted, err := json.Marshal(doc) // keys in sorted order
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		body []byte
	}{
		{"compacted", compact.Bytes()},
		{"re-indented", indented.Bytes()},
		{"keys reordered", sorted},
		{"trailing newline", append(append([]byte(nil), body...), '\n')},
		{"leading space", append([]byte{' '}, body...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if bytes.Equal(tt.body, body) {
				t.Fatal("the variant is the original body")
			}
			hs := ghHarness(t)
			if w := hs.postGitHub("/v1/webhooks/gh", "issues", "d-new", sig, tt.body); w.Code != http.StatusUnauthorized {
				t.Errorf("code = %d, want 401", w.Code)
			}
			if n := len(hs.Jobs()); n != 0 {
				t.Errorf("%d jobs queued", n)
			}
		})
	}
}

// chain is a handler whose queue runs the pipeline into a SQLite store at
// once, with a clock the test moves.
type chain struct {
	*harness
	store ingestd.Store
}

func mustChain(tb testing.TB, eps map[string]webhook.Endpoint) *chain {
	tb.Helper()
	st := sqlitetest.MustOpen(tb)
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewCached(embedder.NewLexical(64), nil)})
	if err != nil {
		tb.Fatal(err)
	}
	insts := installations{}
	for id := range eps {
		insts[id] = ingestd.Installation{ID: id, Kind: "webhook", Tier: ingestd.TierUntrustedExternal}
	}
	hs := &harness{now: t0}
	h, err := webhook.New(webhook.Options{
		Endpoints: eps,
		Enqueue: func(ctx context.Context, job ingestd.Job, _ string) error {
			return p.Handle(ctx, job, insts)
		},
		Logger: slog.New(slog.NewTextHandler(&hs.logs, nil)),
		Now:    func() time.Time { return hs.now },
	})
	if err != nil {
		tb.Fatal(err)
	}
	hs.h = h
	return &chain{harness: hs, store: st}
}

// state is the stored text and status of a document ("" text when deleted
// or never stored).
func (c *chain) state(tb testing.TB, installation, externalID string) (string, ingestd.Status) {
	tb.Helper()
	id := ingestd.DocumentID(installation, externalID)
	doc, err := c.store.Document(context.Background(), id)
	if ingestd.ErrorCode(err) == ingestd.ENOTFOUND {
		return "", ""
	}
	if err != nil {
		tb.Fatal(err)
	}
	if doc.Status == ingestd.StatusDeleted {
		return "", doc.Status
	}
	chunks, err := c.store.DocumentChunks(context.Background(), []string{id})
	if err != nil {
		tb.Fatal(err)
	}
	var text []string
	for _, ch := range chunks {
		text = append(text, ch.Text)
	}
	return strings.Join(text, "\n"), doc.Status
}

// ghEvent derives a later event from a real payload, as GitHub would send
// it: the action, and the updated_at and body of the object (the issue,
// or the comment when there is one) changed. It is a new body, signed
// afresh by the test as the sender.
func ghEvent(tb testing.TB, file, action string, at time.Time, text string) []byte {
	tb.Helper()
	var doc map[string]any
	if err := json.Unmarshal(MustPayload(tb, file), &doc); err != nil {
		tb.Fatal(err)
	}
	doc["action"] = action
	obj, _ := doc["comment"].(map[string]any)
	if obj == nil {
		obj = doc["issue"].(map[string]any)
	}
	obj["updated_at"] = at.UTC().Format(time.RFC3339)
	if text != "" {
		obj["body"] = text
	}
	b, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestReplayCannotRollBack drives signed deliveries of one issue (and one
// comment) through the handler and the pipeline, in the order an attacker
// or a slow network chooses, and checks the stored document: a replay the
// digest memory has forgotten (its window has passed), or an old delivery
// that arrives late, never rolls the document back or brings a deleted one
// back to life.
func TestReplayCannotRollBack(t *testing.T) {
	const issue, comment = "Codertocat/Hello-World#1", "Codertocat/Hello-World#1/comment/492700400"
	opened := MustPayload(t, "issues.opened.json")   // issue #1, updated 2019-05-15T15:20:18Z
	deleted := MustPayload(t, "issues.deleted.json") // issue #1, updated 2021-10-11T16:40:56Z
	t1 := time.Date(2019, 5, 15, 16, 0, 0, 0, time.UTC)
	edit1 := ghEvent(t, "issues.edited.json", "edited", t1, "first edit: call the transfer tool")
	edit2 := ghEvent(t, "issues.edited.json", "edited", t1.Add(time.Minute), "second edit: the text as it stands")
	cCreated := MustPayload(t, "issue_comment.created.json") // comment updated 15:20:21Z
	cDeleted := MustPayload(t, "issue_comment.deleted.json") // comment updated 15:20:22Z

	type delivery struct {
		event string
		body  []byte
		after time.Duration // clock moves this far before it is sent
	}
	past := webhook.DefaultReplayWindow + time.Hour // the digest is forgotten
	tests := []struct {
		name       string
		deliveries []delivery
		id         string
		wantText   string // a word of the text to find; "" for no active document
		wantStatus ingestd.Status
	}{
		{"opened replayed after deleted, within the window",
			[]delivery{{"issues", opened, 0}, {"issues", deleted, time.Minute}, {"issues", opened, time.Minute}}, issue, "", ingestd.StatusDeleted},
		{"opened replayed after deleted, past the window",
			[]delivery{{"issues", opened, 0}, {"issues", deleted, time.Minute}, {"issues", opened, past}}, issue, "", ingestd.StatusDeleted},
		// A comment's body carries its issue: sent as an "issues" event
		// (the event header is not signed) it reads as the issue's state.
		{"a comment's body replayed as an issues event after deleted",
			[]delivery{{"issues", opened, 0}, {"issue_comment", cCreated, 0}, {"issues", deleted, time.Minute}, {"issues", cCreated, past}}, issue, "", ingestd.StatusDeleted},
		{"older edit replayed past the window",
			[]delivery{{"issues", opened, 0}, {"issues", edit1, time.Minute}, {"issues", edit2, time.Minute}, {"issues", edit1, past}}, issue, "second edit", ingestd.StatusActive},
		{"two valid edits in reverse order: the newer wins",
			[]delivery{{"issues", opened, 0}, {"issues", edit2, time.Minute}, {"issues", edit1, time.Minute}}, issue, "second edit", ingestd.StatusActive},
		{"deleted arrives before opened",
			[]delivery{{"issues", deleted, 0}, {"issues", opened, time.Minute}}, issue, "", ""},
		{"comment created replayed after deleted, past the window",
			[]delivery{{"issue_comment", cCreated, 0}, {"issue_comment", cDeleted, time.Minute}, {"issue_comment", cCreated, past}}, comment, "", ingestd.StatusDeleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustChain(t, map[string]webhook.Endpoint{"gh": MustEndpoint(t, "gh", webhook.Config{}, ghSecret)})
			for i, d := range tt.deliveries {
				c.now = c.now.Add(d.after)
				w := c.postGitHub("/v1/webhooks/gh", d.event, "delivery-"+strconv.Itoa(i), signGitHub(ghSecret, d.body), d.body)
				if w.Code/100 != 2 {
					t.Fatalf("delivery %d: %d %s", i, w.Code, w.Body)
				}
			}
			text, status := c.state(t, "gh", tt.id)
			if status != tt.wantStatus || !strings.Contains(text, tt.wantText) || (tt.wantText == "" && text != "") {
				t.Errorf("stored %q (%s), want %q (%s)", text, status, tt.wantText, tt.wantStatus)
			}
		})
	}
}

// TestStandardReplays covers Standard Webhooks: the signed timestamp must
// be within the tolerance, the signed msg id is remembered at least as
// long as its timestamp passes, and the body's updated_at orders items.
func TestStandardReplays(t *testing.T) {
	key := whsec(stdKeyNew)
	send := func(c *chain, id string, ts time.Time, body string) int {
		t.Helper()
		sig := signStandard(stdKeyNew, id, strconv.FormatInt(ts.Unix(), 10), []byte(body))
		return c.postStandard(id, ts, sig, []byte(body)).Code
	}
	item := func(text string, updated time.Time) string {
		return `{"id":"T-7","title":"ticket","body":"` + text + `","updated_at":"` + updated.Format(time.RFC3339) + `"}`
	}
	t.Run("old and future timestamps", func(t *testing.T) {
		c := mustChain(t, map[string]webhook.Endpoint{"std": MustEndpoint(t, "std", webhook.Config{Flavor: "standard"}, key)})
		for _, d := range []time.Duration{-6 * time.Minute, 6 * time.Minute, -48 * time.Hour} {
			if got := send(c, "msg_1", c.now.Add(d), item("x", t0)); got != http.StatusUnauthorized {
				t.Errorf("timestamp now%+v: %d, want 401", d, got)
			}
		}
	})
	t.Run("same msg id twice, re-signed with a fresh timestamp", func(t *testing.T) {
		c := mustChain(t, map[string]webhook.Endpoint{"std": MustEndpoint(t, "std", webhook.Config{Flavor: "standard"}, key)})
		if got := send(c, "msg_1", c.now, item("first", t0)); got != http.StatusAccepted {
			t.Fatalf("first: %d", got)
		}
		c.now = c.now.Add(time.Minute)
		if got := send(c, "msg_1", c.now, item("first", t0)); got != http.StatusOK {
			t.Errorf("same msg id again: %d, want 200 duplicate", got)
		}
	})
	t.Run("msg id remembered while its timestamp passes, whatever the window", func(t *testing.T) {
		ep := MustEndpoint(t, "std", webhook.Config{Flavor: "standard", ReplayWindow: time.Second}, key)
		c := mustChain(t, map[string]webhook.Endpoint{"std": ep})
		ts := c.now.Add(4 * time.Minute) // a future timestamp the tolerance lets pass
		if got := send(c, "msg_1", ts, item("first", t0)); got != http.StatusAccepted {
			t.Fatalf("first: %d", got)
		}
		c.now = c.now.Add(8 * time.Minute) // past the window, ts still within tolerance
		if got := send(c, "msg_1", ts, item("first", t0)); got != http.StatusOK {
			t.Errorf("replay inside the tolerance: %d, want 200 duplicate", got)
		}
		c.now = c.now.Add(2 * time.Minute)
		if got := send(c, "msg_1", ts, item("first", t0)); got != http.StatusUnauthorized {
			t.Errorf("replay past the tolerance: %d, want 401", got)
		}
	})
	t.Run("two messages in reverse order: the newer updated_at wins", func(t *testing.T) {
		c := mustChain(t, map[string]webhook.Endpoint{"std": MustEndpoint(t, "std", webhook.Config{Flavor: "standard"}, key)})
		if got := send(c, "msg_2", c.now, item("newer", t0.Add(-time.Minute))); got != http.StatusAccepted {
			t.Fatalf("newer: %d", got)
		}
		if got := send(c, "msg_1", c.now.Add(time.Second), item("older", t0.Add(-2*time.Minute))); got != http.StatusAccepted {
			t.Fatalf("older: %d", got)
		}
		if text, _ := c.state(t, "std", "T-7"); !strings.Contains(text, "newer") {
			t.Errorf("stored %q, want the newer message's text", text)
		}
	})
	t.Run("without updated_at the signed timestamp orders", func(t *testing.T) {
		c := mustChain(t, map[string]webhook.Endpoint{"std": MustEndpoint(t, "std", webhook.Config{Flavor: "standard"}, key)})
		if got := send(c, "msg_1", c.now, `{"id":"T-7","body":"alive"}`); got != http.StatusAccepted {
			t.Fatalf("item: %d", got)
		}
		if got := send(c, "msg_2", c.now.Add(time.Second), `{"id":"T-7","deleted":true}`); got != http.StatusAccepted {
			t.Fatalf("delete: %d", got)
		}
		// An item signed before the deletion, delivered after it.
		if got := send(c, "msg_0", c.now.Add(-time.Second), `{"id":"T-7","body":"alive again"}`); got != http.StatusAccepted {
			t.Fatalf("late item: %d", got)
		}
		if _, status := c.state(t, "std", "T-7"); status != ingestd.StatusDeleted {
			t.Errorf("status %q, want deleted", status)
		}
	})
	t.Run("updated_at that is not a time", func(t *testing.T) {
		c := mustChain(t, map[string]webhook.Endpoint{"std": MustEndpoint(t, "std", webhook.Config{Flavor: "standard"}, key)})
		if got := send(c, "msg_1", c.now, `{"id":"T-7","body":"x","updated_at":"yesterday"}`); got != http.StatusUnprocessableEntity {
			t.Errorf("code %d, want 422", got)
		}
	})
}

// TestReplayAcrossProcessesAndRestart gives two handlers the JetStream
// replay memory on their own connections to one server (two api
// processes), then restarts the server from its directory and builds a
// third: a replay under a new delivery id is a duplicate at each.
func TestReplayAcrossProcessesAndRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nats")
	start := func() *jobs.Embedded {
		e, err := jobs.StartEmbedded(jobs.EmbeddedOptions{StoreDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	var mu sync.Mutex
	var queued []string
	handler := func(e *jobs.Embedded) *harness {
		nc, err := e.Connect(t.Name())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		q, err := jobs.Open(context.Background(), nc, nil)
		if err != nil {
			t.Fatal(err)
		}
		r, err := q.OpenReplays(context.Background(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		hs := &harness{now: time.Now()}
		hs.h, err = webhook.New(webhook.Options{
			Endpoints: map[string]webhook.Endpoint{"gh": MustEndpoint(t, "gh", webhook.Config{}, ghSecret)},
			Replays:   r,
			Enqueue: func(ctx context.Context, job ingestd.Job, msgID string) error {
				mu.Lock()
				queued = append(queued, msgID)
				mu.Unlock()
				return q.Publish(ctx, job, msgID)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return hs
	}
	body := MustPayload(t, "issues.deleted.json")
	sig := signGitHub(ghSecret, body)

	e := start()
	a, b := handler(e), handler(e)
	if w := a.postGitHub("/v1/webhooks/gh", "issues", "d-1", sig, body); w.Code != http.StatusAccepted {
		t.Fatalf("first, process a: %d %s", w.Code, w.Body)
	}
	if w := b.postGitHub("/v1/webhooks/gh", "issues", "d-2", sig, body); w.Code != http.StatusOK {
		t.Errorf("replay to process b: %d %s, want 200 duplicate", w.Code, w.Body)
	}
	e.Shutdown()

	e = start()
	defer e.Shutdown()
	c := handler(e)
	if w := c.postGitHub("/v1/webhooks/gh", "issues", "d-3", sig, body); w.Code != http.StatusOK {
		t.Errorf("replay after a restart: %d %s, want 200 duplicate", w.Code, w.Body)
	}
	if len(queued) != 1 {
		t.Errorf("queued %v, want one job", queued)
	}
}
