package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/connectors/github"
	"github.com/ingestd/ingestd/connectors/webhook"
)

// hooksDir holds real GitHub webhook payloads (see testdata/NOTICE.md).
const hooksDir = "testdata/github-webhooks"

const ghSecret = "s3cr3t for the hook"

var t0 = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

type queued struct {
	job   ingestd.Job
	msgID string
}

// harness is a handler with an in-memory queue, a settable clock and a
// log buffer.
type harness struct {
	h    *webhook.Handler
	mu   sync.Mutex
	jobs []queued
	fail error
	now  time.Time
	logs bytes.Buffer
}

func MustHarness(tb testing.TB, eps map[string]webhook.Endpoint, maxBody int64) *harness {
	tb.Helper()
	return MustHarnessOpts(tb, webhook.Options{Endpoints: eps, MaxBodyBytes: maxBody})
}

// MustHarnessOpts is MustHarness with more options; the harness sets
// Enqueue, Logger and Now.
func MustHarnessOpts(tb testing.TB, o webhook.Options) *harness {
	tb.Helper()
	hs := &harness{now: t0}
	o.Enqueue = func(_ context.Context, job ingestd.Job, msgID string) error {
		hs.mu.Lock()
		defer hs.mu.Unlock()
		if hs.fail != nil {
			return hs.fail
		}
		hs.jobs = append(hs.jobs, queued{job, msgID})
		return nil
	}
	o.Logger = slog.New(slog.NewTextHandler(&hs.logs, nil))
	o.Now = func() time.Time { hs.mu.Lock(); defer hs.mu.Unlock(); return hs.now }
	h, err := webhook.New(o)
	if err != nil {
		tb.Fatal(err)
	}
	hs.h = h
	return hs
}

func (hs *harness) Jobs() []queued {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	out := hs.jobs
	hs.jobs = nil
	return out
}

// MustEndpoint builds the endpoint of the flavour cfg.Flavor names, with
// its default settings: "github" (the default, supplied by
// connectors/github, whose real mapping the GitHub cases exercise) or
// "standard".
func MustEndpoint(tb testing.TB, id string, cfg webhook.Config, secrets ...string) webhook.Endpoint {
	tb.Helper()
	f := github.WebhookFlavor
	if cfg.Flavor == webhook.FlavorStandard {
		f = webhook.Standard
	}
	ep, err := webhook.NewEndpoint(id, f, nil, cfg, secrets)
	if err != nil {
		tb.Fatal(err)
	}
	return ep
}

