// Package client is the Go client chat backends and agents use to call
// ingestd's retrieval service, and the gate that applies the turn-level
// tool-firewall verdict to the tools a turn may use.
//
// The gate fails closed: a blocked verdict, an absent one and a malformed
// one all leave the turn without tools. Only an explicit FailOpen option
// changes the last two; nothing changes the first. Put ServedChunk.Fenced,
// never ServedChunk.Text, into a prompt.
//
// A Client is an ingestd.Retriever, like the in-process retrieval.Service.
// The package depends on the root vocabulary, the generated API and
// connect-go, never on the server's packages (no metrics, no firewall).
package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/ingestd/ingestd"
	ingestdv1 "github.com/ingestd/ingestd/gen/ingestd/v1"
	"github.com/ingestd/ingestd/gen/ingestd/v1/ingestdv1connect"
	"github.com/ingestd/ingestd/internal/wire"
)

// Options configures a Client; nil means defaults.
type Options struct {
	// HTTPClient carries the calls; nil means http.DefaultClient. Plain
	// gRPC without TLS needs a client whose transport speaks h2c.
	HTTPClient connect.HTTPClient
	// Token is sent as a bearer token when set.
	Token string
	// GRPC speaks gRPC instead of the Connect protocol.
	GRPC bool
	// AssertionKey is the principal assertion key of a token configured
	// with assertion_key_env: each call then carries an assertion,
	// signed for a minute, that the request's Principal is its person
	// (ingestd.SignAssertion). A call that names no Principal is refused
	// here, before it is sent.
	AssertionKey []byte
}

var _ ingestd.Retriever = (*Client)(nil)

// Client calls the retrieval service; it is the ingestd.Retriever of a
// program that runs apart from ingestd. It is safe for concurrent use.
type Client struct {
	rpc ingestdv1connect.RetrievalServiceClient
	key []byte
}

// New returns a client for the server at baseURL ("http://127.0.0.1:7700").
func New(baseURL string, o *Options) *Client {
	if o == nil {
		o = &Options{}
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	var opts []connect.ClientOption
	if o.GRPC {
		opts = append(opts, connect.WithGRPC())
	}
	if o.Token != "" {
		opts = append(opts, connect.WithInterceptors(bearer(o.Token)))
	}
	return &Client{rpc: ingestdv1connect.NewRetrievalServiceClient(hc, strings.TrimRight(baseURL, "/"), opts...), key: o.AssertionKey}
}

func bearer(token string) connect.UnaryInterceptorFunc {
	return func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+token)
			return next(ctx, req)
		}
	}
}

// Retrieve asks the service. Errors are *ingestd.Error with the code the
// server answered (EINVALID for a bad top_k, EUNAUTHORIZED, EFORBIDDEN,
// EUNAVAILABLE when it cannot be reached, ...). The answer's Verdict is
// nil when the server sent none, or sent one carrying fields this client
// does not know; AllowedTools then allows nothing. RequestID is the id the
// server logged the turn under (its X-Request-Id header), or the one r
// carried when the server did not say.
func (c *Client) Retrieve(ctx context.Context, r ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error) {
	req := connect.NewRequest(wire.RequestToProto(r))
	if err := c.assert(req.Header(), r.Principal); err != nil {
		return nil, err
	}
	resp, err := c.rpc.Retrieve(ctx, req)
	if err != nil {
		return nil, fromConnect("retrieve", err)
	}
	out := wire.ResponseFromProto(resp.Msg)
	if pv := resp.Msg.GetVerdict(); pv != nil && len(pv.ProtoReflect().GetUnknown()) > 0 {
		// A verdict with fields this client does not know cannot be
		// read with certainty: the gate treats it as absent.
		out.Verdict = nil
	}
	out.RequestID = resp.Header().Get("X-Request-Id")
	if out.RequestID == "" {
		out.RequestID = r.RequestID
	}
	return out, nil
}

// Provenance returns the corpus report over the installations r names
// (all the token may see when none).
func (c *Client) Provenance(ctx context.Context, r ingestd.ProvenanceRequest) (ingestd.ProvenanceReport, error) {
	req := connect.NewRequest(&ingestdv1.ProvenanceRequest{Installations: r.Installations, Principal: r.Principal})
	if err := c.assert(req.Header(), r.Principal); err != nil {
		return ingestd.ProvenanceReport{}, err
	}
	resp, err := c.rpc.Provenance(ctx, req)
	if err != nil {
		return ingestd.ProvenanceReport{}, fromConnect("provenance", err)
	}
	return wire.ReportFromProto(resp.Msg), nil
}

// fromConnect turns a connect error into an *ingestd.Error.
func fromConnect(op string, err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return fmt.Errorf("%s: %w", op, err)
	}
	code := wire.AppCode(ce.Code())
	return ingestd.Errorf(code, "%s: %s", op, ce.Message())
}

// assertionLifetime is how long an assertion the client signs is good.
const assertionLifetime = time.Minute

// assert puts the assertion that principal is the call's person in h,
// when the client holds an assertion key.
func (c *Client) assert(h http.Header, principal string) error {
	if c.key == nil {
		return nil
	}
	if strings.TrimSpace(principal) == "" {
		return ingestd.Errorf(ingestd.EINVALID, "the client signs principal assertions: the request must name its principal")
	}
	a, err := ingestd.SignAssertion(c.key, principal, time.Now().Add(assertionLifetime))
	if err != nil {
		return err
	}
	h.Set(ingestd.AssertionHeader, a)
	return nil
}
