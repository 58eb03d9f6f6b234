package imap

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	imap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/ingestd/ingestd"
)

// conn is one logged-in connection with the configured timeout applied to
// every exchange: a watchdog closes the client when the server stays
// silent for longer, or when the context ends.
type conn struct {
	c        *imapclient.Client
	timeout  time.Duration
	timedOut atomic.Bool
	watchdog *time.Timer // the exchange under way's, between guard and done

	// selected is the mailbox EXAMINEd on this connection and what the
	// server said about it.
	selected string
	sel      *imap.SelectData
}

// dial connects, upgrades to TLS as configured and logs in. h, when not
// nil, receives unilateral data (Watch). Errors from the server (a refused
// login) are *imap.Error wrapped in EINVALID; the others are network
// errors a caller may retry.
func (s *Source) dial(ctx context.Context, h *imapclient.UnilateralDataHandler) (*conn, error) {
	secret, err := s.secret()
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: s.cfg.Timeout}
	raw, err := d.DialContext(ctx, "tcp", s.cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", s.cfg.Addr, err)
	}
	host, _, _ := net.SplitHostPort(s.cfg.Addr)
	tlsConfig := &tls.Config{ServerName: host, InsecureSkipVerify: s.cfg.Insecure, MinVersion: tls.VersionTLS12}
	opts := &imapclient.Options{UnilateralDataHandler: h, TLSConfig: tlsConfig}
	// The dial is bounded by the dialer; the handshake, greeting and login
	// by a deadline on the raw connection, cleared once logged in.
	raw.SetDeadline(time.Now().Add(s.cfg.Timeout))
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	var c *imapclient.Client
	switch s.cfg.TLS {
	case TLSImplicit:
		tc := tls.Client(raw, tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, fmt.Errorf("tls handshake with %s: %w", s.cfg.Addr, err)
		}
		c = imapclient.New(tc, opts)
	case TLSStartTLS:
		c, err = imapclient.NewStartTLS(raw, opts)
		if err != nil {
			raw.Close()
			return nil, fmt.Errorf("starttls with %s: %w", s.cfg.Addr, err)
		}
	default:
		c = imapclient.New(raw, opts)
	}
	if err := c.WaitGreeting(); err != nil {
		c.Close()
		return nil, fmt.Errorf("greeting from %s: %w", s.cfg.Addr, err)
	}
	if s.cfg.OAuth2TokenEnv != "" {
		err = c.Authenticate(&xoauth2{user: s.cfg.Username, token: secret})
	} else {
		err = c.Login(s.cfg.Username, secret).Wait()
	}
	if err != nil {
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ie *imap.Error
		if errors.As(err, &ie) {
			return nil, &refused{ingestd.Errorf(ingestd.EINVALID, "imap %s: login as %q refused: %s", s.cfg.Addr, s.cfg.Username, ie.Text)}
		}
		return nil, fmt.Errorf("login to %s: %w", s.cfg.Addr, err)
	}
	raw.SetDeadline(time.Time{})
	return &conn{c: c, timeout: s.cfg.Timeout}, nil
}

// refused marks an error that reconnecting cannot cure.
type refused struct{ err error }

func (r *refused) Error() string { return r.err.Error() }
func (r *refused) Unwrap() error { return r.err }

// retryable reports whether err is a connection problem that a reconnect
// may cure: not a server's NO/BAD, not a refused login, not the end of ctx,
// not a store failure.
func retryable(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var ie *imap.Error
	var rf *refused
	var pe *putError
	return !errors.As(err, &ie) && !errors.As(err, &rf) && !errors.As(err, &pe)
}

// guard runs the watchdog for one exchange: the client is closed when ctx
// ends or when kick has not been called for the timeout. done stops the
// watchdog and translates the error of a killed exchange.
func (c *conn) guard(ctx context.Context) (kick func(), done func(error) error) {
	t := time.AfterFunc(c.timeout, func() {
		c.timedOut.Store(true)
		c.c.Close()
	})
	c.watchdog = t
	stop := context.AfterFunc(ctx, func() { c.c.Close() })
	kick = func() { t.Reset(c.timeout) }
	done = func(err error) error {
		t.Stop()
		c.watchdog = nil
		stop()
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case c.timedOut.Load():
			return fmt.Errorf("no answer within %s: %w", c.timeout, err)
		}
		return err
	}
	return kick, done
}

// hold stops the watchdog of the exchange under way while this side works
// on what the server sent (reading a message's attachments, storing it):
// the server is waiting on us then, not silent. The exchange's next kick
// starts it again; ctx still closes the connection meanwhile.
func (c *conn) hold() {
	if c.watchdog != nil {
		c.watchdog.Stop()
	}
}

