package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/client"
	ingestdv1 "github.com/ingestd/ingestd/gen/ingestd/v1"
	"github.com/ingestd/ingestd/gen/ingestd/v1/ingestdv1connect"
)

// fixedServer answers every Retrieve with one response.
type fixedServer struct {
	ingestdv1connect.UnimplementedRetrievalServiceHandler
	resp *ingestdv1.RetrieveResponse
}

func (f *fixedServer) Retrieve(context.Context, *connect.Request[ingestdv1.RetrieveRequest]) (*connect.Response[ingestdv1.RetrieveResponse], error) {
	return connect.NewResponse(f.resp), nil
}

// TestVerdictWithUnknownFieldsIsAbsent: a protobuf verdict carrying a
// field this client does not know reaches the gate as no verdict.
func TestVerdictWithUnknownFieldsIsAbsent(t *testing.T) {
	allow := func() *ingestdv1.Verdict {
		return &ingestdv1.Verdict{ToolsAllowed: true, Mode: ingestd.ModeEnforce, Reason: ingestd.ReasonNoUntrusted}
	}
	unknown := allow()
	unknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
	tools := []string{"transfer_money"}
	for name, tt := range map[string]struct {
		v    *ingestdv1.Verdict
		want bool
	}{
		"known fields":   {allow(), true},
		"unknown field":  {unknown, false},
		"absent verdict": {nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.Handle(ingestdv1connect.NewRetrievalServiceHandler(&fixedServer{resp: &ingestdv1.RetrieveResponse{Verdict: tt.v}}))
			srv := httptest.NewServer(mux)
			defer srv.Close()
			resp, err := client.New(srv.URL, nil).Retrieve(t.Context(), ingestd.RetrieveRequest{Query: "q"})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(client.AllowedTools(resp.Verdict, tools)) == 1; got != tt.want {
				t.Errorf("tools kept = %v, want %v (verdict %+v)", got, tt.want, resp.Verdict)
			}
		})
	}
}
