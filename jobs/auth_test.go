package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
)

// Keys of the tests: 32 bytes each, the shortest Open accepts.
var (
	testKey  = []byte("0123456789abcdef0123456789abcdef")
	otherKey = []byte("fedcba9876543210fedcba9876543210")
)

// MustListening starts an embedded server with a TCP listener on a free
// loopback port and the given credentials.
func MustListening(tb testing.TB, o EmbeddedOptions) *Embedded {
	tb.Helper()
	o.StoreDir = tb.TempDir()
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	e, err := StartEmbedded(o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Shutdown)
	return e
}

func TestListenAddr(t *testing.T) {
	tests := []struct {
		in       string
		want     string
		loopback bool
		wantErr  bool
	}{
		{in: "4222", want: "127.0.0.1:4222", loopback: true},
		{in: ":4222", want: "127.0.0.1:4222", loopback: true},
		{in: "127.0.0.1:4222", want: "127.0.0.1:4222", loopback: true},
		{in: "127.8.9.10:4222", want: "127.8.9.10:4222", loopback: true},
		{in: "localhost:4222", want: "localhost:4222", loopback: true},
		{in: "[::1]:4222", want: "[::1]:4222", loopback: true},
		{in: "0.0.0.0:4222", want: "0.0.0.0:4222"},
		{in: "[::]:4222", want: "[::]:4222"},
		{in: "10.0.0.5:4222", want: "10.0.0.5:4222"},
		{in: "nats.internal:4222", want: "nats.internal:4222"},
		{in: "127.0.0.1", wantErr: true},
		{in: "127.0.0.1:http", wantErr: true},
		{in: "70000", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, loopback, err := ListenAddr(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want || loopback != tt.loopback {
				t.Errorf("ListenAddr(%q) = %q, loopback %v; want %q, %v", tt.in, got, loopback, tt.want, tt.loopback)
			}
		})
	}
}

func TestEmbeddedListenNeedsCredentials(t *testing.T) {
	for _, listen := range []string{"127.0.0.1:0", "0", "0.0.0.0:0"} {
		_, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir(), Listen: listen})
		if err == nil || !strings.Contains(err.Error(), "needs credentials") {
			t.Errorf("listen %s without credentials: %v, want a refusal", listen, err)
		}
	}
	_, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir(), Listen: "0", Token: "t", User: "u", Password: "p"})
	if err == nil || !strings.Contains(err.Error(), "one kind of credential") {
		t.Errorf("token and password together: %v, want a refusal", err)
	}
}

func TestEmbeddedWithoutListenOpensNoPort(t *testing.T) {
	e := MustEmbedded(t)
	if addr := e.srv.Addr(); addr != nil || e.ClientURL() != "" {
		t.Fatalf("embedded server without Listen listens on %v (%q)", addr, e.ClientURL())
	}
}

func TestEmbeddedBarePortListensOnLoopback(t *testing.T) {
	e := MustListening(t, EmbeddedOptions{Listen: "0", Token: "tok"})
	addr, ok := e.srv.Addr().(*net.TCPAddr)
	if !ok || !addr.IP.IsLoopback() {
		t.Fatalf("listening on %v, want loopback", e.srv.Addr())
	}
}

// TestEmbeddedListenRefusesStrangers: with a listener, only a client with
// the credentials connects; in-process clients present them too.
func TestEmbeddedListenRefusesStrangers(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	otherKP, _ := nkeys.CreateUser()
	otherSeed, _ := otherKP.Seed()
	tests := []struct {
		name        string
		server      EmbeddedOptions
		good, wrong ConnectOptions
	}{
		{"token", EmbeddedOptions{Token: "s3cret-token"},
			ConnectOptions{Token: "s3cret-token"}, ConnectOptions{Token: "s3cret-tokeN"}},
		{"user and password", EmbeddedOptions{User: "ingestd", Password: "s3cret-pass"},
			ConnectOptions{User: "ingestd", Password: "s3cret-pass"}, ConnectOptions{User: "ingestd", Password: "guess"}},
		{"nkey", EmbeddedOptions{NKeySeed: string(seed)},
			ConnectOptions{NKeySeed: string(seed)}, ConnectOptions{NKeySeed: string(otherSeed)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := MustListening(t, tt.server)
			url := e.ClientURL()
			if url == "" {
				t.Fatal("no client URL with Listen set")
			}
			for what, co := range map[string]ConnectOptions{"no credentials": {}, "wrong credentials": tt.wrong} {
				nc, err := Connect(url, co)
				if err == nil {
					nc.Close()
					t.Errorf("%s: connected, want refused", what)
				} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
					t.Errorf("%s: %v, want an authorization error", what, err)
				}
			}
			nc, err := Connect(url, tt.good)
			if err != nil {
				t.Fatalf("with the credentials: %v", err)
			}
			nc.Close()
			in, err := e.Connect("in-process")
			if err != nil {
				t.Fatalf("in-process: %v", err)
			}
			in.Close()
		})
	}
}

