// Package imaptest is test support for IMAP: go-imap's in-memory server on
// a real loopback listener, which records the UID FETCH and UID SEARCH
// commands it is sent and can cut a connection mid-FETCH. It is imported
// only by tests, never by production code.
package imaptest

import (
	"bytes"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	imap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
)

// Server is an imapmemserver with one user, listening on 127.0.0.1. It
// speaks IMAP4rev1 and IMAP4rev2 in clear text and allows LOGIN without
// TLS.
type Server struct {
	Addr     string              // host:port of the listener
	User     *imapmemserver.User // the mailboxes, for tests that change them directly
	Username string              // as given to MustServer
	Password string              // as given to MustServer

	mu       sync.Mutex
	fetches  []string // the UID set of each UID FETCH, in order
	searches int
	cutAfter int // close the connection before the cutAfter-th FETCH response; 0 = never
	written  int
}

// MustServer starts a server with one user and an empty INBOX; it is
// closed when the test ends.
func MustServer(tb testing.TB, username, password string) *Server {
	tb.Helper()
	mem := imapmemserver.New()
	user := imapmemserver.NewUser(username, password)
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
	s := &Server{Addr: ln.Addr().String(), User: user, Username: username, Password: password}
	go srv.Serve(&recordingListener{Listener: ln, s: s})
	tb.Cleanup(func() { srv.Close() })
	return s
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

// Fetches returns the UID set of each UID FETCH since the last call, in
// order, and forgets them.
func (s *Server) Fetches() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.fetches
	s.fetches = nil
	return out
}

// Searches returns the number of UID SEARCH commands since the last call.
func (s *Server) Searches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.searches
	s.searches = 0
	return n
}

// CutAfter makes the server close the connection that is about to write
// its n-th FETCH response from now, instead of writing it; once. Zero
// cancels a pending cut.
func (s *Server) CutAfter(n int) {
	s.mu.Lock()
	s.cutAfter, s.written = n, 0
	s.mu.Unlock()
}

type recordingListener struct {
	net.Listener
	s *Server
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recordingConn{Conn: c, s: l.s}, nil
}

type recordingConn struct {
	net.Conn
	s *Server
}

var (
	fetchCmd  = regexp.MustCompile(`(?i)^\S+ UID FETCH (\S+)`)
	searchCmd = regexp.MustCompile(`(?i)^\S+ UID SEARCH`)
)

// Read records the commands in what it reads. A command split across two
// reads is not recorded; the clients under test write a command at once.
func (c *recordingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	for _, line := range strings.Split(string(b[:n]), "\r\n") {
		if m := fetchCmd.FindStringSubmatch(line); m != nil {
			c.s.mu.Lock()
			c.s.fetches = append(c.s.fetches, m[1])
			c.s.mu.Unlock()
		}
		if searchCmd.MatchString(line) {
			c.s.mu.Lock()
			c.s.searches++
			c.s.mu.Unlock()
		}
	}
	return n, err
}

func (c *recordingConn) Write(b []byte) (int, error) {
	n := bytes.Count(b, []byte(" FETCH ("))
	c.s.mu.Lock()
	cut := c.s.cutAfter > 0 && c.s.written+n >= c.s.cutAfter
	if cut {
		c.s.cutAfter = 0
	} else {
		c.s.written += n
	}
	c.s.mu.Unlock()
	if cut {
		c.Conn.Close()
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

type literal struct{ *bytes.Reader }

func (l literal) Size() int64 { return int64(l.Len()) }

// MustAppend appends raw messages to the mailbox with the internal date and
// returns their UIDs, in order.
func (s *Server) MustAppend(tb testing.TB, mailbox string, date time.Time, raws ...[]byte) []uint32 {
	tb.Helper()
	var uids []uint32
	for _, raw := range raws {
		data, err := s.User.Append(mailbox, literal{bytes.NewReader(raw)}, &imap.AppendOptions{Time: date})
		if err != nil {
			tb.Fatalf("append to %s: %v", mailbox, err)
		}
		uids = append(uids, uint32(data.UID))
	}
	return uids
}

// MustClient returns a client logged in to the server as its user; it is
// closed when the test ends. Its commands are recorded like any other's.
func (s *Server) MustClient(tb testing.TB) *imapclient.Client {
	tb.Helper()
	c, err := imapclient.DialInsecure(s.Addr, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Login(s.Username, s.Password).Wait(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// MustExpunge removes the messages with the UIDs from the mailbox, over a
// new client.
func (s *Server) MustExpunge(tb testing.TB, mailbox string, uids ...uint32) {
	tb.Helper()
	MustExpungeWith(tb, s.MustClient(tb), mailbox, uids...)
}

// MustExpungeWith selects the mailbox over a logged-in client, to any IMAP
// server, flags the UIDs \Deleted and expunges them. The mailbox stays
// selected.
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
