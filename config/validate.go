package config

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/internal/netaddr"
)

// validate fills in the defaults and checks every block but the
// installations (decoded and checked already), in the order a reader
// meets them, stopping at the first refusal.
func (c *Config) validate(doc *yaml.Node) error {
	if c.DataDir == "" {
		c.DataDir = "./data"
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:7700"
	}
	for _, step := range []func() error{
		c.validateStore,
		func() error { return c.validateNATS(doc) },
		c.validateEmbedder,
		c.validateFirewall,
		func() error { return c.validateTokens(doc) },
		c.checkPeople,
		c.validateListenHosts,
		c.validateSmallBlocks,
		c.validateRanges,
		func() error { return c.validateGateway(doc) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// validateStore checks the store block: a known driver (sqlite by
// default), and for postgres the variable holding its URL.
func (c *Config) validateStore() error {
	switch c.Store.Driver {
	case "":
		c.Store.Driver = "sqlite"
	case "sqlite":
	case "postgres":
		if c.Store.URLEnv == "" {
			return c.At(c.Line("store"), "store: driver postgres needs url_env naming the variable that holds the connection URL")
		}
	default:
		return c.Errorf(c.Line("store"), "store: driver %q is not one of sqlite, postgres", c.Store.Driver)
	}
	return c.validateReaderIndexes()
}

// validateReaderIndexes parses store.reader_indexes: principals, each
// once, on the postgres store (the embedded one has no graph per
// principal: its filter costs one byte a document).
func (c *Config) validateReaderIndexes() error {
	at := c.KeyLine("store", "reader_indexes")
	if len(c.Store.ReaderIndexes) > 0 && c.Store.Driver != "postgres" {
		return c.At(at, "store: reader_indexes is for driver postgres; the sqlite store filters a person's chunks without one")
	}
	seen := map[ingestd.Principal]bool{}
	c.Store.ReaderIndex = nil
	for _, n := range c.Store.ReaderIndexes {
		r, err := parseReaders([]string{n})
		if err != nil {
			return c.Errorf(at, "store: reader_indexes: %v", err)
		}
		p := r.Principals[0]
		if seen[p] {
			return c.Errorf(at, "store: reader_indexes names %s twice", p)
		}
		seen[p] = true
		c.Store.ReaderIndex = append(c.Store.ReaderIndex, p)
	}
	return nil
}

// validateEmbedder checks the embedder block: a known kind (lexical by
// default, 384 dimensions), what openai needs, dims in range.
func (c *Config) validateEmbedder() error {
	at := c.Line("embedder")
	switch c.Embedder.Kind {
	case "":
		c.Embedder.Kind = "lexical"
	case "lexical":
	case "openai":
		if c.Embedder.BaseURL == "" || c.Embedder.Model == "" {
			return c.At(at, "embedder: kind openai needs base_url and model")
		}
	default:
		return c.Errorf(at, "embedder: kind %q is not one of lexical, openai", c.Embedder.Kind)
	}
	if c.Embedder.Dims == 0 && c.Embedder.Kind == "lexical" {
		c.Embedder.Dims = 384
	}
	if c.Embedder.Dims < 0 || c.Embedder.Dims > 8192 {
		return c.Errorf(at, "embedder: dims %d is out of range 1..8192", c.Embedder.Dims)
	}
	return nil
}

// validateFirewall reads the firewall mode in its canonical spelling.
func (c *Config) validateFirewall() error {
	mode, err := firewall.ParseMode(c.Firewall.Mode)
	if err != nil {
		return c.At(c.Line("firewall"), "firewall: "+ingestd.ErrorMessage(err))
	}
	c.Firewall.Mode = mode
	return nil
}

// validateTokens checks each auth token in turn.
func (c *Config) validateTokens(doc *yaml.Node) error {
	for i := range c.Auth.Tokens {
		if err := c.validateToken(doc, i); err != nil {
			return err
		}
	}
	return nil
}

// validateToken checks auth.tokens[i]: a name and a variable, neither
// shared with an earlier token, known scopes, and installations that
// are configured and compatible with its scopes.
func (c *Config) validateToken(doc *yaml.Node, i int) error {
	t, at := c.Auth.Tokens[i], c.TokenLine(i)
	if t.Name == "" || t.TokenEnv == "" {
		return c.At(at, "auth: every token needs name and token_env")
	}
	for j, prev := range c.Auth.Tokens[:i] {
		switch {
		case prev.Name == t.Name:
			return c.Errorf(at, "auth: token name %q is given twice (first at line %d): refusals and logs name tokens by it", t.Name, c.TokenLine(j))
		case prev.TokenEnv == t.TokenEnv:
			return c.TokenError(i, fmt.Sprintf("reads %s, as token %q (line %d) does: two tokens of one value would be one token, the first listed", t.TokenEnv, prev.Name, c.TokenLine(j)))
		}
	}
	for _, s := range t.Scopes {
		if !slices.Contains(access.Scopes, s) {
			return c.Errorf(at, "auth: token %q: scope %q is not one of %s", t.Name, s, strings.Join(access.Scopes, ", "))
		}
	}
	if t.Installations == nil {
		return nil
	}
	if l := tokenKeyLine(doc, i, "installations"); l != 0 {
		at = l
	}
	return c.validateTokenInstallations(t, at)
}

// validateTokenInstallations checks the installations a token is
// limited to, at line at.
func (c *Config) validateTokenInstallations(t TokenConfig, at int) error {
	if slices.Contains(t.Scopes, access.ScopeMetrics) {
		return c.Errorf(at, "auth: token %q: the metrics scope needs a token that sees every installation (the metrics name them all); give the scrape a token of its own without installations", t.Name)
	}
	if len(t.Installations) == 0 {
		return c.Errorf(at, "auth: token %q: installations is empty, so the token would see nothing; list installation ids, or leave the key out for all", t.Name)
	}
	for _, id := range t.Installations {
		if !slices.ContainsFunc(c.Installations, func(ic InstallationConfig) bool { return ic.ID == id }) {
			return c.Errorf(at, "auth: token %q: installation %q is not configured (configured: %s)", t.Name, id, c.installationIDs())
		}
	}
	return nil
}

// validateListenHosts puts each listen_hosts entry in the form the API's
// guard compares.
func (c *Config) validateListenHosts() error {
	for i, h := range c.ListenHosts {
		n, err := netaddr.NormalizeHost(h)
		if err != nil {
			return c.At(c.Line("listen_hosts"), "listen_hosts: "+err.Error())
		}
		c.ListenHosts[i] = n
	}
	return nil
}

// validateSmallBlocks checks tls, health and log.
func (c *Config) validateSmallBlocks() error {
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		return c.At(c.Line("tls"), "tls: cert and key go together")
	}
	if h := c.Health; h.KeepPasses < 0 || h.FailedPasses < 0 || h.StaleIntervals < 0 {
		return c.At(c.Line("health"), "health: keep_passes, failed_passes and stale_intervals count passes and intervals: none may be negative")
	}
	switch c.Log.Format {
	case "", "text", "json":
	default:
		return c.Errorf(c.Line("log"), "log: format %q is not one of text, json", c.Log.Format)
	}
	return nil
}
