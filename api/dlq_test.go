package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/jobs"
)

// mustDeadLetters is a real job queue on an embedded NATS whose worker
// refuses every job at once, holding n dead letters.
func mustDeadLetters(t *testing.T, n int) *jobs.Queue {
	t.Helper()
	emb, err := jobs.StartEmbedded(jobs.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(emb.Shutdown)
	nc, err := emb.Connect(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	q, err := jobs.Open(t.Context(), nc, &jobs.Options{MaxDeliver: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- q.RunWorker(ctx, func(context.Context, ingestd.Job) error {
			return ingestd.Errorf(ingestd.EINVALID, "this worker refuses every job")
		}, jobs.WorkerOptions{})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	for i := range n {
		job := ingestd.Job{Kind: ingestd.JobItem, Installation: "handbook", Item: &ingestd.Item{ExternalID: fmt.Sprint("page-", i), Title: "t", Text: "x"}}
		if err := q.Publish(t.Context(), job, ""); err != nil {
			t.Fatal(err)
		}
	}
	waitDead(t, q, n)
	return q
}

func waitDead(t *testing.T, q *jobs.Queue, n int) []ingestd.DeadLetter {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		dead, err := q.ListDLQ(t.Context())
		if err == nil && len(dead) == n {
			return dead
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d dead letters (%v), want %d", len(dead), err, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDeadLetterRoutes: GET /v1/dlq lists what ListDLQ lists, POST
// /v1/dlq/{id}/replay and POST /v1/dlq/replay queue them again, all under
// the admin scope.
func TestDeadLetterRoutes(t *testing.T) {
	q := mustDeadLetters(t, 3)
	e := MustServe(t, ingestd.ModeEnforce, api.Options{
		Tokens: []api.Token{
			{Name: "chat", Token: chatToken, Scopes: []string{api.ScopeRetrieve}},
			{Name: "ops", Token: adminToken, Scopes: []string{api.ScopeAdmin}},
			{Name: "desk-ops", Token: opsToken, Scopes: []string{api.ScopeAdmin}, Installations: []string{"handbook"}},
		},
		DeadLetters: q,
	})
	for _, tt := range []struct {
		name, method, path, token string
		want                      int
	}{
		{"list without token", "GET", "/v1/dlq", "", 401},
		{"list with retrieve scope", "GET", "/v1/dlq", chatToken, 403},
		{"replay with retrieve scope", "POST", "/v1/dlq/1/replay", chatToken, 403},
		{"replay all without token", "POST", "/v1/dlq/replay", "", 401},
		// The queue holds every installation's jobs: a token limited to
		// some installations may not list or replay it.
		{"list with a limited admin token", "GET", "/v1/dlq", opsToken, 403},
		{"replay with a limited admin token", "POST", "/v1/dlq/1/replay", opsToken, 403},
		{"replay all with a limited admin token", "POST", "/v1/dlq/replay", opsToken, 403},
		{"replay unknown id", "POST", "/v1/dlq/999/replay", adminToken, 404},
		{"replay a word", "POST", "/v1/dlq/abc/replay", adminToken, 404},
	} {
		if status, body, _ := e.do(t, tt.method, tt.path, tt.token, nil); status != tt.want {
			t.Errorf("%s: %d, want %d: %s", tt.name, status, tt.want, body)
		}
	}

	status, body, _ := e.do(t, "GET", "/v1/dlq", adminToken, nil)
	var listed []ingestd.DeadLetter
	if err := json.Unmarshal(body, &listed); status != http.StatusOK || err != nil {
		t.Fatalf("list: %d %v: %s", status, err, body)
	}
	if len(listed) != 3 || listed[0].Job.Installation != "handbook" || !strings.Contains(listed[0].Error, "refuses every job") {
		t.Fatalf("listed %+v", listed)
	}

	id := listed[0].ID
	if status, body, _ := e.do(t, "POST", "/v1/dlq/"+id+"/replay", adminToken, nil); status != http.StatusOK || !strings.Contains(string(body), `"queued"`) {
		t.Fatalf("replay %s: %d %s", id, status, body)
	}
	// The replayed job ran, and the worker refused it again: a new id.
	dead := waitDead(t, q, 3)
	for _, d := range dead {
		if d.ID == id {
			t.Errorf("dead letter %s is still there after its replay", id)
		}
	}
	status, body, _ = e.do(t, "POST", "/v1/dlq/replay", adminToken, nil)
	if status != http.StatusOK || strings.TrimSpace(string(body)) != `{"replayed":3}` {
		t.Fatalf("replay all: %d %s", status, body)
	}
}

// TestDeadLetterRoutesNotMounted: without DeadLetters the routes are not
// there.
func TestDeadLetterRoutesNotMounted(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	if status, _, _ := e.do(t, "GET", "/v1/dlq", "", nil); status != http.StatusNotFound {
		t.Errorf("GET /v1/dlq: %d, want 404", status)
	}
}