func MustPayload(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(hooksDir, name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// signGitHub computes X-Hub-Signature-256 independently of the package.
func signGitHub(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

func (hs *harness) postGitHub(path, event, delivery, sig string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-GitHub-Event", event)
	r.Header.Set("X-GitHub-Delivery", delivery)
	if sig != "" {
		r.Header.Set("X-Hub-Signature-256", sig)
	}
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, r)
	return w
}

func ghHarness(t *testing.T) *harness {
	return MustHarness(t, map[string]webhook.Endpoint{"gh": MustEndpoint(t, "gh", webhook.Config{Flavor: "github"}, ghSecret)}, 0)
}

func TestSignatureVectors(t *testing.T) {
	var v struct {
		Vectors []struct {
			Secret, Payload string
			Sig             string `json:"x_hub_signature_256"`
		}
	}
	if err := json.Unmarshal(MustPayload(t, "signature_vectors.json"), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Vectors) == 0 {
		t.Fatal("no vectors")
	}
	for _, vec := range v.Vectors {
		if err := webhook.VerifyGitHub([][]byte{[]byte(vec.Secret)}, []byte(vec.Payload), vec.Sig); err != nil {
			t.Errorf("vector %q: %v", vec.Secret, err)
		}
		if got := signGitHub(vec.Secret, []byte(vec.Payload)); got != vec.Sig {
			t.Errorf("test signer disagrees with the published vector: %s", got)
		}
		if err := webhook.VerifyGitHub([][]byte{[]byte(vec.Secret)}, []byte(vec.Payload+" "), vec.Sig); !errors.Is(err, webhook.ErrBadSignature) {
			t.Errorf("altered body verified: %v", err)
		}
	}
}

type wantJob struct {
	kind, id, status string
	parent           string // "parent" link target, items only
}

func TestGitHubEvents(t *testing.T) {
	const repo = "Codertocat/Hello-World"
	tests := []struct {
		file, event string
		wantCode    int
		want        []wantJob
	}{
		{"issues.opened.json", "issues", 202, []wantJob{{kind: "item", id: repo + "#1"}}},
		{"issues.opened.with-empty-body.json", "issues", 202, []wantJob{{kind: "item", id: repo + "#1"}}},
		{"issues.edited.json", "issues", 202, []wantJob{{kind: "item", id: repo + "#1"}}},
		{"issues.labeled.json", "issues", 202, []wantJob{{kind: "item", id: repo + "#1"}}},
		{"issues.deleted.json", "issues", 202, []wantJob{{kind: "delete", id: repo + "#1"}}},
		{"issues.transferred.json", "issues", 202, []wantJob{{kind: "delete", id: "octo-org/octo-repo#1"}, {kind: "item", id: repo + "#1"}}},
		{"issue_comment.created.json", "issue_comment", 202, []wantJob{{kind: "item", id: repo + "#1/comment/492700400", parent: repo + "#1"}}},
		{"issue_comment.created.with-installation.json", "issue_comment", 202, []wantJob{{kind: "item", id: repo + "#1/comment/492700400", parent: repo + "#1"}}},
		{"issue_comment.edited.json", "issue_comment", 202, []wantJob{{kind: "item", id: repo + "#1/comment/492700400", parent: repo + "#1"}}},
		{"issue_comment.deleted.json", "issue_comment", 202, []wantJob{{kind: "delete", id: repo + "#1/comment/492700400"}}},
		{"pull_request.opened.json", "pull_request", 202, []wantJob{{kind: "item", id: repo + "#2"}}},
		{"pull_request.opened.with-null-body.json", "pull_request", 202, []wantJob{{kind: "item", id: repo + "#2"}}},
		{"pull_request.synchronize.json", "pull_request", 202, []wantJob{{kind: "item", id: repo + "#2"}}},
		{"pull_request.closed.json", "pull_request", 202, []wantJob{{kind: "item", id: repo + "#2", status: "rejected"}}},
		{"pull_request_review_comment.created.json", "pull_request_review_comment", 202, []wantJob{{kind: "item", id: repo + "#2/review_comment/284312630", parent: repo + "#2"}}},
		{"pull_request_review_comment.edited.json", "pull_request_review_comment", 202, []wantJob{{kind: "item", id: repo + "#2/review_comment/284312630", parent: repo + "#2"}}},
		{"push.json", "push", 200, nil}, // a tag: no docs changed
		{"push.with-new-branch.json", "push", 202, []wantJob{{kind: "sync", id: ""}}},
		{"ping.json", "ping", 200, nil},
		{"ping.with-app_id.json", "ping", 200, nil},
		{"installation.created.json", "installation", 200, nil},
		{"installation.deleted.json", "installation", 200, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			hs := ghHarness(t)
			body := MustPayload(t, tt.file)
			w := hs.postGitHub("/v1/webhooks/gh", tt.event, "d-"+tt.file, signGitHub(ghSecret, body), body)
			if w.Code != tt.wantCode {
				t.Fatalf("code = %d, want %d (%s)", w.Code, tt.wantCode, w.Body)
			}
			jobs := hs.Jobs()
			if len(jobs) != len(tt.want) {
				t.Fatalf("jobs = %+v, want %d", jobs, len(tt.want))
			}
			for i, want := range tt.want {
				q := jobs[i]
				wantMsg := msgIDOf("gh", "gh", body)
				if len(jobs) > 1 {
					wantMsg += "/" + strconv.Itoa(i)
				}
				if q.msgID != wantMsg {
					t.Errorf("msg id = %q, want %q", q.msgID, wantMsg)
				}
				if q.job.Kind != want.kind || q.job.Installation != "gh" {
					t.Errorf("job %d = %s on %s, want %s on gh", i, q.job.Kind, q.job.Installation, want.kind)
				}
				switch want.kind {
				case ingestd.JobDelete:
					if q.job.ExternalID != want.id {
						t.Errorf("delete %q, want %q", q.job.ExternalID, want.id)
					}
				case ingestd.JobItem:
					it := q.job.Item
					if it.ExternalID != want.id {
						t.Errorf("item %q, want %q", it.ExternalID, want.id)
					}
					if string(it.Status) != want.status {
						t.Errorf("status %q, want %q", it.Status, want.status)
					}
					if it.Meta[github.MetaAuthorAssociation] == "" {
						t.Errorf("no author_association in Meta %v", it.Meta)
					}
					if it.Tier != "" || it.ParentExternalID != "" {
						t.Errorf("item sets tier %q / parent %q", it.Tier, it.ParentExternalID)
					}
					if want.parent != "" && (len(it.Links) == 0 || it.Links[0] != (ingestd.ItemLink{ToExternalID: want.parent, Relation: "parent"})) {
						t.Errorf("links = %v, want parent %s", it.Links, want.parent)
					}
					if strings.TrimSpace(it.Text) == "" {
						t.Error("empty text")
					}
				}
			}
		})
	}
}

func TestGitHubRejectsBadSignatures(t *testing.T) {
	body := MustPayload(t, "issues.opened.json")
	tests := []struct {
		name, sig string
	}{
		{"missing", ""},
		{"wrong secret", signGitHub("not the secret", body)},
		{"sha1 form", "sha1=d03207e4b030cf234e3447bac4d93add4c6643d8"},
		{"garbage", "sha256=zz"},
		{"other body", signGitHub(ghSecret, append([]byte{' '}, body...))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := ghHarness(t)
			w := hs.postGitHub("/v1/webhooks/gh", "issues", "d1", tt.sig, body)
			if w.Code != http.StatusUnauthorized {
				t.Fatalf("code = %d, want 401", w.Code)
			}
			if n := len(hs.Jobs()); n != 0 {
				t.Errorf("%d jobs enqueued for an unsigned delivery", n)
			}
			if strings.Contains(hs.logs.String(), "accidently") || strings.Contains(hs.logs.String(), "Spelling") {
				t.Errorf("payload logged: %s", hs.logs.String())
			}
		})
	}
}

