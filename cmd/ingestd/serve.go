package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/daemon"
)

// runServe is `ingestd serve`: it opens the daemon as serve and runs it
// in the role --role names until a signal ends it.
func runServe(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	role := fs.String("role", "all", "all (API and ingest), api (serve retrieval only) or worker (ingest only)")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	switch daemon.Role(*role) {
	case daemon.RoleAll, daemon.RoleAPI, daemon.RoleWorker:
	default:
		return &usageError{Msg: fmt.Sprintf("--role %q is not one of all, api, worker", *role)}
	}
	a, err := openApp(ctx, e, *cfgPath, asDaemon)
	if err != nil {
		return err
	}
	defer a.Close()
	warnReaderIndexes(ctx, a.pg, a.cfg.Store.ReaderIndex, a.log)
	so, err := a.serveOptions(e)
	if err != nil {
		return err
	}
	if daemon.Role(*role) != daemon.RoleWorker {
		closeGateway, err := serveGateway(ctx, a.cfg, e, a.log, &so)
		if err != nil {
			return err
		}
		defer closeGateway()
	}
	err = a.Run(ctx, daemon.Role(*role), so)
	if oe := (*daemon.OptionError)(nil); errors.As(err, &oe) {
		// A TLS file or a listen address the daemon cannot use is the
		// configuration's line: exit 2 naming it.
		return a.cfg.At(a.cfg.Line(oe.Option), err.Error())
	}
	return err
}

// serveOptions is the configuration's listener, tokens and job queue for
// daemon.Run. It refuses to serve without tokens on an address other
// machines reach unless auth.allow_unauthenticated says so.
func (a *app) serveOptions(e *env) (daemon.ServeOptions, error) {
	cfg := a.cfg
	tokens, err := a.tokens(e)
	if err != nil {
		return daemon.ServeOptions{}, err
	}
	if err := api.CheckListen(cfg.Listen, len(tokens) > 0, cfg.Auth.AllowUnauthenticated); err != nil {
		return daemon.ServeOptions{}, cfg.At(cfg.ListenLine(), err.Error())
	}
	if len(tokens) == 0 && len(cfg.ListenHosts) == 0 && api.CheckListen(cfg.Listen, false, false) != nil {
		// allow_unauthenticated on a reachable address: other machines
		// connect, but only loopback Host values are answered.
		a.log.Warn("serve.loopback_hosts_only", "listen", cfg.Listen,
			"hint", "without auth.tokens only loopback Host values are answered; list the names clients use in listen_hosts")
	}
	return daemon.ServeOptions{
		Listen:  cfg.Listen,
		TLSCert: cfg.Path(cfg.TLS.Cert),
		TLSKey:  cfg.Path(cfg.TLS.Key),
		Tokens:  tokens,
		Hosts:   cfg.ListenHosts,
		Version: versionString(),
		// With a job key every publish is signed and a worker runs only
		// jobs that verify, for installations this configuration has.
		Queue: func(ctx context.Context, reg prometheus.Registerer) (*daemon.Queue, error) {
			return a.openQueue(ctx, e, true, reg)
		},
		Concurrency: cfg.NATS.Concurrency,
		SpoolDir:    filepath.Join(cfg.Path(cfg.DataDir), "spool"),
		Listening:   a.listening,
	}, nil
}

// tokens reads the configured bearer tokens from the environment, white
// space around a value trimmed (a request's token is). A token whose
// variable is unset or empty refuses the start: serving with a token
// silently missing would lock clients out or, worse, seem to work. So
// does a value that cannot be a secret (api.CheckToken) and one another
// token has too: the first listed would win, and the second's scopes and
// installations would never apply. Errors name the token's line, never
// its value.
func (a *app) tokens(e *env) ([]api.Token, error) {
	var out []api.Token
	for i, t := range a.cfg.Auth.Tokens {
		v, ok := e.lookupEnv(t.TokenEnv)
		v = strings.TrimSpace(v)
		if !ok || v == "" {
			return nil, a.cfg.TokenUnset(i)
		}
		if err := api.CheckToken(v); err != nil {
			return nil, a.cfg.TokenError(i, fmt.Sprintf("the value of %s %s", t.TokenEnv, ingestd.ErrorMessage(err)))
		}
		for j, prev := range out {
			if subtle.ConstantTimeCompare([]byte(prev.Token), []byte(v)) == 1 {
				return nil, a.cfg.TokenError(i, fmt.Sprintf("has the same value as token %q (line %d): every token needs its own", prev.Name, a.cfg.TokenLine(j)))
			}
		}
		tok := personToken(a.cfg, api.Token{Name: t.Name, Token: v, Scopes: t.Scopes, Installations: t.Installations}, t)
		key, err := assertionKey(a.cfg, e, i)
		if err != nil {
			return nil, err
		}
		tok.AssertionKey = key
		out = append(out, tok)
	}
	return out, nil
}

// personToken adds the token's person and the groups to tok.
func personToken(c *config.Config, tok api.Token, t config.TokenConfig) api.Token {
	if t.User != "" {
		tok.User, _ = ingestd.UserPrincipal(t.User) // checked by checkPeople
	}
	tok.ActForUsers = t.ActForUsers
	tok.Groups = c.Membership()
	return tok
}

// assertionKey reads auth.tokens[i]'s assertion key from the variable
// assertion_key_env names: nil without the key, an error at the token's
// line when the variable is unset or shorter than the minimum.
func assertionKey(c *config.Config, e *env, i int) ([]byte, error) {
	name := c.Auth.Tokens[i].AssertionKeyEnv
	if name == "" {
		return nil, nil
	}
	v, ok := e.lookupEnv(name)
	v = strings.TrimSpace(v)
	switch {
	case !ok || v == "":
		return nil, c.TokenError(i, fmt.Sprintf("environment variable %s (assertion_key_env) is not set", name))
	case len(v) < ingestd.MinAssertionKeyBytes:
		return nil, c.TokenError(i, fmt.Sprintf("the value of %s (assertion_key_env) is %d bytes; an assertion key needs at least %d (make one with `openssl rand -hex 32`)", name, len(v), ingestd.MinAssertionKeyBytes))
	}
	return []byte(v), nil
}
