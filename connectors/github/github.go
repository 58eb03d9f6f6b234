// Package github is the connector for GitHub repositories: issues, pull
// requests, issue and review comments, and the Markdown docs of the
// default branch, synced incrementally (since-cursors, ETags, Link
// pagination) within GitHub's rate limits. It also supplies the "github"
// webhook flavour (WebhookFlavor), which maps GitHub's webhook deliveries
// with the same functions a sync uses, so a webhook and a sync produce the
// same documents; the webhook intake knows it only as a
// connectors.Flavor.
//
// It only reads from GitHub. It never sets a tier: it reports each item's
// author_association in Meta and the installation's declared
// tier_by_author_association is applied by the pipeline. A comment links to
// its issue with relation "parent" but is not derived content, so it does
// not inherit the issue's tier.
package github

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/internal/clock"
	"github.com/ingestd/ingestd/provenance"
)

// Kind registers the github connector.
var Kind = connectors.Kind{
	Name: "github",
	Policy: provenance.AnyTier("a public repository takes issues and comments from anyone, a private one only " +
		"from its members; only the owner knows which, and tier_by_author_association can tell maintainers apart"),
	New:     New,
	Flavors: []connectors.Flavor{WebhookFlavor},
}

// Config is the `github:` block of an installation.
type Config struct {
	// Repos lists "owner/name" repositories. Repos, Org or both.
	Repos []string `yaml:"repos"`
	// Org adds every repository of the organisation the token can see.
	Org string `yaml:"org"`
	// TokenEnv names the environment variable holding a token. Optional:
	// without a token (or App) requests are anonymous (60 an hour).
	TokenEnv string `yaml:"token_env"`
	// App authenticates as a GitHub App installation instead of a token.
	App *AppConfig `yaml:"app"`
	// BaseURL is the REST API root; default https://api.github.com/. For
	// GitHub Enterprise Server use https://HOST/api/v3/.
	BaseURL string `yaml:"base_url"`
	// Include says what to take; every kind defaults to true.
	Include Include `yaml:"include"`
	// DocsPaths lists doublestar globs of default-branch files to ingest as
	// docs; only Markdown files (.md, .markdown) among them are taken.
	// Default DefaultDocsPaths.
	DocsPaths []string `yaml:"docs_paths"`
	// PerPage is the page size of listings, 1..100; default 100.
	PerPage int `yaml:"per_page"`
	// FullSyncEvery is how often a pass lists everything (no since, no
	// ETag) and reconciles deletions and transfers; default 24h. Passes
	// in between are incremental and tombstone nothing.
	FullSyncEvery time.Duration `yaml:"full_sync_every"`
	// Logins maps GitHub logins to the people they are ("octocat":
	// "alice@example.com"). With Logins or LoginDomain set, a private or
	// internal repository's items are read by its collaborators with read
	// access and its teams (group:github:<owner>/<slug>), mirrored on
	// every pass (see readers.go); without either, by the installation's
	// declared readers.
	Logins map[string]string `yaml:"logins"`
	// LoginDomain completes a login Logins does not name into the person
	// user:<login>@<domain>. Without it such a collaborator is left out
	// (narrower than GitHub, never wider).
	LoginDomain string `yaml:"login_domain"`
}

// AppConfig is GitHub App installation authentication.
type AppConfig struct {
	AppID          int64  `yaml:"app_id"`
	InstallationID int64  `yaml:"installation_id"`
	PrivateKeyEnv  string `yaml:"private_key_env"` // names a variable holding the PEM key itself
}

// Include selects what a sync takes. A nil field means true.
type Include struct {
	Issues         *bool `yaml:"issues"`
	Pulls          *bool `yaml:"pulls"`
	IssueComments  *bool `yaml:"issue_comments"`
	ReviewComments *bool `yaml:"review_comments"`
	Docs           *bool `yaml:"docs"`
}

func on(b *bool) bool { return b == nil || *b }

// Defaults.
var DefaultDocsPaths = []string{"README.md", "docs/**"}

const (
	DefaultBaseURL       = "https://api.github.com/"
	DefaultPerPage       = 100
	DefaultFullSyncEvery = 24 * time.Hour
	// MaxDocBytes is the largest doc file read; a larger one is Failed.
	MaxDocBytes = 2 << 20
)

// Options are a source's runtime dependencies; the zero value is usable.
type Options struct {
	// Token authenticates requests ("" for anonymous, or when App is set).
	Token string
	// App authenticates as a GitHub App installation.
	App *App
	// HTTPClient defaults to a client with a 60 s timeout.
	HTTPClient *http.Client
	// Now and Sleep are the clock; Sleep waits d or until ctx ends.
	Now    func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) error
	Logger *slog.Logger
}

// App is resolved GitHub App authentication.
type App struct {
	AppID          int64
	InstallationID int64
	PrivateKeyPEM  []byte
}

// Source is one github installation.
type Source struct {
	mu           sync.Mutex // one pass at a time: the api's rate-limit state is not shared
	installation string
	cfg          Config
	api          *api
	log          *slog.Logger
	now          func() time.Time
}

var _ ingestd.Source = (*Source)(nil)

