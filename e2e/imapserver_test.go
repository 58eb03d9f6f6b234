package e2e_test

import (
	"bytes"
	"net"
	"testing"
	"time"

	imap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapserver"
	"github.com/emersion/go-imap/v2/imapserver/imapmemserver"
)

const imapUser = "support@example.com"

// imapServer is go-imap's in-memory server on a real loopback listener.
type imapServer struct {
	Addr string
	user *imapmemserver.User
}

// MustIMAPServer starts an imapmemserver with one user (imapUser, password)
// and an empty INBOX, stopped when the test ends.
func MustIMAPServer(tb testing.TB, password string) *imapServer {
	tb.Helper()
	mem := imapmemserver.New()
	user := imapmemserver.NewUser(imapUser, password)
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
	go srv.Serve(ln)
	tb.Cleanup(func() { srv.Close() })
	return &imapServer{Addr: ln.Addr().String(), user: user}
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}

type literal struct{ *bytes.Reader }

func (l literal) Size() int64 { return int64(l.Len()) }

// MustAppend appends one raw message to the mailbox.
func (s *imapServer) MustAppend(tb testing.TB, mailbox string, date time.Time, raw []byte) {
	tb.Helper()
	if _, err := s.user.Append(mailbox, literal{bytes.NewReader(raw)}, &imap.AppendOptions{Time: date}); err != nil {
		tb.Fatalf("append to %s: %v", mailbox, err)
	}
}
