package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/client"
	ingestdv1 "github.com/ingestd/ingestd/gen/ingestd/v1"
	"github.com/ingestd/ingestd/gen/ingestd/v1/ingestdv1connect"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
)

// TestLocatorOnEveryProtocol: a chunk's locator (the runbook's third
// page) is served as "locator" by REST, Connect JSON, gRPC, Connect proto
// and gRPC-Web alike, and a chunk without one has none.
func TestLocatorOnEveryProtocol(t *testing.T) {
	e := MustServe(t, ingestd.ModeEnforce, api.Options{})
	q := ingestd.RetrieveRequest{Query: "rollback procedure helm history previous chart", TopK: 1}
	const want = "p. 3"
	runbook := retrievaltest.Runbook.ID()

	for _, path := range []string{"/v1/retrieve", "/ingestd.v1.RetrievalService/Retrieve"} {
		status, body, _ := e.do(t, "POST", path, "", q)
		if status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, status, body)
		}
		var resp struct {
			Primary []map[string]any `json:"primary"`
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.Primary) != 1 || resp.Primary[0]["document_id"] != runbook || resp.Primary[0]["locator"] != want {
			t.Fatalf("%s: primary = %v, want the runbook's chunk with locator %q", path, resp.Primary, want)
		}
	}
	for name, c := range map[string]*client.Client{
		"gRPC":          client.New(e.URL, &client.Options{HTTPClient: e.H2C, GRPC: true}),
		"Connect proto": client.New(e.URL, nil),
	} {
		resp, err := c.Retrieve(t.Context(), q)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(resp.Primary) != 1 || resp.Primary[0].Locator != want {
			t.Fatalf("%s: primary = %+v, want locator %q", name, resp.Primary, want)
		}
	}
	gw := ingestdv1connect.NewRetrievalServiceClient(http.DefaultClient, e.URL, connect.WithGRPCWeb())
	resp, err := gw.Retrieve(t.Context(), connect.NewRequest(&ingestdv1.RetrieveRequest{Query: q.Query, TopK: int32(q.TopK)}))
	if err != nil {
		t.Fatal(err)
	}
	if p := resp.Msg.GetPrimary(); len(p) != 1 || p[0].GetLocator() != want {
		t.Fatalf("gRPC-Web: primary = %v, want locator %q", p, want)
	}

	// A document without sections: no locator in REST.
	status, body, _ := e.do(t, "POST", "/v1/retrieve", "", ingestd.RetrieveRequest{Query: "vacation days accrue", TopK: 1})
	if status != http.StatusOK {
		t.Fatalf("%d %s", status, body)
	}
	var plain struct {
		Primary []map[string]any `json:"primary"`
	}
	if err := json.Unmarshal(body, &plain); err != nil {
		t.Fatal(err)
	}
	if len(plain.Primary) != 1 || plain.Primary[0]["document_id"] != retrievaltest.Vacation.ID() {
		t.Fatalf("primary = %v, want the vacation policy", plain.Primary)
	}
	if l, ok := plain.Primary[0]["locator"]; ok {
		t.Fatalf("a chunk without sections has locator %v", l)
	}
}
