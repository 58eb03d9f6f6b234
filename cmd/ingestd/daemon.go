package main

import (
	"slices"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/daemon"
	"github.com/ingestd/ingestd/internal/netaddr"
)

// findDaemon returns the serve that holds data_dir's lock, or nil when no
// process holds it. A holder that does not serve (yet) is an EUNAVAILABLE
// error naming it. With auth.tokens configured it needs a token with the
// admin scope from the environment.
func (a *app) findDaemon(e *env) (*daemon.Remote, error) {
	h, held, err := daemon.LockedBy(a.cfg.Path(a.cfg.DataDir))
	if err != nil || !held {
		return nil, err
	}
	if h.Listen == "" {
		return nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "data_dir is held by %s, which does not serve the API (yet): "+
			"wait for serve to start, or for that command to finish, and try again", daemon.Describe(h))
	}
	token, err := a.adminToken(e)
	if err != nil {
		return nil, err
	}
	o := daemon.RemoteOptions{Addr: netaddr.Dial(h.Listen), Token: token, Holder: h.String()}
	if a.cfg.TLS.Cert != "" {
		o.TLSCert = a.cfg.Path(a.cfg.TLS.Cert)
	}
	d, err := daemon.NewRemote(o)
	if err != nil {
		return nil, a.cfg.At(a.cfg.Line("tls"), err.Error())
	}
	return d, nil
}

// adminToken returns the value of the first admin-scoped token whose
// variable is set; "" when no tokens are configured (serve then answers
// loopback without one).
func (a *app) adminToken(e *env) (string, error) {
	toks := a.cfg.Auth.Tokens
	if len(toks) == 0 {
		return "", nil
	}
	first := -1
	for i, t := range toks {
		if !slices.Contains(t.Scopes, "admin") {
			continue
		}
		if v, ok := e.lookupEnv(t.TokenEnv); ok && v != "" {
			return v, nil
		}
		if first < 0 {
			first = i
		}
	}
	if first < 0 {
		return "", a.cfg.At(a.cfg.Line("auth"), "auth: no token has the admin scope, "+
			"which this command needs to reach serve's admin API; add one (scopes: [admin]) and set its variable")
	}
	return "", a.cfg.TokenUnset(first)
}