// New builds a github installation from its settings: its Source (GitHub's
// webhooks reach it through a webhook installation of the github flavour,
// not this one). A *_env key naming a variable that is unset is EINVALID
// naming both.
func New(inst ingestd.Installation, s connectors.Settings) (connectors.Connector, error) {
	src, err := newFromSettings(inst, s)
	if err != nil {
		return connectors.Connector{}, err
	}
	return connectors.Connector{Source: src}, nil
}

func newFromSettings(inst ingestd.Installation, s connectors.Settings) (*Source, error) {
	var cfg Config
	if s.Decode != nil {
		if err := s.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("decode github settings: %w", err)
		}
	}
	lookup := s.LookupEnv
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	o := Options{Now: s.Now, Logger: s.Logger}
	if cfg.TokenEnv != "" {
		v, ok := lookup(cfg.TokenEnv)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, ingestd.Errorf(ingestd.EINVALID, "github.token_env: environment variable %s is not set", cfg.TokenEnv)
		}
		o.Token = strings.TrimSpace(v)
	}
	if cfg.App != nil {
		if cfg.App.PrivateKeyEnv == "" {
			return nil, ingestd.Errorf(ingestd.EINVALID, "github.app.private_key_env is required")
		}
		v, ok := lookup(cfg.App.PrivateKeyEnv)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, ingestd.Errorf(ingestd.EINVALID, "github.app.private_key_env: environment variable %s is not set", cfg.App.PrivateKeyEnv)
		}
		o.App = &App{AppID: cfg.App.AppID, InstallationID: cfg.App.InstallationID, PrivateKeyPEM: []byte(v)}
	}
	return NewSource(inst.ID, cfg, o)
}

// NewSource validates cfg, applies its defaults and returns the source.
// Errors are EINVALID and name the offending key.
func NewSource(installation string, cfg Config, o Options) (*Source, error) {
	if len(cfg.Repos) == 0 && cfg.Org == "" {
		return nil, ingestd.Errorf(ingestd.EINVALID, "github: set repos or org")
	}
	for i, r := range cfg.Repos {
		if parts := strings.Split(r, "/"); len(parts) != 2 || parts[0] == "" || parts[1] == "" {
			return nil, ingestd.Errorf(ingestd.EINVALID, "github.repos[%d]: %q is not owner/name", i, r)
		}
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	if !strings.HasSuffix(cfg.BaseURL, "/") {
		cfg.BaseURL += "/"
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, ingestd.Errorf(ingestd.EINVALID, "github.base_url: %q is not an http(s) URL", cfg.BaseURL)
	}
	switch {
	case cfg.PerPage == 0:
		cfg.PerPage = DefaultPerPage
	case cfg.PerPage < 1 || cfg.PerPage > 100:
		return nil, ingestd.Errorf(ingestd.EINVALID, "github.per_page must be 1..100")
	}
	if cfg.FullSyncEvery == 0 {
		cfg.FullSyncEvery = DefaultFullSyncEvery
	}
	for login, person := range cfg.Logins {
		if _, err := ingestd.UserPrincipal(person); err != nil || login == "" {
			return nil, ingestd.Errorf(ingestd.EINVALID, "github.logins: %q: %q is not a person (user:<address>)", login, person)
		}
	}
	if d := cfg.LoginDomain; d != "" && (strings.ContainsAny(d, "@: \t") || !strings.Contains(d, ".")) {
		return nil, ingestd.Errorf(ingestd.EINVALID, "github.login_domain: %q is not a domain", d)
	}
	if cfg.FullSyncEvery < 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "github.full_sync_every must not be negative")
	}
	if len(cfg.DocsPaths) == 0 {
		cfg.DocsPaths = append([]string(nil), DefaultDocsPaths...)
	}
	for i, p := range cfg.DocsPaths {
		if !doublestar.ValidatePattern(p) {
			return nil, ingestd.Errorf(ingestd.EINVALID, "github.docs_paths[%d]: invalid glob %q", i, p)
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = clock.Sleep
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: 60 * time.Second}
	}
	a := &api{base: base, http: o.HTTPClient, now: o.Now, sleep: o.Sleep, log: o.Logger, inst: installation}
	switch {
	case o.App != nil:
		if o.App.AppID <= 0 || o.App.InstallationID <= 0 {
			return nil, ingestd.Errorf(ingestd.EINVALID, "github.app: app_id and installation_id are required")
		}
		key, err := ParsePrivateKey(o.App.PrivateKeyPEM)
		if err != nil {
			return nil, err
		}
		t := &appTokens{base: base.String(), appID: o.App.AppID, installationID: o.App.InstallationID, key: key, http: o.HTTPClient, now: o.Now}
		a.token = t.get
	case o.Token != "":
		tok := o.Token
		a.token = func(context.Context) (string, error) { return tok, nil }
	}
	return &Source{installation: installation, cfg: cfg, api: a, log: o.Logger, now: o.Now}, nil
}

// Config returns the source's configuration with defaults applied.
func (s *Source) Config() Config { return s.cfg }

// isDocPath reports whether path (slash-separated, relative to the repo
// root) is a doc the configured docs_paths take: it matches a glob and is
// Markdown. The webhook flavour uses it to decide whether a push changed
// docs.
func isDocPath(globs []string, path string) bool {
	lower := strings.ToLower(path)
	if !strings.HasSuffix(lower, ".md") && !strings.HasSuffix(lower, ".markdown") {
		return false
	}
	for _, g := range globs {
		if ok, _ := doublestar.Match(g, path); ok {
			return true
		}
	}
	return false
}
