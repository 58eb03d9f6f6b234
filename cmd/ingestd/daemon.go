package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/jobs"
)

// deadLetters is what `ingestd dlq` needs of the job queue: jobs.Queue
// when the command reaches NATS itself, daemon when it goes through serve.
type deadLetters = ingestd.DeadLetters

var (
	_ deadLetters = (*jobs.Queue)(nil)
	_ deadLetters = (*daemon)(nil)
)

// daemon is the `ingestd serve` that holds this configuration's data_dir,
// reached over its admin API. It is how a one-shot command uses the NATS
// embedded in serve, which listens nowhere else.
type daemon struct {
	holder lockHolder
	base   string // http://127.0.0.1:7700
	token  string // a bearer token with the admin scope, or none without auth
	client *http.Client
}

// findDaemon returns the serve that holds data_dir's lock, or nil when no
// process holds it. A holder that does not serve (yet) is an EUNAVAILABLE
// error naming it. With auth.tokens configured it needs a token with the
// admin scope from the environment.
func (a *app) findDaemon(e *env) (*daemon, error) {
	h, held, err := lockedBy(a.cfg.Path(a.cfg.DataDir))
	if err != nil || !held {
		return nil, err
	}
	if h.Listen == "" {
		return nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "data_dir is held by %s, which does not serve the API (yet): "+
			"wait for serve to start, or for that command to finish, and try again", describe(h))
	}
	token, err := a.adminToken(e)
	if err != nil {
		return nil, err
	}
	d := &daemon{holder: h, token: token, client: &http.Client{Timeout: time.Minute}}
	scheme := "http"
	if a.cfg.TLS.Cert != "" {
		scheme = "https"
		tc, err := pinnedTLS(a.cfg.Path(a.cfg.TLS.Cert))
		if err != nil {
			return nil, &configError{path: a.cfg.path, line: a.cfg.line("tls"), msg: err.Error()}
		}
		d.client.Transport = &http.Transport{TLSClientConfig: tc}
	}
	d.base = scheme + "://" + dialListen(h.Listen)
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
		return "", &configError{path: a.cfg.path, line: a.cfg.line("auth"), msg: "auth: no token has the admin scope, " +
			"which this command needs to reach serve's admin API; add one (scopes: [admin]) and set its variable"}
	}
	return "", a.cfg.tokenUnset(first)
}

// pinnedTLS trusts exactly the certificate serve is configured with (its
// first one): the command dials serve on loopback, a name the certificate
// need not carry, and reads the same file serve does.
func pinnedTLS(certFile string) (*tls.Config, error) {
	b, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("tls: %s holds no PEM certificate", certFile)
	}
	want, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("tls: %s: %w", certFile, err)
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The chain and name checks are replaced by the pin below.
		InsecureSkipVerify: true, //nolint:gosec // pinned in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, want.Raw) {
				return errors.New("the server's certificate is not the one tls.cert names")
			}
			return nil
		},
	}, nil
}

// call sends one admin request and decodes the JSON answer into out. An
// error answer comes back as the *ingestd.Error serve sent.
func (d *daemon) call(ctx context.Context, method, path string, out any) error {
	return d.callJSON(ctx, method, path, nil, out)
}

// callJSON is call with in, when not nil, sent as the JSON body.
func (d *daemon) callJSON(ctx context.Context, method, path string, in, out any) error {
	var reqBody io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		reqBody = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, reqBody)
	if err != nil {
		return err
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	if d.token != "" {
		req.Header.Set("Authorization", "Bearer "+d.token)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "serve, %s, does not answer on %s: %v", d.holder, d.base, unwrapURL(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "%s %s: %v", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var eb struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if json.Unmarshal(body, &eb) != nil || eb.Error.Code == "" {
			return ingestd.Errorf(ingestd.EUNAVAILABLE, "%s %s: %s", method, path, resp.Status)
		}
		if resp.StatusCode == http.StatusNotFound && eb.Error.Code == ingestd.ENOTFOUND && eb.Error.Message == "no route for "+method+" "+path {
			eb.Error.Message += " (serve runs an older ingestd; restart it with this one)"
		}
		return ingestd.Errorf(eb.Error.Code, "%s", eb.Error.Message)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "%s %s: the answer is not what this ingestd expects: %v", method, path, err)
	}
	return nil
}

func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// ListDLQ is GET /v1/dlq.
func (d *daemon) ListDLQ(ctx context.Context) ([]ingestd.DeadLetter, error) {
	var dead []ingestd.DeadLetter
	err := d.call(ctx, http.MethodGet, "/v1/dlq", &dead)
	return dead, err
}

// Replay is POST /v1/dlq/{id}/replay.
func (d *daemon) Replay(ctx context.Context, id string) error {
	return d.call(ctx, http.MethodPost, "/v1/dlq/"+url.PathEscape(id)+"/replay", nil)
}

// ReplayAll is POST /v1/dlq/replay.
func (d *daemon) ReplayAll(ctx context.Context) (int, error) {
	var out struct {
		Replayed int `json:"replayed"`
	}
	err := d.call(ctx, http.MethodPost, "/v1/dlq/replay", &out)
	return out.Replayed, err
}

// QueueSync is POST /v1/installations/{id}/sync.
func (d *daemon) QueueSync(ctx context.Context, installation string) error {
	return d.call(ctx, http.MethodPost, "/v1/installations/"+url.PathEscape(installation)+"/sync", nil)
}
