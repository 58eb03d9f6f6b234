package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/ingestd/ingestd"
	ingestdv1 "github.com/ingestd/ingestd/gen/ingestd/v1"
	"github.com/ingestd/ingestd/gen/ingestd/v1/ingestdv1connect"
	"github.com/ingestd/ingestd/internal/wire"
)

var _ ingestdv1connect.RetrievalServiceHandler = (*connectService)(nil)

// connectService is the RetrievalService over connect-go.
type connectService struct {
	svc ingestd.Retriever
}

func (c *connectService) Retrieve(ctx context.Context, req *connect.Request[ingestdv1.RetrieveRequest]) (*connect.Response[ingestdv1.RetrieveResponse], error) {
	r := wire.RequestFromProto(req.Msg)
	if r.RequestID == "" {
		r.RequestID = req.Header().Get("X-Request-Id")
	}
	resp, err := c.svc.Retrieve(ctx, r)
	if err != nil {
		return nil, err
	}
	// The message has no request id; the header carries the one the
	// firewall log line has, as the REST body does.
	res := connect.NewResponse(wire.ResponseToProto(resp))
	res.Header().Set("X-Request-Id", resp.RequestID)
	return res, nil
}

func (c *connectService) Provenance(ctx context.Context, req *connect.Request[ingestdv1.ProvenanceRequest]) (*connect.Response[ingestdv1.ProvenanceReport], error) {
	rep, err := c.svc.Provenance(ctx, ingestd.ProvenanceRequest{Installations: req.Msg.GetInstallations(), Principal: req.Msg.GetPrincipal()})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(wire.ReportToProto(rep)), nil
}

// errorInterceptor maps application errors to connect codes and logs
// internal ones; the message of an internal error never leaves.
func (s *server) errorInterceptor() connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			resp, err := next(ctx, req)
			if err == nil {
				return resp, nil
			}
			var ce *connect.Error
			if errors.As(err, &ce) {
				return nil, err
			}
			if ctx.Err() != nil {
				// The client went away: not a server fault.
				s.log.Debug("request abandoned", "procedure", req.Spec().Procedure)
				code := connect.CodeCanceled
				if errors.Is(ctx.Err(), context.DeadlineExceeded) {
					code = connect.CodeDeadlineExceeded
				}
				return nil, connect.NewError(code, ctx.Err())
			}
			if ingestd.ErrorCode(err) == ingestd.EINTERNAL {
				s.log.Error("request failed", "procedure", req.Spec().Procedure, "err", err)
			}
			return nil, connectError(err)
		}
	})
}

// connectError converts an application error to a connect error.
func connectError(err error) *connect.Error {
	code := wire.ConnectCode(ingestd.ErrorCode(err))
	return connect.NewError(code, errors.New(ingestd.ErrorMessage(err)))
}

// jsonCodec is Connect's JSON with the proto field names (top_k,
// tools_allowed) and every field present, so Connect JSON reads like the
// REST JSON: a false tools_allowed is written, not omitted.
type jsonCodec struct{}

func (jsonCodec) Name() string { return "json" }

func (jsonCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, errors.New("json codec: not a proto message")
	}
	return protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}.Marshal(m)
}

func (jsonCodec) Unmarshal(b []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return errors.New("json codec: not a proto message")
	}
	// Every request message is a JSON object; say so in JSON's words
	// rather than the parser's ("syntax error (line 1:1): unexpected
	// token [").
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		return fmt.Errorf("the request must be a JSON object, not %s", jsonValue(t[0]))
	}
	return protojson.UnmarshalOptions{}.Unmarshal(b, m)
}

// jsonValue names the JSON value that starts with c, with its article.
func jsonValue(c byte) string {
	switch {
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "true or false"
	case c == 'n':
		return "null"
	case c == '-' || c >= '0' && c <= '9':
		return "a number"
	default:
		return "valid JSON"
	}
}