func TestReplayIgnored(t *testing.T) {
	hs := ghHarness(t)
	body := MustPayload(t, "issue_comment.created.json")
	sig := signGitHub(ghSecret, body)
	if w := hs.postGitHub("/v1/webhooks/gh", "issue_comment", "dup", sig, body); w.Code != 202 {
		t.Fatalf("first: %d", w.Code)
	}
	w := hs.postGitHub("/v1/webhooks/gh", "issue_comment", "dup", sig, body)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "duplicate") {
		t.Errorf("replay: %d %s, want 200 duplicate", w.Code, w.Body)
	}
	if n := len(hs.Jobs()); n != 1 {
		t.Errorf("jobs = %d, want 1", n)
	}
	// After the replay window the digest is forgotten: the delivery is
	// queued again, and the pipeline's event-time rule keeps it from
	// rolling anything back (TestReplayCannotRollBack).
	hs.now = hs.now.Add(webhook.DefaultReplayWindow + time.Minute)
	if w := hs.postGitHub("/v1/webhooks/gh", "issue_comment", "dup", sig, body); w.Code != 202 {
		t.Errorf("after the window: %d, want 202", w.Code)
	}
}

func TestEnqueueFailureIsRetryable(t *testing.T) {
	hs := ghHarness(t)
	body := MustPayload(t, "issues.opened.json")
	sig := signGitHub(ghSecret, body)
	hs.fail = errors.New("jetstream down")
	if w := hs.postGitHub("/v1/webhooks/gh", "issues", "d9", sig, body); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("code = %d, want 503", w.Code)
	}
	hs.fail = nil
	if w := hs.postGitHub("/v1/webhooks/gh", "issues", "d9", sig, body); w.Code != http.StatusAccepted {
		t.Fatalf("redelivery after a failed enqueue: %d, want 202", w.Code)
	}
	if n := len(hs.Jobs()); n != 1 {
		t.Errorf("jobs = %d, want 1", n)
	}
}

