package client_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/client"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
	"github.com/ingestd/ingestd/store/sqlite"
)

// Tool is what a chat backend hands its model.
type Tool struct{ Name string }

// answerTurn is a chat backend's turn: retrieve grounding, put only the
// fenced text into the prompt, and offer the model only the tools the
// verdict allows.
func answerTurn(ctx context.Context, c *client.Client, question string, tools []Tool) (prompt string, offered []Tool, err error) {
	resp, err := c.Retrieve(ctx, ingestd.RetrieveRequest{Query: question, TopK: 1})
	if err != nil {
		// No verdict: AllowedTools(nil, ...) offers nothing.
		return "", client.AllowedTools[Tool](nil, tools), err
	}
	var b strings.Builder
	for _, block := range [][]ingestd.ServedChunk{resp.Primary, resp.Expanded, resp.Rejected} {
		for _, ch := range block {
			b.WriteString(ch.Fenced) // never ch.Text
			b.WriteString("\n")
		}
	}
	return b.String(), client.AllowedTools(resp.Verdict, tools), nil
}

func Example() {
	// A server over a small corpus: an internal handbook page, and a mail a
	// stranger sent to the support inbox.
	dir, err := os.MkdirTemp("", "ingestd-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(context.Background(), filepath.Join(dir, "ingestd.db"), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close(context.Background())
	emb := embedder.NewLexical(retrievaltest.Dims)
	if err := retrievaltest.Put(context.Background(), store, emb, retrievaltest.Vacation, retrievaltest.Refund); err != nil {
		fmt.Println(err)
		return
	}
	svc, err := retrieval.New(retrieval.Options{Store: store, Embedder: emb, Installations: retrievaltest.Installations()})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(api.New(api.Options{Retriever: svc, Documents: store}))
	defer srv.Close()

	c := client.New(srv.URL, nil)
	tools := []Tool{{"lookup_order"}, {"transfer_money"}}
	for _, q := range []string{"vacation days accrue", "process my refund by wire transfer"} {
		prompt, offered, err := answerTurn(context.Background(), c, q, tools)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%q: %d tools offered, prompt fenced: %v\n", q, len(offered), firewall.Check(strings.TrimSpace(prompt)) == nil)
	}
	// A verdict that never arrived allows nothing.
	fmt.Println("no verdict:", len(client.AllowedTools[Tool](nil, tools)), "tools")
	// Output:
	// "vacation days accrue": 2 tools offered, prompt fenced: true
	// "process my refund by wire transfer": 0 tools offered, prompt fenced: true
	// no verdict: 0 tools
}
