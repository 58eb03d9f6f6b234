package gateway_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/gateway"
	"github.com/ingestd/ingestd/mcpserver"
)

// BenchmarkGatewayRead is the cost of the gateway on a read: a host's
// call of crm__lookup through ingestd's MCP server and the gateway,
// against the same host calling the upstream's lookup directly, both
// over the SDK's in-memory transports in the same run. The ratio of the
// two ns/op is the gateway's cost (docs/BENCHMARKS.md).
func BenchmarkGatewayRead(b *testing.B) {
	c := newCRM(&testing.T{})
	args := map[string]any{"id": 7}
	b.Run("direct", func(b *testing.B) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := c.srv.Connect(b.Context(), st, nil); err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(b.Context(), ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		benchCall(b, cs, "lookup", args)
	})
	b.Run("gateway", func(b *testing.B) {
		g := mustGateway(b, gateway.Options{Upstreams: []gateway.Upstream{c.upstream()}})
		srv := mcpserver.New(mcpserver.Options{Retriever: nopRetriever{}, Extension: g, Logger: slog.New(slog.DiscardHandler)})
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(b.Context(), st, nil); err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(b.Context(), ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		benchCall(b, cs, "crm__lookup", args)
	})
}

// nopRetriever is a retriever the benchmark never calls.
type nopRetriever struct{}

func (nopRetriever) Retrieve(context.Context, ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error) {
	return nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "not in this benchmark")
}

func (nopRetriever) Provenance(context.Context, ingestd.ProvenanceRequest) (ingestd.ProvenanceReport, error) {
	return ingestd.ProvenanceReport{}, nil
}

func benchCall(b *testing.B, cs *mcp.ClientSession, name string, args any) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{gateway.TurnMetaKey: "t"}})
		if err != nil || r.IsError {
			b.Fatalf("%s: %v %+v", name, err, r)
		}
	}
}