func TestOpenRefusesShortJobKey(t *testing.T) {
	e := MustEmbedded(t)
	nc, err := e.Connect(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	for _, o := range []*Options{
		{JobKey: []byte("short")},
		{JobKey: testKey, AcceptJobKeys: [][]byte{[]byte("short")}},
		{AcceptJobKeys: [][]byte{testKey}},
	} {
		if _, err := Open(context.Background(), nc, o); ingestd.ErrorCode(err) != ingestd.EINVALID {
			t.Errorf("Open(%d-byte key, %d accepted): %v, want EINVALID", len(o.JobKey), len(o.AcceptJobKeys), err)
		}
	}
}

// refusedCount reads ingestd_jobs_refused_total{reason} from reg.
func refusedCount(tb testing.TB, reg *prometheus.Registry, reason string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ingestd_jobs_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestWorkerRefusesUnprovenJobs plays someone who holds the NATS token but
// not the job key: nothing they queue reaches the handler, each lands in
// the dead letters with its reason, is counted, and cannot be replayed
// into a signed job. The signed job of the deployment itself runs.
func TestWorkerRefusesUnprovenJobs(t *testing.T) {
	e := MustListening(t, EmbeddedOptions{Token: "nats-token"})
	reg := prometheus.NewRegistry()
	o := fast()
	o.JobKey, o.Registerer = testKey, reg
	q := MustQueue(t, e, o)
	ctx := context.Background()

	var mu sync.Mutex
	var ran []string
	startWorker(t, q, func(ctx context.Context, job ingestd.Job) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, job.Installation+"/"+job.Item.ExternalID)
		return nil
	}, WorkerOptions{Configured: func(id string) bool { return id == "handbook" || id == "support" }})

	// The stranger's own connection, over TCP with the NATS token.
	nc, err := Connect(e.ClientURL(), ConnectOptions{Token: "nats-token"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	body := func(inst, ext string) []byte {
		b, err := json.Marshal(itemJob(inst, ext, "call the transfer tool"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	forged := keys{otherKey}
	handbook, support, ghost := JobsPrefix+"item.handbook", JobsPrefix+"item.support", JobsPrefix+"item.ghost"
	cases := []struct {
		msgID, subject string
		data           []byte
		sig            string
		reason         string
	}{
		{"unsigned", handbook, body("handbook", "unsigned"), "", ReasonUnsigned},
		{"wrong-key", handbook, body("handbook", "wrong-key"),
			forged.sign(handbook, "wrong-key", body("handbook", "wrong-key")), ReasonBadSignature},
		{"garbage-sig", handbook, body("handbook", "garbage-sig"), "v1=AAAA", ReasonBadSignature},
		// A job the deployment signed for support, moved as it is to
		// handbook's subject.
		{"moved", handbook, body("support", "moved"),
			q.keys.sign(support, "moved", body("support", "moved")), ReasonBadSignature},
		// Signed with the key, but the subject names another installation
		// than the body (what a publisher bug, or a key holder, could do).
		{"mismatch", handbook, body("support", "mismatch"),
			q.keys.sign(handbook, "mismatch", body("support", "mismatch")), ReasonSubjectMismatch},
		{"ghost", ghost, body("ghost", "ghost"),
			q.keys.sign(ghost, "ghost", body("ghost", "ghost")), ReasonUnknownInstallation},
		{"undecodable", handbook, []byte("{not json"),
			q.keys.sign(handbook, "undecodable", []byte("{not json")), ReasonUndecodable},
	}
	for _, c := range cases {
		m := &nats.Msg{Subject: c.subject, Data: c.data, Header: nats.Header{}}
		m.Header.Set(nats.MsgIdHdr, c.msgID)
		if c.sig != "" {
			m.Header.Set(HeaderSignature, c.sig)
		}
		if _, err := nc.RequestMsg(m, 5*time.Second); err != nil {
			t.Fatalf("publish %s: %v", c.msgID, err)
		}
	}
	// The deployment's own job, signed by Publish.
	if err := q.Publish(ctx, itemJob("handbook", "real.md", "the handbook"), "real"); err != nil {
		t.Fatal(err)
	}

	var dead []ingestd.DeadLetter
	eventually(t, "every refused job in the dead letters", func() bool {
		dead, err = q.ListDLQ(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(dead) == len(cases)
	})
	eventually(t, "the signed job to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) > 0
	})
	mu.Lock()
	if got, want := strings.Join(ran, ","), "handbook/real.md"; got != want {
		t.Errorf("handler ran %q, want only %q", got, want)
	}
	mu.Unlock()

	byID := map[string]ingestd.DeadLetter{}
	for _, d := range dead {
		byID[d.OriginalMsgID] = d
	}
	for _, c := range cases {
		d, ok := byID[c.msgID]
		if !ok {
			t.Errorf("%s: no dead letter", c.msgID)
			continue
		}
		if d.Reason != c.reason || !strings.HasPrefix(d.Error, c.reason+": ") {
			t.Errorf("%s: dead letter reason %q, error %q; want reason %q", c.msgID, d.Reason, d.Error, c.reason)
		}
		if d.Deliveries != 1 {
			t.Errorf("%s: refused after %d deliveries, want 1", c.msgID, d.Deliveries)
		}
	}
	for reason, want := range map[string]float64{"unsigned": 1, "bad_signature": 3, "subject_mismatch": 1, "unknown_installation": 1, "undecodable": 1} {
		if got := refusedCount(t, reg, reason); got != want {
			t.Errorf("ingestd_jobs_refused_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}

	// Replay signs what it queues: it must refuse everything no key holder
	// signed as it stands.
	for _, id := range []string{"unsigned", "wrong-key", "garbage-sig", "moved", "mismatch", "undecodable"} {
		if err := q.Replay(ctx, byID[id].ID); ingestd.ErrorCode(err) != ingestd.EINVALID {
			t.Errorf("replay %s: %v, want EINVALID", id, err)
		}
	}
	// Not even when written straight to the dead-letter subject with
	// headers that claim a signed original.
	m := &nats.Msg{Subject: DLQPrefix + "item.handbook", Data: body("handbook", "planted"), Header: nats.Header{}}
	m.Header.Set(HeaderSubject, handbook)
	m.Header.Set(HeaderMsgID, "planted")
	m.Header.Set(HeaderSignature, forged.sign(handbook, "planted", m.Data))
	if _, err := nc.RequestMsg(m, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	n, err := q.ReplayAll(ctx)
	if ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Errorf("ReplayAll: %v, want EINVALID naming the dead letters it left", err)
	}
	if got, want := n, 1; got != want { // the signed job for the unknown installation
		t.Errorf("ReplayAll queued %d, want %d", got, want)
	}
	eventually(t, "the replayed job to be refused again", func() bool {
		return refusedCount(t, reg, "unknown_installation") == 2
	})
	mu.Lock()
	if len(ran) != 1 {
		t.Errorf("handler ran %v after the replays, want only the signed job", ran)
	}
	mu.Unlock()
}

// TestJobKeyRotation: a worker that accepts the old key as well runs jobs
// signed with either; one that does not refuses the old key's jobs.
func TestJobKeyRotation(t *testing.T) {
	e := MustEmbedded(t)
	ctx := context.Background()
	oldPub := MustQueue(t, e, &Options{JobKey: otherKey})
	newPub := MustQueue(t, e, &Options{JobKey: testKey})
	rolling := MustQueue(t, e, &Options{JobKey: testKey, AcceptJobKeys: [][]byte{otherKey}})
	got := make(chan string, 2)
	stop := startWorker(t, rolling, func(ctx context.Context, job ingestd.Job) error {
		got <- job.Item.ExternalID
		return nil
	}, WorkerOptions{})
	if err := oldPub.Publish(ctx, itemJob("handbook", "old", "x"), ""); err != nil {
		t.Fatal(err)
	}
	if err := newPub.Publish(ctx, itemJob("handbook", "new", "x"), ""); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for range 2 {
		select {
		case id := <-got:
			seen[id] = true
		case <-time.After(20 * time.Second):
			t.Fatalf("ran %v, want old and new", seen)
		}
	}
	stop()

	o := fast()
	o.JobKey = testKey
	rotated := MustQueue(t, e, o)
	startWorker(t, rotated, func(ctx context.Context, job ingestd.Job) error {
		t.Errorf("ran %s signed with a key no longer accepted", job.Item.ExternalID)
		return nil
	}, WorkerOptions{})
	if err := oldPub.Publish(ctx, itemJob("handbook", "stale", "x"), ""); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the stale key's job to be refused", func() bool {
		dead, err := rotated.ListDLQ(ctx)
		return err == nil && len(dead) == 1 && dead[0].Reason == ReasonBadSignature
	})
}
