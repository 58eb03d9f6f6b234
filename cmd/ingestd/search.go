package main

import (
	"context"
	"encoding/json"
	"flag"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/retrieval"
)

func runSearch(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	asJSON := fs.Bool("json", false, "print exactly the POST /v1/retrieve response")
	insts := fs.String("installations", "", "comma-separated installation ids to search (default all)")
	topK := fs.Int("top-k", 8, "primary chunks to return (1..100)")
	fenced := fs.Bool("fenced", false, "print each chunk's fenced text, as a model would read it")
	exclude := fs.Bool("exclude-untrusted", false, "leave untrusted documents out of all blocks")
	noExpand := fs.Bool("no-expand", false, "skip the expanded block")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return &usageError{msg: "search takes a query: ingestd search QUERY --config F"}
	}
	query := pos[0]
	for _, p := range pos[1:] {
		query += " " + p
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	svc, err := a.retrieval(nil)
	if err != nil {
		return err
	}
	expand := !*noExpand
	resp, err := svc.Retrieve(ctx, ingestd.RetrieveRequest{
		Query:            query,
		TopK:             *topK,
		Installations:    splitList(*insts),
		Expand:           &expand,
		ExcludeUntrusted: *exclude,
	})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(resp)
	}
	retrieval.Render(e.stdout, resp, retrieval.RenderOptions{Color: isTerminal(e.stdout), ShowFenced: *fenced})
	return nil
}
