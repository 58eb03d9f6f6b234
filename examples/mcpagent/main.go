// Command mcpagent is a minimal agent loop over ingestd's MCP server: for
// each turn it calls the retrieve tool, puts the fenced chunks into the
// prompt, and offers the model the tools whose class the verdict allows:
// every tool when no untrusted text was served, only the closed-world
// reads (looking an order up) when it was. The verdict is read by
// client's gate, which fails closed: an absent, malformed or
// self-contradicting verdict (the one in structuredContent and the one in
// _meta must agree) drops every tool for the turn, and a tool the agent
// does not declare is a write.
//
// The model here is a stand-in that prints what it would be given; put
// your model's call in its place.
//
//	go run ./examples/mcpagent -stdio "ingestd mcp --config examples/quickstart/ingestd.yaml" \
//	    "the customer wants the refund wired today"
//	go run ./examples/mcpagent -url http://127.0.0.1:7700/mcp -token-env INGESTD_TOKEN "deploy runbook"
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/client"
)

// Tool is one tool the agent can offer its model.
type Tool struct {
	Name, Description string
}

// tools is everything this agent could do. Some of it moves money: text
// written by a stranger must never decide that.
var tools = []Tool{
	{"lookup_order", "Read an order by its number from the order system."},
	{"send_reply", "Send a reply to the customer."},
	{"issue_refund", "Refund an order to the original card."},
}

// classes declares what each tool can do with its arguments. Looking an
// order up reads what the company holds and reaches nothing the model
// chooses, so it stays allowed after untrusted text; the others act.
var classes = client.Classes{
	"lookup_order": ingestd.ToolRead,
	"send_reply":   ingestd.ToolWrite,
	"issue_refund": ingestd.ToolWrite,
}

func main() {
	url := flag.String("url", "", "the MCP endpoint of a running ingestd (http://127.0.0.1:7700/mcp)")
	tokenEnv := flag.String("token-env", "", "environment variable holding a bearer token with the retrieve scope")
	stdio := flag.String("stdio", "", "command that starts an stdio MCP server (ingestd mcp --config F)")
	flag.Parse()
	if flag.NArg() == 0 || (*url == "") == (*stdio == "") {
		fmt.Fprintln(os.Stderr, "usage: mcpagent (-url URL [-token-env VAR] | -stdio COMMAND) QUESTION...")
		os.Exit(2)
	}
	var transport mcp.Transport
	if *url != "" {
		token := ""
		if *tokenEnv != "" {
			token = os.Getenv(*tokenEnv)
		}
		transport = &mcp.StreamableClientTransport{Endpoint: *url, HTTPClient: &http.Client{Transport: bearer{token: token}}}
	} else {
		f := strings.Fields(*stdio)
		transport = &mcp.CommandTransport{Command: exec.Command(f[0], f[1:]...)}
	}
	if err := run(context.Background(), transport, flag.Args(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mcpagent:", err)
		os.Exit(1)
	}
}

// run takes one turn per question.
func run(ctx context.Context, t mcp.Transport, questions []string, out io.Writer) error {
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpagent", Version: "0.1.0"}, nil)
	session, err := c.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer session.Close()
	for _, q := range questions {
		if err := turn(ctx, session, q, out); err != nil {
			return err
		}
	}
	return nil
}

// turn retrieves grounding for q and asks the model with the tools the
// verdict allows.
func turn(ctx context.Context, s *mcp.ClientSession, q string, out io.Writer) error {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "retrieve", Arguments: map[string]any{"query": q}})
	if err != nil {
		return fmt.Errorf("retrieve: %w", err)
	}
	if res.IsError {
		return errors.New("retrieve: " + text(res.Content))
	}
	allowed := client.AllowedToolsByClassMCP(res, tools, func(t Tool) ingestd.ToolClass { return classes.Of(t.Name) })
	var prompt strings.Builder
	fmt.Fprintf(&prompt, "Question: %s\n\nGrounding (fenced; each fence says how to read it):\n", q)
	// content is the verdict line, then each chunk in its fence, as the
	// server stored it: passed through, never unfenced.
	prompt.WriteString(text(res.Content))
	return model(out, prompt.String(), allowed)
}

// model stands in for a chat model call.
func model(out io.Writer, prompt string, offered []Tool) error {
	names := make([]string, len(offered))
	for i, t := range offered {
		names[i] = t.Name
	}
	_, err := fmt.Fprintf(out, "--- model call\n%s\n--- tools offered: [%s]\n", prompt, strings.Join(names, ", "))
	return err
}

func text(content []mcp.Content) string {
	var parts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// bearer adds the token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}
