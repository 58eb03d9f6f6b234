package daemon

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
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/jobs"
)

var (
	_ ingestd.DeadLetters = (*jobs.Queue)(nil)
	_ ingestd.DeadLetters = (*Remote)(nil)
)

// Remote is a serving daemon reached over its admin API. It is how a
// one-shot command uses the NATS embedded in serve, which listens
// nowhere else.
type Remote struct {
	// Holder names the serving process, for messages.
	Holder string
	base   string // http://127.0.0.1:7700
	token  string // a bearer token with the admin scope, or none without auth
	client *http.Client
}

// RemoteOptions says where a serving daemon's API is.
type RemoteOptions struct {
	// Addr is the API's host:port.
	Addr string
	// Token is a bearer token with the admin scope; "" without auth.
	Token string
	// TLSCert, when set, is the certificate file serve is configured
	// with: it is the one certificate trusted (dialled on loopback, a name
	// the certificate need not carry).
	TLSCert string
	// Holder names the serving process, for messages.
	Holder string
}

// NewRemote returns the client of the daemon o names; it dials nothing
// yet. A TLSCert that holds no certificate is an *OptionError for "tls".
func NewRemote(o RemoteOptions) (*Remote, error) {
	d := &Remote{Holder: o.Holder, token: o.Token, client: &http.Client{Timeout: time.Minute}}
	scheme := "http"
	if o.TLSCert != "" {
		scheme = "https"
		tc, err := pinnedTLS(o.TLSCert)
		if err != nil {
			return nil, &OptionError{Option: "tls", Err: err}
		}
		d.client.Transport = &http.Transport{TLSClientConfig: tc}
	}
	d.base = scheme + "://" + o.Addr
	return d, nil
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
func (d *Remote) call(ctx context.Context, method, path string, out any) error {
	return d.callJSON(ctx, method, path, nil, out)
}

// callJSON is call with in, when not nil, sent as the JSON body.
func (d *Remote) callJSON(ctx context.Context, method, path string, in, out any) error {
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
		return ingestd.Errorf(ingestd.EUNAVAILABLE, "serve, %s, does not answer on %s: %v", d.Holder, d.base, unwrapURL(err))
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
func (d *Remote) ListDLQ(ctx context.Context) ([]ingestd.DeadLetter, error) {
	var dead []ingestd.DeadLetter
	err := d.call(ctx, http.MethodGet, "/v1/dlq", &dead)
	return dead, err
}

// Replay is POST /v1/dlq/{id}/replay.
func (d *Remote) Replay(ctx context.Context, id string) error {
	return d.call(ctx, http.MethodPost, "/v1/dlq/"+url.PathEscape(id)+"/replay", nil)
}

// ReplayAll is POST /v1/dlq/replay.
func (d *Remote) ReplayAll(ctx context.Context) (int, error) {
	var out struct {
		Replayed int `json:"replayed"`
	}
	err := d.call(ctx, http.MethodPost, "/v1/dlq/replay", &out)
	return out.Replayed, err
}

// QueueSync is POST /v1/installations/{id}/sync.
func (d *Remote) QueueSync(ctx context.Context, installation string) error {
	return d.call(ctx, http.MethodPost, "/v1/installations/"+url.PathEscape(installation)+"/sync", nil)
}

// Erase is POST /v1/erasures.
func (d *Remote) Erase(ctx context.Context, req ingestd.ErasureRequest) (ingestd.ErasureReport, error) {
	var rep ingestd.ErasureReport
	err := d.callJSON(ctx, http.MethodPost, "/v1/erasures", req, &rep)
	return rep, err
}
