package e2e_test

import (
	"testing"

	"github.com/ingestd/ingestd/connectors/imap/imaptest"
)

const imapUser = "support@example.com"

// MustIMAPServer starts an imaptest server with one user (imapUser,
// password) and an empty INBOX, stopped when the test ends.
func MustIMAPServer(tb testing.TB, password string) *imaptest.Server {
	tb.Helper()
	return imaptest.MustServer(tb, imapUser, password)
}