func TestLimits(t *testing.T) {
	body := MustPayload(t, "pull_request.opened.json") // ~28 KiB
	ep := MustEndpoint(t, "gh", webhook.Config{}, ghSecret)
	hs := MustHarness(t, map[string]webhook.Endpoint{"gh": ep}, 16<<10)
	tests := []struct {
		name     string
		method   string
		path     string
		ctype    string
		body     []byte
		chunked  bool
		wantCode int
	}{
		{"over the cap", http.MethodPost, "/v1/webhooks/gh", "application/json", body, false, http.StatusRequestEntityTooLarge},
		{"over the cap, no length", http.MethodPost, "/v1/webhooks/gh", "application/json", body, true, http.StatusRequestEntityTooLarge},
		{"form encoded", http.MethodPost, "/v1/webhooks/gh", "application/x-www-form-urlencoded", []byte("payload=x"), false, http.StatusUnsupportedMediaType},
		{"GET", http.MethodGet, "/v1/webhooks/gh", "application/json", nil, false, http.StatusMethodNotAllowed},
		{"unknown installation", http.MethodPost, "/v1/webhooks/nope", "application/json", []byte("{}"), false, http.StatusNotFound},
		{"nested path", http.MethodPost, "/v1/webhooks/x/gh", "application/json", []byte("{}"), false, http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, bytes.NewReader(tt.body))
			if tt.chunked {
				r.ContentLength = -1
			}
			r.Header.Set("Content-Type", tt.ctype)
			r.Header.Set("X-GitHub-Event", "pull_request")
			r.Header.Set("X-GitHub-Delivery", "d")
			r.Header.Set("X-Hub-Signature-256", signGitHub(ghSecret, tt.body))
			w := httptest.NewRecorder()
			hs.h.ServeHTTP(w, r)
			if w.Code != tt.wantCode {
				t.Errorf("code = %d, want %d", w.Code, tt.wantCode)
			}
			if n := len(hs.Jobs()); n != 0 {
				t.Errorf("%d jobs enqueued", n)
			}
		})
	}
}

