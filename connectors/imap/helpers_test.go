package imap_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	imap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"

	"github.com/ingestd/ingestd"
	imapconn "github.com/ingestd/ingestd/connectors/imap"
)

const (
	testUser     = "alice@example.com"
	testPassword = "secret"
	testEnv      = "TEST_IMAP_PASSWORD"
)

// testServer is an imapmemserver on a real loopback listener whose
// connections record the UID FETCH and UID SEARCH commands they carry and
// can be cut after a number of FETCH responses.
type testServer struct {
	Addr string
	User *imapmemserver.User

	mu       sync.Mutex
	fetches  []string // the UID set of each UID FETCH, in order
	searches int
	cutAfter int // close the connection before the cutAfter-th FETCH response; 0 = never
	written  int
}

// MustServer starts a server with one user and an empty INBOX.
func MustServer(tb testing.TB) *testServer {
	tb.Helper()
	mem := imapmemserver.New()
	user := imapmemserver.NewUser(testUser, testPassword)
	if err := user.Create("INBOX", nil); err != nil {
		tb.Fatal(err)
	}
	mem.AddUser(user)
	srv := imapserver.New(&imapserver.Options{
		NewSession: func(*imapserver.Conn) (imapserver.Session, *imapserver.GreetingData, error) {
			return mem.NewSession(), nil, nil
		},
		Caps:         imap.CapSet{imap.CapIMAP4rev1: {}, imap.CapIMAP4rev2: {}},
		InsecureAuth: true,
		Logger:       discardLogger{},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ts := &testServer{Addr: ln.Addr().String(), User: user}
	go srv.Serve(&recordingListener{Listener: ln, ts: ts})
	tb.Cleanup(func() { srv.Close() })
	return ts
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// Fetches returns the UID sets fetched since the last call.
func (ts *testServer) Fetches() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	out := ts.fetches
	ts.fetches = nil
	return out
}

// Searches returns the number of UID SEARCH commands since the last call.
func (ts *testServer) Searches() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	n := ts.searches
	ts.searches = 0
	return n
}

// CutAfter makes the server close the connection that is about to write
// its n-th FETCH response from now; once.
func (ts *testServer) CutAfter(n int) {
	ts.mu.Lock()
	ts.cutAfter, ts.written = n, 0
	ts.mu.Unlock()
}

type recordingListener struct {
	net.Listener
	ts *testServer
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, ts: l.ts}, nil
}

type recordingConn struct {
	net.Conn
	ts *testServer
}

var fetchCmd = regexp.MustCompile(`(?i)^\S+ UID FETCH (\S+)`)
var searchCmd = regexp.MustCompile(`(?i)^\S+ UID SEARCH`)

func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	for _, line := range strings.Split(string(b[:n]), "\r\n") {
		if m := fetchCmd.FindStringSubmatch(line); m != nil {
			c.ts.mu.Lock()
			c.ts.fetches = append(c.ts.fetches, m[1])
			c.ts.mu.Unlock()
		}
		if searchCmd.MatchString(line) {
			c.ts.mu.Lock()
			c.ts.searches++
			c.ts.mu.Unlock()
		}
	}
	return n, err
}

