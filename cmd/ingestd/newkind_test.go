package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/connectortest"
	"github.com/ingestd/ingestd/provenance"
)

// tick is a connector kind written here, outside the tree of kinds, to
// show what a new kind costs: this code and one line in the kinds list.
// Its source puts one item per pass, named by how often its watch fired;
// its watch fires when the test sends on fire; its webhook flavour maps a
// Standard Webhooks delivery {"id", "text"} to one item.
type tick struct {
	fire  chan struct{}
	fired atomic.Int64
}

func (k *tick) kind() connectors.Kind {
	return connectors.Kind{
		Name:   "tick",
		Policy: provenance.AnyTier("a test kind: whoever runs the test writes it"),
		New: func(inst ingestd.Installation, _ connectors.Settings) (connectors.Connector, error) {
			return connectors.Connector{Source: tickSource{k}, Watcher: tickWatcher{k}}, nil
		},
		Flavors: []connectors.Flavor{connectors.NewFlavor("tick", connectors.SchemeStandardWebhooks,
			func(installation string, _ struct{}) (connectors.DeliveryMapper, error) {
				return tickMapper{installation}, nil
			})},
	}
}

type tickSource struct{ k *tick }

func (s tickSource) Sync(ctx context.Context, pass ingestd.Pass) error {
	n := s.k.fired.Load()
	return pass.Put(ctx, ingestd.Item{ExternalID: "tick-" + strconv.FormatInt(n, 10), ItemKind: "tick",
		Title: "tick", Text: fmt.Sprintf("the tick watch fired %d times", n)})
}

type tickWatcher struct{ k *tick }

func (w tickWatcher) Watch(ctx context.Context, changed func()) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.k.fire:
			w.k.fired.Add(1)
			changed()
		}
	}
}

type tickMapper struct{ installation string }

func (m tickMapper) Map(d connectors.Delivery) ([]ingestd.Job, error) {
	var v struct{ ID, Text string }
	if err := json.Unmarshal(d.Body, &v); err != nil || v.ID == "" {
		return nil, ingestd.Errorf(ingestd.EINVALID, "want {\"id\", \"text\"}")
	}
	it := ingestd.Item{ExternalID: v.ID, ItemKind: "tick", Title: v.ID, Text: v.Text}
	return []ingestd.Job{{Kind: ingestd.JobItem, Installation: m.installation, Item: &it, At: d.SentAt}}, nil
}

// TestNewKindThroughServe registers a kind written in this test through
// the kinds list cmd builds its registry from, and runs it in serve: its
// watch queues a sync whose item is stored, and a signed delivery to a
// webhook installation of its flavour is queued and stored. Nothing else
// in cmd names the kind: serve reaches its abilities through the
// Connector it builds.
func TestNewKindThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("runs serve with its embedded NATS; -short skips it")
	}
	k := &tick{fire: make(chan struct{})}
	t.Run("conformance", func(t *testing.T) {
		c, err := k.kind().New(ingestd.Installation{ID: "ticks"}, connectors.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		connectortest.RunWatcher(t, c.Watcher, func(*testing.T) {
			select {
			case k.fire <- struct{}{}:
			default: // the watcher is not listening yet
			}
		})
		connectortest.RunFlavor(t, k.kind().Flavors[0], connectortest.FlavorCase{
			Deliveries: []connectortest.Delivery{{Body: []byte(`{"id": "c-1", "text": "conformance"}`)}},
		})
	})
	k.fired.Store(0)

	saved := kinds
	kinds = append(slices.Clone(kinds), k.kind())
	t.Cleanup(func() { kinds = saved })

	dir := t.TempDir()
	cfg := filepath.Join(dir, "ingestd.yaml")
	if err := os.WriteFile(cfg, []byte(`listen: 127.0.0.1:0
data_dir: `+filepath.Join(dir, "data")+`
installations:
  - id: ticks
    kind: tick
    tier: trusted-internal
  - id: tick-hooks
    kind: webhook
    tier: untrusted-external
    webhook: {flavor: tick, secret_env: TEST_TICK_SECRET}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	key := []byte("the tick hooks' signing key")
	t.Setenv("TEST_TICK_SECRET", "whsec_"+base64.StdEncoding.EncodeToString(key))

	srv := startServeInProcess(t, cfg)

	// The watch fires: serve queues a sync of ticks, whose pass stores
	// tick-1 (ticks has no interval, so nothing else syncs it).
	select {
	case k.fire <- struct{}{}:
	case <-time.After(60 * time.Second):
		t.Fatalf("serve runs no watch for the tick installation\n%s", srv.log())
	}
	srv.waitForDocument(t, "ticks", "tick-1", "tick watch fired")

	// A signed delivery to the webhook installation of the tick flavour.
	body := []byte(`{"id": "pushed-1", "text": "a delivery the tick flavour maps"}`)
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("msg_1." + ts + "."))
	mac.Write(body)
	req, _ := http.NewRequest(http.MethodPost, srv.base+"/v1/webhooks/tick-hooks", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", "msg_1")
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("signed delivery: %d, want 202\n%s", resp.StatusCode, srv.log())
	}
	srv.waitForDocument(t, "tick-hooks", "pushed-1", "delivery tick flavour maps")
}

// inProcess is `ingestd serve` running in the test's process, so that it
// sees kinds the test registered.
type inProcess struct {
	base string
	logs *syncBuffer
}

var listeningRE = regexp.MustCompile(`msg=serve.listening addr=(\S+)`)

// startServeInProcess runs serve with the config until the test ends; it
// must then stop cleanly.
func startServeInProcess(t *testing.T, cfg string) *inProcess {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"serve", "--config", cfg}, &syncBuffer{}, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("serve exited %d\n%s", code, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("serve did not stop within 30s of its context ending\n%s", logs.String())
		}
	})
	deadline := time.After(60 * time.Second)
	for {
		if m := listeningRE.FindStringSubmatch(logs.String()); m != nil {
			return &inProcess{base: "http://" + m[1], logs: logs}
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d before listening\n%s", code, logs.String())
		case <-deadline:
			t.Fatalf("serve did not listen within 60s\n%s", logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *inProcess) log() string { return s.logs.String() }

// waitForDocument waits until retrieval over the installation serves a
// chunk of the document (installation, external id) for the query.
func (s *inProcess) waitForDocument(t *testing.T, installation, externalID, query string) {
	t.Helper()
	want := ingestd.DocumentID(installation, externalID)
	q, _ := json.Marshal(map[string]any{"query": query, "installations": []string{installation}})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Post(s.base+"/v1/retrieve", "application/json", bytes.NewReader(q))
		if err == nil {
			var out struct {
				Primary []struct {
					DocumentID string `json:"document_id"`
				} `json:"primary"`
			}
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			for _, c := range out.Primary {
				if c.DocumentID == want {
					return
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("document %s was not stored within 60s\n%s", want, s.log())
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