// TestKindBuildsIntake: a webhook installation declares an Intake of the
// flavour its block names (the github flavour found through the registry,
// which the webhook kind does not import), with every secret of the
// rotation, and a Source whose Sync does nothing.
func TestKindBuildsIntake(t *testing.T) {
	reg := connectors.NewRegistry(webhook.Kind, github.Kind)
	inst := ingestd.Installation{ID: "hooks", Kind: "webhook", Tier: ingestd.TierUntrustedExternal}
	env := map[string]string{"A": "old", "B": "new", "W": whsec(stdKeyNew)}
	settings := func(block map[string]any) connectors.Settings {
		return connectors.Settings{
			Decode:    mapDecoder(block),
			LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		}
	}
	tests := []struct {
		name       string
		block      map[string]any
		wantScheme connectors.Scheme
		wantErr    string
	}{
		{"github by default", map[string]any{"secret_env": "A", "secrets_env": "B"}, connectors.SchemeHubSignature, ""},
		{"github", map[string]any{"flavor": "github", "secret_env": "A", "sync_installation": "repo"}, connectors.SchemeHubSignature, ""},
		{"standard", map[string]any{"flavor": "standard", "secret_env": "W", "format": "markdown"}, connectors.SchemeStandardWebhooks, ""},
		{"missing variable", map[string]any{"secret_env": "MISSING"}, "", "MISSING"},
		{"no secret", map[string]any{}, "", "no secret"},
		{"unknown flavour", map[string]any{"flavor": "gitlab", "secret_env": "A"}, "", `"gitlab"`},
		{"standard secret not whsec", map[string]any{"flavor": "standard", "secret_env": "A"}, "", "whsec_"},
		{"standard format", map[string]any{"flavor": "standard", "secret_env": "W", "format": "rtf"}, "", "webhook.format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := reg.Build(inst, settings(tt.block))
			if tt.wantErr != "" {
				if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want EINVALID naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Intake == nil || c.Intake.Scheme != tt.wantScheme || c.Intake.Mapper == nil {
				t.Fatalf("intake = %+v, want scheme %s and a mapper", c.Intake, tt.wantScheme)
			}
			if c.Watcher != nil || c.Reader != nil {
				t.Errorf("a webhook installation declares a watcher or a reader: %+v", c)
			}
			if err := c.Source.Sync(context.Background(), nil); err != nil {
				t.Errorf("Sync: %v", err)
			}
		})
	}
	c, err := reg.Build(inst, settings(map[string]any{"secret_env": "A", "secrets_env": "B"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Intake.Secrets); got != 2 {
		t.Errorf("secrets = %d, want both of the rotation", got)
	}

	// Without the github kind registered its flavour is unknown: the
	// webhook kind brings only its own.
	alone := connectors.NewRegistry(webhook.Kind)
	if _, err := alone.Build(inst, settings(map[string]any{"secret_env": "A"})); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Errorf("github flavour without the github kind: err = %v, want EINVALID", err)
	}
}

// mapDecoder decodes block through YAML into v, refusing unknown keys as
// cmd does.
func mapDecoder(block map[string]any) func(v any) error {
	return func(v any) error {
		b, err := yaml.Marshal(block)
		if err != nil {
			return err
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		return dec.Decode(v)
	}
}

// TestFlavorConformance runs the flavour cases against both flavours the
// intake is tested with.
func TestFlavorConformance(t *testing.T) {
	t.Run("standard", func(t *testing.T) {
		connectortest.RunFlavor(t, webhook.Standard, connectortest.FlavorCase{
			Deliveries: []connectortest.Delivery{
				{Body: []byte(`{"id":"T-42","title":"Printer on fire","body":"It is on fire."}`)},
				{Body: []byte(`{"id":"T-42","deleted":true,"updated_at":"2024-03-01T12:00:00Z"}`)},
			},
		})
	})
	t.Run("standard envelope", func(t *testing.T) {
		connectortest.RunFlavor(t, webhook.Standard, connectortest.FlavorCase{
			Settings: &webhook.StandardConfig{Fields: webhook.Fields{ID: "/data/id", Title: "/data/subject"}},
			Deliveries: []connectortest.Delivery{
				{Body: []byte(`{"type":"ticket.created","data":{"id":"e1","subject":"S"}}`)},
			},
		})
	})
}

// standard webhooks

var (
	stdKeyOld = []byte("an old standard webhooks key!!")
	stdKeyNew = []byte("the new standard webhooks key!")
)

func whsec(k []byte) string { return "whsec_" + base64.StdEncoding.EncodeToString(k) }

func signStandard(key []byte, id, ts string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

func (hs *harness) postStandard(id string, ts time.Time, sig string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/v1/webhooks/std", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("webhook-id", id)
	r.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	r.Header.Set("webhook-signature", sig)
	w := httptest.NewRecorder()
	hs.h.ServeHTTP(w, r)
	return w
}

func TestStandardWebhooks(t *testing.T) {
	body := []byte(`{"id":"T-42","title":"Printer on fire","body":"It is on fire.","url":"https://desk.example/T-42","author":"pat"}`)
	ts := func(d time.Duration) time.Time { return t0.Add(d) }
	tests := []struct {
		name     string
		secrets  []string
		sig      func(id string, at time.Time) string
		at       time.Time
		wantCode int
	}{
		{"valid", []string{whsec(stdKeyNew)}, func(id string, at time.Time) string {
			return signStandard(stdKeyNew, id, strconv.FormatInt(at.Unix(), 10), body)
		}, ts(-time.Minute), 202},
		{"expired timestamp", []string{whsec(stdKeyNew)}, func(id string, at time.Time) string {
			return signStandard(stdKeyNew, id, strconv.FormatInt(at.Unix(), 10), body)
		}, ts(-6 * time.Minute), 401},
		{"future timestamp", []string{whsec(stdKeyNew)}, func(id string, at time.Time) string {
			return signStandard(stdKeyNew, id, strconv.FormatInt(at.Unix(), 10), body)
		}, ts(6 * time.Minute), 401},
		{"wrong secret", []string{whsec(stdKeyNew)}, func(id string, at time.Time) string {
			return signStandard(stdKeyOld, id, strconv.FormatInt(at.Unix(), 10), body)
		}, ts(0), 401},
		{"rotated: old secret still accepted", []string{whsec(stdKeyNew), whsec(stdKeyOld)}, func(id string, at time.Time) string {
			return signStandard(stdKeyOld, id, strconv.FormatInt(at.Unix(), 10), body)
		}, ts(0), 202},
		{"several signatures, one valid", []string{whsec(stdKeyNew)}, func(id string, at time.Time) string {
			return "v1,bm9wZQ== " + signStandard(stdKeyOld, id, strconv.FormatInt(at.Unix(), 10), body) + " " +
				signStandard(stdKeyNew, id, strconv.FormatInt(at.Unix(), 10), body)
		}, ts(0), 202},
		{"signature over another id", []string{whsec(stdKeyNew)}, func(id string, at time.Time) string {
			return signStandard(stdKeyNew, "msg_other", strconv.FormatInt(at.Unix(), 10), body)
		}, ts(0), 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep := MustEndpoint(t, "std", webhook.Config{Flavor: "standard"}, tt.secrets...)
			hs := MustHarness(t, map[string]webhook.Endpoint{"std": ep}, 0)
			w := hs.postStandard("msg_1", tt.at, tt.sig("msg_1", tt.at), body)
			if w.Code != tt.wantCode {
				t.Fatalf("code = %d, want %d (%s)", w.Code, tt.wantCode, w.Body)
			}
			jobs := hs.Jobs()
			if tt.wantCode != 202 {
				if len(jobs) != 0 {
					t.Errorf("%d jobs enqueued", len(jobs))
				}
				return
			}
			if len(jobs) != 1 || jobs[0].msgID != msgIDOf("std", "std", []byte("msg_1")) {
				t.Fatalf("jobs = %+v", jobs)
			}
			it := jobs[0].job.Item
			want := ingestd.Item{ExternalID: "T-42", ItemKind: "webhook", URI: "https://desk.example/T-42", Title: "Printer on fire",
				Author: "pat", Format: ingestd.FormatPlain, Text: "Printer on fire\n\nIt is on fire."}
			if g, _ := json.Marshal(it); string(g) != string(mustJSON(t, want)) {
				t.Errorf("item = %s, want %s", g, mustJSON(t, want))
			}
			// The same delivery again is a replay.
			if w := hs.postStandard("msg_1", tt.at, tt.sig("msg_1", tt.at), body); w.Code != 200 {
				t.Errorf("replay code = %d, want 200", w.Code)
			}
			if n := len(hs.Jobs()); n != 0 {
				t.Errorf("replay enqueued %d jobs", n)
			}
		})
	}
}

func TestStandardPayloadShapes(t *testing.T) {
	ep := MustEndpoint(t, "std", webhook.Config{Flavor: "standard"}, whsec(stdKeyNew))
	flat := MustStandardMapper(t, webhook.StandardConfig{})
	env := MustStandardMapper(t, webhook.StandardConfig{Format: "markdown",
		Fields: webhook.Fields{ID: "/data/id", Title: "/data/subject", Body: "/data/content/0/text", Deleted: "/data/gone"}})
	tests := []struct {
		name     string
		m        *webhook.StandardMapper
		body     string
		wantKind string
		wantID   string
		wantText string
		wantErr  error
	}{
		{"text instead of body", flat, `{"id": 7, "text": "hello"}`, ingestd.JobItem, "7", "hello", nil},
		{"deleted", flat, `{"id": "T-1", "deleted": true}`, ingestd.JobDelete, "T-1", "", nil},
		{"envelope", env, `{"type":"x","data":{"id":"e1","subject":"S","content":[{"text":"B"}]}}`, ingestd.JobItem, "e1", "S\n\nB", nil},
		{"envelope deleted", env, `{"data":{"id":"e1","gone":true}}`, ingestd.JobDelete, "e1", "", nil},
		{"no id", flat, `{"title": "x"}`, "", "", "", webhook.ErrUnprocessable},
		{"no text", flat, `{"id": "x"}`, "", "", "", webhook.ErrUnprocessable},
		{"object id", flat, `{"id": {"a":1}, "title": "x"}`, "", "", "", webhook.ErrUnprocessable},
		{"array", flat, `[1,2]`, "", "", "", webhook.ErrUnprocessable},
		{"not json", flat, `nope`, "", "", "", webhook.ErrUnprocessable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs, err := tt.m.Map(connectors.Delivery{Body: []byte(tt.body), SentAt: t0})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if len(jobs) != 1 {
				t.Fatalf("jobs = %d, want 1", len(jobs))
			}
			job := jobs[0]
			if job.Kind != tt.wantKind {
				t.Errorf("kind = %s, want %s", job.Kind, tt.wantKind)
			}
			id := job.ExternalID
			if job.Item != nil {
				id = job.Item.ExternalID
				if job.Item.Text != tt.wantText {
					t.Errorf("text = %q, want %q", job.Item.Text, tt.wantText)
				}
			}
			if id != tt.wantID {
				t.Errorf("id = %q, want %q", id, tt.wantID)
			}
		})
	}

	// Through the handler an unknown shape is a 422 with the reason.
	hs := MustHarness(t, map[string]webhook.Endpoint{"std": ep}, 0)
	body := []byte(`{"subject":"no id here"}`)
	ts := strconv.FormatInt(t0.Unix(), 10)
	w := hs.postStandard("msg_9", t0, signStandard(stdKeyNew, "msg_9", ts, body), body)
	if w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "no id at /id") {
		t.Errorf("code = %d body %s, want 422 naming /id", w.Code, w.Body)
	}
}

