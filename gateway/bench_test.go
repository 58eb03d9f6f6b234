package gateway_test

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
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

// BenchmarkGatewayReadStdio is BenchmarkGatewayRead against a real
// upstream: the official reference memory server from npm (node, over
// stdio), whose read_graph is declared a trusted read. Direct, the host
// starts the server itself; through the gateway, ingestd starts it. It
// needs INGESTD_TEST_MCP_MEMORY (e2e/mcpservers' mcp-server-memory).
func BenchmarkGatewayReadStdio(b *testing.B) {
	bin := os.Getenv("INGESTD_TEST_MCP_MEMORY")
	if bin == "" {
		b.Skip("INGESTD_TEST_MCP_MEMORY is not set: `npm ci` in e2e/mcpservers and point it at node_modules/.bin/mcp-server-memory")
	}
	b.Setenv("MEMORY_FILE_PATH", filepath.Join(b.TempDir(), "memory.jsonl"))
	args := map[string]any{}
	b.Run("direct", func(b *testing.B) {
		cmd := exec.Command(bin)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(b.Context(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		benchCall(b, cs, "read_graph", args)
	})
	b.Run("gateway", func(b *testing.B) {
		g := mustGateway(b, gateway.Options{Upstreams: []gateway.Upstream{{ID: "memory", Command: []string{bin}, Env: []string{"MEMORY_FILE_PATH"},
			Tools: map[string]gateway.Tool{"read_graph": {Class: ingestd.ToolRead, Output: gateway.OutputTrusted}}}}})
		cs := mustHost(b, g, nopRetriever{}, nil)
		benchCall(b, cs, "memory__read_graph", args)
	})
	b.Run("lane", func(b *testing.B) {
		g := mustGateway(b, gateway.Options{Upstreams: []gateway.Upstream{{ID: "memory", Command: []string{bin}, Env: []string{"MEMORY_FILE_PATH"},
			Tools: map[string]gateway.Tool{"read_graph": {Class: ingestd.ToolRead, Output: gateway.OutputTrusted}}}}})
		cs := mustStdioHost(b, g, nopRetriever{}, nil)
		benchCall(b, cs, "memory__read_graph", args)
	})
}
