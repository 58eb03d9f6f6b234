package connectortest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/webhook"
)

// The conformance cases of the connector abilities (connectors.Watcher,
// connectors.ItemReader, connectors.Flavor): a kind's tests run the cases
// of every ability it declares, with fixtures only the kind can make.

// patience bounds a wait for something that must happen (a watcher
// returning once cancelled, a change being reported): a guard against a
// hang that names what did not happen, not a measurement.
const patience = 30 * time.Second

// RunWatcher runs the Watcher cases against w: cancelled before it starts,
// Watch returns nil; running, it reports a change poke makes, never calls
// changed concurrently, and returns nil once cancelled. poke makes one
// change the watcher must report (a message appended to the watched
// mailbox); RunWatcher calls it until changed is called, since a watcher
// may not be watching yet when Watch is called.
func RunWatcher(t *testing.T, w connectors.Watcher, poke func(t *testing.T)) {
	t.Run("cancelled before it starts", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		done := make(chan error, 1)
		go func() { done <- w.Watch(ctx, func() {}) }()
		if err := waitErr(t, done, "Watch with a cancelled context"); err != nil {
			t.Errorf("Watch = %v, want nil once its context ended", err)
		}
	})
	t.Run("reports a change, returns once cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var inFlight, overlaps atomic.Int32
		reported := make(chan struct{}, 1)
		done := make(chan error, 1)
		go func() {
			done <- w.Watch(ctx, func() {
				if inFlight.Add(1) > 1 {
					overlaps.Add(1)
				}
				defer inFlight.Add(-1)
				select {
				case reported <- struct{}{}:
				default:
				}
			})
		}()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(patience)
		for waiting := true; waiting; {
			select {
			case <-reported:
				waiting = false
			case err := <-done:
				t.Fatalf("Watch returned %v before it was cancelled", err)
			case <-tick.C:
				poke(t)
			case <-deadline:
				t.Fatalf("Watch reported no change within %v of pokes", patience)
			}
		}
		cancel()
		if err := waitErr(t, done, "Watch after cancel"); err != nil {
			t.Errorf("Watch = %v, want nil once its context ended", err)
		}
		if n := overlaps.Load(); n > 0 {
			t.Errorf("changed was called concurrently %d times", n)
		}
	})
}

func waitErr(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(patience):
		t.Fatalf("%s did not return within %v", what, patience)
		return nil
	}
}

// ReaderCases are the references an ItemReader conformance run reads.
type ReaderCases struct {
	// Inside are references in the installation's scope: each reads at
	// least one item.
	Inside []string
	// Outside are references outside it, one per rule the kind enforces
	// (a path out of the root, a symlink out, a URL off the sites, a
	// scheme the guard refuses): each is refused with EINVALID, nothing
	// read.
	Outside []string
}

// RunItemReader runs the ItemReader cases against r: every Inside
// reference reads items with an external id and no tier, a parent before
// its children; every Outside reference is EINVALID and reads nothing; a
// read with an ended context fails and reads nothing.
func RunItemReader(t *testing.T, r connectors.ItemReader, c ReaderCases) {
	if len(c.Inside) == 0 || len(c.Outside) == 0 {
		t.Fatal("RunItemReader needs a reference inside the scope and one outside")
	}
	ctx := context.Background()
	for _, ref := range c.Inside {
		t.Run("inside "+ref, func(t *testing.T) {
			items, err := r.ReadOne(ctx, ref)
			if err != nil {
				t.Fatalf("ReadOne(%q): %v", ref, err)
			}
			if len(items) == 0 {
				t.Fatalf("ReadOne(%q) read no item", ref)
			}
			seen := map[string]bool{}
			for _, it := range items {
				checkItem(t, it)
				if p := it.ParentExternalID; p != "" && !seen[p] && hasID(items, p) {
					t.Errorf("%s comes before its parent %s", it.ExternalID, p)
				}
				seen[it.ExternalID] = true
			}
		})
	}
	for _, ref := range c.Outside {
		t.Run("outside "+ref, func(t *testing.T) {
			items, err := r.ReadOne(ctx, ref)
			if got := ingestd.ErrorCode(err); got != ingestd.EINVALID {
				t.Errorf("ReadOne(%q) error %v (code %q), want EINVALID naming the rule", ref, err, got)
			}
			if len(items) != 0 {
				t.Errorf("ReadOne(%q) read %d items outside the scope", ref, len(items))
			}
		})
	}
	t.Run("ended context", func(t *testing.T) {
		ended, cancel := context.WithCancel(ctx)
		cancel()
		items, err := r.ReadOne(ended, c.Inside[0])
		if err == nil || len(items) != 0 {
			t.Errorf("ReadOne with an ended context = %d items, %v; want an error and nothing read", len(items), err)
		}
	})
}

func hasID(items []ingestd.Item, id string) bool {
	for _, it := range items {
		if it.ExternalID == id {
			return true
		}
	}
	return false
}

// checkItem fails the test for an item no connector may emit.
func checkItem(t *testing.T, it ingestd.Item) {
	t.Helper()
	if it.ExternalID == "" {
		t.Errorf("an item without an external id: %+v", it)
	}
	if it.Tier != "" {
		t.Errorf("item %s sets tier %q: only the pipeline stamps tiers", it.ExternalID, it.Tier)
	}
}

// Delivery is one good delivery of a flavour conformance run: the headers
// its sender sets besides the signature, and the body.
type Delivery struct {
	Header http.Header
	Body   []byte
}

// FlavorCase is what a flavour conformance run delivers.
type FlavorCase struct {
	// Settings are the flavour's decoded keys, of the type its NewKeys
	// makes; nil for their defaults.
	Settings any
	// Deliveries each map to at least one job.
	Deliveries []Delivery
}