// msgIDOf is the queue message id the handler must use: named by what the
// signature covers, never by an unsigned header.
func msgIDOf(installation, kind string, signed []byte) string {
	sum := sha256.Sum256(signed)
	return installation + ":" + kind + ":" + hex.EncodeToString(sum[:])[:32]
}

func mustJSON(tb testing.TB, v any) []byte {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func MustStandardMapper(tb testing.TB, cfg webhook.StandardConfig) *webhook.StandardMapper {
	tb.Helper()
	m, err := webhook.NewStandardMapper("std", cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// rogueMapper maps every delivery to an item of another installation.
type rogueMapper struct{}

func (rogueMapper) Map(connectors.Delivery) ([]ingestd.Job, error) {
	return []ingestd.Job{{Kind: ingestd.JobItem, Installation: "handbook", Item: &ingestd.Item{ExternalID: "x", Text: "x"}, At: t0}}, nil
}

// TestMapperCannotWriteElsewhere: a flavour whose mapping puts an item
// into another installation than the one the delivery was signed for is
// refused, and nothing is queued: the item would take that installation's
// tier.
func TestMapperCannotWriteElsewhere(t *testing.T) {
	rogue := connectors.NewFlavor("rogue", connectors.SchemeHubSignature,
		func(string, struct{}) (connectors.DeliveryMapper, error) { return rogueMapper{}, nil })
	ep, err := webhook.NewEndpoint("gh", rogue, nil, webhook.Config{}, []string{ghSecret})
	if err != nil {
		t.Fatal(err)
	}
	hs := MustHarness(t, map[string]webhook.Endpoint{"gh": ep}, 0)
	body := MustPayload(t, "issues.opened.json")
	if w := hs.postGitHub("/v1/webhooks/gh", "issues", "d1", signGitHub(ghSecret, body), body); w.Code != http.StatusUnprocessableEntity {
		t.Errorf("code = %d, want 422", w.Code)
	}
	if n := len(hs.Jobs()); n != 0 {
		t.Errorf("%d jobs queued into another installation", n)
	}
}
