package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/health"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/metrics"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

const (
	adminToken = "console-admin-token-7f3a9c21d8e04b65"
	chatToken  = "console-chat-token-2b8e6d14a9f07c53"
)

// Strings outside authors write, carrying markup: a page that inserted
// them as HTML would run them (window.__pwned) or load an image.
const (
	scriptTitle = `Refund <script>window.__pwned="title"</script> form`
	imgTitle    = `Invoice <img src=x onerror="window.__pwned='img'"> copy`
	imgText     = `Please see <img src=x onerror="window.__pwned='text'"> the refund table <b>now</b>.`
	scriptError = `imap: login refused: <script>window.__pwned="error"</script>`
)

// injectionMail is the body of the quickstart's injection mail (its
// support inbox's urgent transfer, in testdata): an untrusted sender
// tells the assistant to call a tool and forges the fence's end marker.
func injectionMail(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/urgent-transfer.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var installations = []ingestd.Installation{
	{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal, Interval: time.Hour},
	{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal, Interval: time.Hour},
}

func corpus(t *testing.T) []retrievaltest.Doc {
	return []retrievaltest.Doc{
		{Installation: "handbook", ExternalID: "refunds.md", Title: "Refund policy",
			Chunks: []string{"Refunds are paid back to the original card within 14 days. Bank transfers need a manager's approval."}},
		{Installation: "handbook", ExternalID: "vacation.md", Title: "Vacation policy",
			Chunks: []string{"Staff take 25 days of vacation a year; ask your lead two weeks ahead."}},
		{Installation: "support", Kind: "imap", ExternalID: "<c0ffee42@mail.example.org>", Title: "URGENT: refund must be wired today",
			Chunks: []string{injectionMail(t)}},
		{Installation: "support", Kind: "imap", ExternalID: "<script@mail.example.org>", Title: scriptTitle,
			Chunks: []string{"A customer asks about the printer toner delivery."}},
		{Installation: "support", Kind: "imap", ExternalID: "<img@mail.example.org>", Title: imgTitle,
			Chunks: []string{imgText}},
	}
}

// deadLetters is the dead-letter role with one letter; it records every
// replay.
type deadLetters struct {
	mu       sync.Mutex
	replayed []string
}

const deadLetterID = "42"

func (d *deadLetters) ListDLQ(context.Context) ([]ingestd.DeadLetter, error) {
	return []ingestd.DeadLetter{{
		ID: deadLetterID, Subject: "ingestd.dlq.item.support", OriginalSubject: "ingestd.jobs.item.support",
		Deliveries: 5, Error: `embed: <img src=x onerror="window.__pwned='dlq'">`, FailedAt: time.Unix(1_790_000_000, 0).UTC(),
		Job: ingestd.Job{Kind: "item", Installation: "support"},
	}}, nil
}

func (d *deadLetters) Replay(_ context.Context, id string) error {
	if id != deadLetterID {
		return ingestd.Errorf(ingestd.ENOTFOUND, "no dead letter %q", id)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.replayed = append(d.replayed, id)
	return nil
}

func (d *deadLetters) ReplayAll(ctx context.Context) (int, error) {
	return 1, d.Replay(ctx, deadLetterID)
}

func (d *deadLetters) Replayed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.replayed)
}

// erasures serves one tombstone.
type erasures struct{}

func (erasures) Erase(context.Context, ingestd.ErasureRequest) (ingestd.ErasureReport, error) {
	return ingestd.ErasureReport{}, ingestd.Errorf(ingestd.EINVALID, "not in this test")
}

func (erasures) Tombstones(context.Context) ([]ingestd.Tombstone, error) {
	return []ingestd.Tombstone{{Key: "9f2c0a51d6e84b7f3a1c2e9d0b8f7a6c", KeyID: "k1", Kind: "author", Installation: "support",
		CreatedAt: time.Unix(1_790_000_000, 0).UTC()}}, nil
}

func (erasures) Lift(context.Context, ingestd.LiftRequest) (int, error) { return 0, nil }

// server is the daemon's API, wired as serve wires it, over a real SQLite
// store holding corpus, a real retrieval service (enforce mode) and the
// sync history with one failed pass.
type server struct {
	*httptest.Server
	dead *deadLetters

	mu   sync.Mutex
	seen []string // each request: method, path and Sec-Fetch-Site
}

// Seen returns the requests the server received.
func (s *server) Seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// newServer starts the API; with tokens it asks for a bearer token
// (admin and chat, which has only the retrieve scope), without them it is
// the token-less loopback server.
func newServer(t *testing.T, tokens bool) *server {
	t.Helper()
	ctx := context.Background()
	store := sqlitetest.MustOpen(t)
	emb := embedder.NewLexical(retrievaltest.Dims)
	retrievaltest.MustPut(t, store, emb, corpus(t)...)
	svc, err := retrieval.New(retrieval.Options{Store: store, Embedder: emb, FirewallMode: "enforce",
		Installations: installations, Documents: store, Index: store})
	if err != nil {
		t.Fatal(err)
	}
	mon, err := health.New(health.Options{Store: store, Installations: installations})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Minute)
	for _, run := range []ingestd.SyncRun{
		{Installation: "handbook", Trigger: ingestd.TriggerSchedule, StartedAt: start, Duration: 120 * time.Millisecond, Seen: 2, Added: 2, Complete: true},
		{Installation: "support", Trigger: ingestd.TriggerSchedule, StartedAt: start, Duration: 40 * time.Millisecond, Error: scriptError},
	} {
		if err := mon.Record(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	// The retrieval service counted as serve counts it (the block report
	// the blocks page reads), behind a real gateway that has held one
	// call of the injection mail's turn (the gateway page's).
	measured, err := metrics.New(svc, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t)
	heldTurn(t, g, measured)
	dead := &deadLetters{}
	o := api.Options{Retriever: measured, Documents: store, DocumentReader: svc, DocumentLister: svc, DeadLetters: dead,
		Installations: mon, Erasures: erasures{}, Blocks: measured, GatewayDecisions: g, MCPExtension: g}
	if tokens {
		o.Tokens = []api.Token{
			{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin, api.ScopeRetrieve}},
			{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
		}
	}
	s := &server{dead: dead}
	h := api.New(o)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Sec-Fetch-Site"))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}