func (c *recordingConn) Write(b []byte) (int, error) {
	n := bytes.Count(b, []byte(" FETCH ("))
	c.ts.mu.Lock()
	cut := c.ts.cutAfter > 0 && c.ts.written+n >= c.ts.cutAfter
	if cut {
		c.ts.cutAfter = 0
	} else {
		c.ts.written += n
	}
	c.ts.mu.Unlock()
	if cut {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

type literal struct {
	*bytes.Reader
}

func (l literal) Size() int64 { return int64(l.Len()) }

// MustAppend appends raw messages to a mailbox and returns their UIDs.
func (ts *testServer) MustAppend(tb testing.TB, mailbox string, date time.Time, raws ...[]byte) []uint32 {
	tb.Helper()
	var uids []uint32
	for _, raw := range raws {
		data, err := ts.User.Append(mailbox, literal{bytes.NewReader(raw)}, &imap.AppendOptions{Time: date})
		if err != nil {
			tb.Fatalf("append to %s: %v", mailbox, err)
		}
		uids = append(uids, uint32(data.UID))
	}
	return uids
}

// MustClient logs a client in to the server.
func (ts *testServer) MustClient(tb testing.TB) *imapclient.Client {
	tb.Helper()
	c, err := imapclient.DialInsecure(ts.Addr, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Login(testUser, testPassword).Wait(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// MustExpunge removes the messages with the UIDs from the mailbox.
func (ts *testServer) MustExpunge(tb testing.TB, mailbox string, uids ...uint32) {
	tb.Helper()
	MustExpungeWith(tb, ts.MustClient(tb), mailbox, uids...)
}

// MustExpungeWith expunges the UIDs over a logged-in client.
func MustExpungeWith(tb testing.TB, c *imapclient.Client, mailbox string, uids ...uint32) {
	tb.Helper()
	if _, err := c.Select(mailbox, nil).Wait(); err != nil {
		tb.Fatal(err)
	}
	var set imap.UIDSet
	for _, u := range uids {
		set.AddNum(imap.UID(u))
	}
	if err := c.Store(set, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}, Silent: true}, nil).Close(); err != nil {
		tb.Fatal(err)
	}
	if err := c.Expunge().Close(); err != nil {
		tb.Fatal(err)
	}
}

// MustSource builds a source for the server with tls none, no backoff and
// the config changes applied.
func MustSource(tb testing.TB, addr string, change func(*imapconn.Config)) *imapconn.Source {
	tb.Helper()
	cfg := imapconn.Config{
		Addr: addr, Username: testUser, PasswordEnv: testEnv,
		TLS: imapconn.TLSNone, Insecure: true, Timeout: 30 * time.Second,
	}
	if change != nil {
		change(&cfg)
	}
	s, err := imapconn.NewSource("mail", cfg, &imapconn.Options{
		LookupEnv: func(name string) (string, bool) {
			if name == testEnv {
				return testPassword, true
			}
			return "", false
		},
		Backoff: func(int) time.Duration { return 0 },
		Now:     func() time.Time { return time.Date(2024, 6, 1, 0, 0, 0, 0, time.UTC) },
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// recordingPass is an in-memory ingestd.Pass: it keeps the items Put by
// external id, counts every call, and stores cursors in a map.
type recordingPass struct {
	mu       sync.Mutex
	items    map[string]ingestd.Item
	puts     map[string]int // Put calls per external id, over all passes
	deleted  []string       // in order, over all passes
	failed   map[string]error
	cursors  map[string]string
	total    int
	complete bool

	putErr error // when set, Put fails with it
}

func newPass() *recordingPass {
	return &recordingPass{
		items: map[string]ingestd.Item{}, puts: map[string]int{},
		failed: map[string]error{}, cursors: map[string]string{},
	}
}

var _ ingestd.Pass = (*recordingPass)(nil)

func (p *recordingPass) Put(ctx context.Context, it ingestd.Item) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.putErr != nil {
		return p.putErr
	}
	if it.ParentExternalID != "" {
		if _, ok := p.items[it.ParentExternalID]; !ok {
			return fmt.Errorf("parent %s not stored before %s", it.ParentExternalID, it.ExternalID)
		}
	}
	p.items[it.ExternalID] = it
	p.puts[it.ExternalID]++
	return nil
}

func (p *recordingPass) Delete(ctx context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted = append(p.deleted, id)
	delete(p.items, id)
	return nil
}

func (p *recordingPass) Fail(id string, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failed[id] = err
}

func (p *recordingPass) Cursor(ctx context.Context, key string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cursors[key], nil
}

func (p *recordingPass) SetCursor(ctx context.Context, key, value string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cursors[key] = value
	return nil
}

func (p *recordingPass) Total(n int) { p.mu.Lock(); p.total = n; p.mu.Unlock() }
func (p *recordingPass) Complete()   { p.mu.Lock(); p.complete = true; p.mu.Unlock() }

// reset forgets the calls of earlier passes but keeps the items and
// cursors, as a store would.
func (p *recordingPass) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.puts, p.deleted, p.failed, p.total = map[string]int{}, nil, map[string]error{}, 0
}

// mails returns the external ids of the stored mail items, sorted.
func (p *recordingPass) mails() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for id, it := range p.items {
		if it.ItemKind == "mail" {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// MustSync runs one pass and fails the test on error.
func MustSync(tb testing.TB, s *imapconn.Source, p *recordingPass) {
	tb.Helper()
	p.reset()
	if err := s.Sync(context.Background(), p); err != nil {
		tb.Fatalf("Sync: %v", err)
	}
	for id, n := range p.puts {
		if n > 1 {
			tb.Errorf("%s was Put %d times in one pass", id, n)
		}
	}
}

// msg builds a small message.
func msg(id, subject, body string, headers ...string) []byte {
	var b strings.Builder
	b.WriteString("From: Bob <bob@example.org>\r\nTo: support@example.com\r\n")
	b.WriteString("Subject: " + subject + "\r\n")
	b.WriteString("Date: Mon, 03 Jun 2024 10:00:00 +0000\r\n")
	if id != "" {
		b.WriteString("Message-ID: <" + id + ">\r\n")
	}
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("Content-Type: text/plain; charset=utf-8\r\n\r\n")
	b.WriteString(body + "\r\n")
	return []byte(b.String())
}
