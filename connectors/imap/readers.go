package imap

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/emersion/go-imap/v2"

	"github.com/ingestd/ingestd"
)

// Readers is who may read what the installation syncs: the mailbox
// owner, the login (completed with ReaderDomain when it has no @). The
// login reads every mailbox it syncs, so the owner never over-grants;
// others a server's ACL lets read a shared mailbox are not mirrored yet
// (a narrower set, never a wider one). A login that is no principal
// leaves the messages unmapped: no person reads them.
func (s *Source) Readers() ingestd.Readers {
	login := s.complete(s.cfg.Username)
	owner, err := ingestd.UserPrincipal(login)
	if err != nil || login == "" {
		return ingestd.Readers{}
	}
	return ingestd.ReadersOf(owner)
}

// mailboxReaders is who may read the mailbox's messages: the owner, and
// on a server with RFC 4314 ACLs every identifier its ACL gives the read
// right (r): "anyone" and "authenticated" are everyone, "$name" a group,
// any other a user (completed like the login). A negative right
// ("-bob") could take away what a group gives, which the mirror cannot
// subtract from a group: the mailbox is unmapped. An ACL the login may
// not read (no administer right) leaves the owner alone: narrower than
// the server, never wider.
func (c *conn) mailboxReaders(ctx context.Context, s *Source, name string) (ingestd.Readers, error) {
	owner := s.Readers()
	if !owner.Mapped || !c.c.Caps().Has(imap.CapACL) {
		return owner, nil
	}
	_, done := c.guard(ctx)
	data, err := c.c.GetACL(name).Wait()
	if err = done(err); err != nil {
		var ie *imap.Error
		if errors.As(err, &ie) {
			s.log.Info("imap: mailbox ACL not readable; its owner alone reads it", "installation", s.installation, "mailbox", name, "err", err)
			return owner, nil
		}
		return ingestd.Readers{}, fmt.Errorf("getacl %q: %w", name, err)
	}
	ps := slices.Clone(owner.Principals)
	for id, rights := range data.Rights {
		ident := string(id)
		if strings.HasPrefix(ident, "-") {
			return ingestd.Readers{}, nil
		}
		if !slices.Contains(rights, imap.RightRead) {
			continue
		}
		switch {
		case ident == "anyone" || ident == "authenticated":
			ps = append(ps, ingestd.Everyone)
		case strings.HasPrefix(ident, "$"):
			p, err := ingestd.ParsePrincipal("group:" + strings.TrimPrefix(ident, "$"))
			if err != nil {
				return ingestd.Readers{}, nil // an identifier that is no principal: unmapped
			}
			ps = append(ps, p)
		default:
			p, err := ingestd.UserPrincipal(s.complete(ident))
			if err != nil {
				return ingestd.Readers{}, nil
			}
			ps = append(ps, p)
		}
	}
	return ingestd.ReadersOf(ps...), nil
}

// complete adds ReaderDomain to a login without an @.
func (s *Source) complete(login string) string {
	login = strings.TrimSpace(login)
	if login != "" && !strings.Contains(login, "@") && s.cfg.ReaderDomain != "" {
		login += "@" + strings.TrimPrefix(strings.TrimSpace(s.cfg.ReaderDomain), "@")
	}
	return login
}

// readersKey is the cursor holding the readers a mailbox's messages were
// last given ("-" for unmapped).
func readersKey(mailbox string) string { return "readers:" + mailbox }

// mirrorReaders reads who may read the mailbox now (mailboxReaders) for
// the messages the pass puts, and when that changed since the last pass
// gives every message already stored from it the new readers
// (Pass.SetReaders): a revocation holds from this pass, without fetching
// or embedding anything again.
func (r *run) mirrorReaders(ctx context.Context, p *plan) error {
	var now ingestd.Readers
	if err := r.do(ctx, func(c *conn) (err error) {
		now, err = c.mailboxReaders(ctx, r.s, p.name)
		return err
	}); err != nil {
		return err
	}
	p.readers = now
	enc, ok := now.Encode()
	if !ok {
		enc = "-"
	}
	prev, err := r.pass.Cursor(ctx, readersKey(p.name))
	if err != nil {
		return fmt.Errorf("load readers of %q: %w", p.name, err)
	}
	if prev == enc {
		return nil
	}
	if prev != "" { // "": first pass with readers; new puts carry them
		r.s.log.Info("imap: mailbox readers changed", "installation", r.s.installation, "mailbox", p.name, "readers", enc)
		for _, uid := range minus(p.known, p.expunged) {
			ids, err := r.maps.get(ctx, p.name, p.cur.UIDValidity, uid)
			if err != nil {
				return err
			}
			for _, id := range ids {
				if err := r.pass.SetReaders(ctx, id, now); err != nil {
					return &putError{fmt.Errorf("set readers of %s: %w", id, err)}
				}
			}
		}
	}
	if err := r.pass.SetCursor(ctx, readersKey(p.name), enc); err != nil {
		return fmt.Errorf("save readers of %q: %w", p.name, err)
	}
	return nil
}