// conformance is the installation a flavour run delivers to.
const conformance = "conformance"

// RunFlavor runs the Flavor cases against f through the webhook intake,
// each delivery signed here by f's scheme: one signed with another secret,
// or whose body changed after signing, is refused (401) and queues
// nothing; a good one is answered 202 and queues jobs whose items and
// deletes are for the installation, carry At and an external id and set
// no tier; the same delivery again is a replay (200, nothing queued).
func RunFlavor(t *testing.T, f connectors.Flavor, c FlavorCase) {
	if len(c.Deliveries) == 0 {
		t.Fatal("RunFlavor needs a delivery")
	}
	key, other := []byte("conformance signing key, 32 byte"), []byte("another signing key, 32 bytes!!")
	secret := string(key)
	if f.Scheme == connectors.SchemeStandardWebhooks {
		secret = "whsec_" + base64.StdEncoding.EncodeToString(key)
	}
	in := newFlavorIntake(t, f, c, secret)
	post, take := in.post, in.take
	for i, d := range c.Deliveries {
		id := "msg_conformance_" + strconv.Itoa(i)
		t.Run("delivery "+strconv.Itoa(i), func(t *testing.T) {
			if code := post(d, id, other, d.Body); code != http.StatusUnauthorized {
				t.Errorf("signed with another secret: %d, want 401", code)
			}
			if code := post(d, id, key, append(bytes.Clone(d.Body), ' ')); code != http.StatusUnauthorized {
				t.Errorf("body changed after signing: %d, want 401", code)
			}
			if jobs := take(); len(jobs) != 0 {
				t.Fatalf("refused deliveries queued %d jobs", len(jobs))
			}
			if code := post(d, id, key, d.Body); code != http.StatusAccepted {
				t.Fatalf("good delivery: %d, want 202", code)
			}
			jobs := take()
			if len(jobs) == 0 {
				t.Fatal("a good delivery queued no job")
			}
			for _, j := range jobs {
				checkJob(t, j)
			}
			if code := post(d, id, key, d.Body); code != http.StatusOK {
				t.Errorf("replay: %d, want 200", code)
			}
			if jobs := take(); len(jobs) != 0 {
				t.Errorf("a replay queued %d jobs", len(jobs))
			}
		})
	}
}

// flavorIntake is the webhook intake RunFlavor posts to: one endpoint of
// the flavour, a fixed clock, and the jobs it queued.
type flavorIntake struct {
	h      http.Handler
	scheme connectors.Scheme
	now    time.Time

	mu     sync.Mutex
	queued []ingestd.Job
}

// newFlavorIntake returns the intake of an endpoint of f with c's
// settings, verifying deliveries with secret.
func newFlavorIntake(t *testing.T, f connectors.Flavor, c FlavorCase, secret string) *flavorIntake {
	t.Helper()
	ep, err := webhook.NewEndpoint(conformance, f, c.Settings, webhook.Config{}, []string{secret})
	if err != nil {
		t.Fatalf("flavour %q: %v", f.Name, err)
	}
	in := &flavorIntake{scheme: f.Scheme, now: time.Now()}
	in.h, err = webhook.New(webhook.Options{
		Endpoints: map[string]webhook.Endpoint{conformance: ep},
		Enqueue: func(_ context.Context, job ingestd.Job, _ string) error {
			in.mu.Lock()
			defer in.mu.Unlock()
			in.queued = append(in.queued, job)
			return nil
		},
		Now:      func() time.Time { return in.now },
		SpoolDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// take returns the jobs queued since the last take.
func (in *flavorIntake) take() []ingestd.Job {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := in.queued
	in.queued = nil
	return out
}

// post delivers body with d's headers as message id, signed over d.Body
// with k, and returns the status code.
func (in *flavorIntake) post(d Delivery, id string, k, body []byte) int {
	r := httptest.NewRequest(http.MethodPost, "/v1/webhooks/"+conformance, bytes.NewReader(body))
	for name, vs := range d.Header {
		for _, v := range vs {
			r.Header.Add(name, v)
		}
	}
	r.Header.Set("Content-Type", "application/json")
	sign(r, in.scheme, id, in.now, k, d.Body)
	w := httptest.NewRecorder()
	in.h.ServeHTTP(w, r)
	return w.Code
}

// checkJob fails the test for a job no flavour may map a delivery to.
func checkJob(t *testing.T, j ingestd.Job) {
	t.Helper()
	switch j.Kind {
	case ingestd.JobSync:
		if j.Installation == "" {
			t.Error("a sync job names no installation")
		}
		return
	case ingestd.JobItem:
		if j.Item == nil {
			t.Fatal("an item job without an item")
		}
		checkItem(t, *j.Item)
	case ingestd.JobDelete:
		if j.ExternalID == "" {
			t.Error("a delete job without an external id")
		}
	default:
		t.Fatalf("job kind %q", j.Kind)
	}
	if j.Installation != conformance {
		t.Errorf("%s job for installation %q, want the delivery's %q", j.Kind, j.Installation, conformance)
	}
	if j.At.IsZero() {
		t.Errorf("%s job without At: a replay could roll the document back", j.Kind)
	}
}

// sign sets the signature headers of scheme over body, computed here and
// not by the intake, as the sender would.
func sign(r *http.Request, scheme connectors.Scheme, id string, at time.Time, key, body []byte) {
	m := hmac.New(sha256.New, key)
	switch scheme {
	case connectors.SchemeStandardWebhooks:
		ts := strconv.FormatInt(at.Unix(), 10)
		m.Write([]byte(id + "." + ts + "."))
		m.Write(body)
		r.Header.Set("webhook-id", id)
		r.Header.Set("webhook-timestamp", ts)
		r.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	default:
		m.Write(body)
		r.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
	}
}
