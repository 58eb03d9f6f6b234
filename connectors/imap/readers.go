package imap

import (
	"strings"

	"github.com/ingestd/ingestd"
)

// Readers is who may read what the installation syncs: the mailbox
// owner, the login (completed with ReaderDomain when it has no @). The
// login reads every mailbox it syncs, so the owner never over-grants;
// others a server's ACL lets read a shared mailbox are not mirrored yet
// (a narrower set, never a wider one). A login that is no principal
// leaves the messages unmapped: no person reads them.
func (s *Source) Readers() ingestd.Readers {
	login := strings.TrimSpace(s.cfg.Username)
	if !strings.Contains(login, "@") && s.cfg.ReaderDomain != "" {
		login += "@" + strings.TrimPrefix(strings.TrimSpace(s.cfg.ReaderDomain), "@")
	}
	owner, err := ingestd.UserPrincipal(login)
	if err != nil || login == "" {
		return ingestd.Readers{}
	}
	return ingestd.ReadersOf(owner)
}