// examine opens the mailbox read-only (EXAMINE: nothing can change a
// flag) unless it is already open on this connection.
func (c *conn) examine(ctx context.Context, name string) (*imap.SelectData, error) {
	if c.selected == name && c.sel != nil {
		return c.sel, nil
	}
	_, done := c.guard(ctx)
	sel, err := c.c.Select(name, &imap.SelectOptions{ReadOnly: true}).Wait()
	if err = done(err); err != nil {
		c.selected, c.sel = "", nil
		return nil, fmt.Errorf("examine %q: %w", name, err)
	}
	c.selected, c.sel = name, sel
	return sel, nil
}

// searchUIDs returns the UIDs matching criteria, ascending.
func (c *conn) searchUIDs(ctx context.Context, criteria *imap.SearchCriteria) ([]uint32, error) {
	var opts *imap.SearchOptions
	if caps := c.c.Caps(); caps.Has(imap.CapESearch) || caps.Has(imap.CapIMAP4rev2) {
		opts = &imap.SearchOptions{ReturnAll: true}
	}
	_, done := c.guard(ctx)
	data, err := c.c.UIDSearch(criteria, opts).Wait()
	if err = done(err); err != nil {
		return nil, fmt.Errorf("uid search: %w", err)
	}
	uids := data.AllUIDs()
	out := make([]uint32, len(uids))
	for i, u := range uids {
		out[i] = uint32(u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

// mailboxes lists the selectable mailboxes matching include and not
// exclude, in the order of the include patterns, then by name.
func (c *conn) mailboxes(ctx context.Context, include, exclude []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, pattern := range include {
		_, done := c.guard(ctx)
		list, err := c.c.List("", pattern, nil).Collect()
		if err = done(err); err != nil {
			return nil, fmt.Errorf("list %q: %w", pattern, err)
		}
		var names []string
		for _, l := range list {
			if noSelect(l.Attrs) || seen[l.Mailbox] || excluded(l.Mailbox, l.Delim, exclude) {
				continue
			}
			seen[l.Mailbox] = true
			names = append(names, l.Mailbox)
		}
		sort.Strings(names)
		out = append(out, names...)
	}
	return out, nil
}

func noSelect(attrs []imap.MailboxAttr) bool {
	for _, a := range attrs {
		if strings.EqualFold(string(a), string(imap.MailboxAttrNoSelect)) || strings.EqualFold(string(a), string(imap.MailboxAttrNonExistent)) {
			return true
		}
	}
	return false
}

func excluded(name string, delim rune, patterns []string) bool {
	for _, p := range patterns {
		if matchMailbox(p, name, delim) {
			return true
		}
	}
	return false
}

// matchMailbox matches an IMAP LIST pattern: "*" matches anything, "%"
// anything but the hierarchy delimiter. INBOX matches case-insensitively.
func matchMailbox(pattern, name string, delim rune) bool {
	if strings.EqualFold(pattern, "INBOX") || strings.EqualFold(name, "INBOX") {
		return strings.EqualFold(pattern, name) || matchGlob([]rune(pattern), []rune(name), delim)
	}
	return matchGlob([]rune(pattern), []rune(name), delim)
}

func matchGlob(p, s []rune, delim rune) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*', '%':
			for i := 0; i <= len(s); i++ {
				if matchGlob(p[1:], s[i:], delim) {
					return true
				}
				if i < len(s) && p[0] == '%' && delim != 0 && s[i] == delim {
					return false
				}
			}
			return false
		default:
			if len(s) == 0 || s[0] != p[0] {
				return false
			}
			p, s = p[1:], s[1:]
		}
	}
	return len(s) == 0
}

// close logs out politely when the connection still works, and closes it.
func (c *conn) close() {
	if c == nil {
		return
	}
	done := make(chan struct{})
	var once sync.Once
	t := time.AfterFunc(2*time.Second, func() { once.Do(func() { c.c.Close() }) })
	go func() {
		c.c.Logout().Wait()
		close(done)
	}()
	<-done
	t.Stop()
	once.Do(func() { c.c.Close() })
}

// xoauth2 is the SASL XOAUTH2 client (Google, Microsoft): the initial
// response carries the user and the bearer token; on failure the server
// sends a JSON challenge, answered with an empty response so that it ends
// the exchange with NO.
type xoauth2 struct{ user, token string }

func (a *xoauth2) Start() (string, []byte, error) {
	return "XOAUTH2", []byte("user=" + a.user + "\x01auth=Bearer " + a.token + "\x01\x01"), nil
}

func (a *xoauth2) Next(challenge []byte) ([]byte, error) { return []byte{}, nil }
