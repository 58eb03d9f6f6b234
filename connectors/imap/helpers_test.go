package imap_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/connectortest"
	imapconn "github.com/ingestd/ingestd/connectors/imap"
	"github.com/ingestd/ingestd/connectors/imap/imaptest"
)

const (
	testUser     = "alice@example.com"
	testPassword = "secret"
	testEnv      = "TEST_IMAP_PASSWORD"
)

// MustServer starts an imaptest server with the test user and an empty
// INBOX.
func MustServer(tb testing.TB) *imaptest.Server {
	tb.Helper()
	return imaptest.MustServer(tb, testUser, testPassword)
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

// MustConnector builds an installation through the kind, as cmd does,
// with the test user's password, tls none and the config changes applied.
func MustConnector(tb testing.TB, addr string, change func(*imapconn.Config)) connectors.Connector {
	tb.Helper()
	cfg := imapconn.Config{
		Addr: addr, Username: testUser, PasswordEnv: testEnv,
		TLS: imapconn.TLSNone, Insecure: true, Timeout: 30 * time.Second,
	}
	if change != nil {
		change(&cfg)
	}
	reg := connectors.NewRegistry(imapconn.Kind)
	c, err := reg.Build(ingestd.Installation{ID: "mail", Kind: "imap", Tier: ingestd.TierUntrustedExternal}, connectors.Settings{
		Decode: func(v any) error { *(v.(*imapconn.Config)) = cfg; return nil },
		LookupEnv: func(name string) (string, bool) {
			if name == testEnv {
				return testPassword, true
			}
			return "", false
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// newPass returns a pass that refuses a child Put before its parent, as the
// store's parent link needs.
func newPass() *connectortest.Pass {
	return connectortest.New(&connectortest.Options{CheckParents: true})
}

// MustSync starts a new pass on p, runs it and fails the test on error,
// on an item Put twice in the pass, or on a last Total that is not the
// number of items the pass reported.
func MustSync(tb testing.TB, s *imapconn.Source, p *connectortest.Pass) {
	tb.Helper()
	p.Next()
	if err := s.Sync(context.Background(), p); err != nil {
		tb.Fatalf("Sync: %v", err)
	}
	p.MustTotalSeen(tb)
	seen := map[string]bool{}
	for _, id := range p.PutIDs() {
		if n := p.PutCount(id); n > 1 && !seen[id] {
			seen[id] = true
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
