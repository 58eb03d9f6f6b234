package main

import (
	"context"
	"flag"
	"fmt"
	"slices"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
	"github.com/ingestd/ingestd/client"
	"github.com/ingestd/ingestd/config"
	"github.com/ingestd/ingestd/mcpserver"
)

// runMCP serves MCP on stdin and stdout, for hosts that launch a server
// as a subprocess. By default it reads the store of the configuration
// directly, as `search` does, as the operator (every installation), or
// as the configured token --as names (its scopes and installations, held
// by package access as on the API). With --server it forwards to a
// running daemon over Connect with the token in --token-env instead,
// and the daemon applies that token's scopes; document resources are
// not served then. Logs go to stderr; stdout carries only MCP messages.
func runMCP(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	cfgPath := configFlag(fs, e)
	as := fs.String("as", "", "serve with the scopes and installations of the configured token of this name (default: every installation)")
	server := fs.String("server", "", "forward to the ingestd API at this URL (http://127.0.0.1:7700) instead of reading the store")
	tokenEnv := fs.String("token-env", "", "with --server: the environment variable holding a bearer token with the retrieve scope")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	in, restore := pollableStdin()
	defer restore()
	if *server != "" {
		if *as != "" {
			return &usageError{Msg: "--as reads the store; with --server the daemon applies the token of --token-env"}
		}
		token := ""
		if *tokenEnv != "" {
			v, ok := e.lookupEnv(*tokenEnv)
			if !ok || v == "" {
				return &usageError{Msg: fmt.Sprintf("--token-env: environment variable %s is not set", *tokenEnv)}
			}
			token = v
		}
		return mcpserver.ServeStdio(ctx, mcpserver.Options{Retriever: client.New(*server, &client.Options{Token: token}), Version: versionString()},
			in, e.stdout.Raw())
	}
	a, err := openApp(ctx, e, *cfgPath)
	if err != nil {
		return err
	}
	defer a.Close()
	p := access.Operator()
	if *as != "" {
		i := slices.IndexFunc(a.cfg.Auth.Tokens, func(t config.TokenConfig) bool { return t.Name == *as })
		if i < 0 {
			return a.cfg.At(0, fmt.Sprintf("--as %q: no token of that name in auth.tokens", *as))
		}
		t := a.cfg.Auth.Tokens[i]
		p = &access.Principal{Name: t.Name, Scopes: t.Scopes, Installations: t.Installations}
	}
	svc, err := a.Service()
	if err != nil {
		return err
	}
	ext, closeGateway, err := gatewayExtension(ctx, a.cfg, e, a.log)
	if err != nil {
		return err
	}
	defer closeGateway()
	o := mcpserver.Options{Retriever: access.NewRetriever(a.Traced(svc)), Documents: access.NewDocuments(svc),
		Version: versionString(), Logger: a.log, Extension: ext}
	a.log.Info("mcp.stdio", "installations", len(a.IDs()), "as", p.Name, "firewall_mode", a.cfg.Firewall.Mode)
	err = mcpserver.ServeStdio(access.NewContext(ctx, p), o, in, e.stdout.Raw())
	if ctx.Err() != nil {
		return nil
	}
	return err
}

var _ ingestd.Retriever = (*client.Client)(nil)
