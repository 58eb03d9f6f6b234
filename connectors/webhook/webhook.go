// Package webhook is the signed webhook intake: an http.Handler for
// POST /v1/webhooks/{installation} that refuses a request without a
// well-formed signature header before reading its body, verifies the
// signature over the raw body as it streams in (holding it, bounded, until
// then), drops replays of what the signature covers, turns the delivery
// into ingest jobs stamped with their event time and answers 202 only
// after every job was enqueued. Two flavours: GitHub (X-Hub-Signature-256
// over the body alone; the items are mapped by package connectors/github,
// so a webhook and a sync produce the same documents) and Standard
// Webhooks (webhook-id, webhook-timestamp, webhook-signature; a JSON
// document mapped to one item by JSON pointers).
//
// It never parses, logs or stores a payload whose signature did not
// verify, never trusts an unsigned header for anything but logs, never
// blocks on ingest (Enqueue only queues) and never sets a tier: the
// installation's declared tier is stamped by the pipeline.
package webhook

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/github"
	"github.com/ingestd/ingestd/provenance"
)

// Kind registers the webhook connector.
var Kind = connectors.Kind{
	Name: "webhook",
	Policy: provenance.AnyTier("the sender decides what it posts — a public repository's events carry strangers' " +
		"text, an internal system's carry the organisation's — so only the owner can say"),
	New: newSource,
}

// Flavours.
const (
	FlavorGitHub   = "github"
	FlavorStandard = "standard"
)

// DefaultTolerance is how far a Standard Webhooks timestamp may be from
// now, either way.
const DefaultTolerance = 5 * time.Minute

// DefaultReplayWindow is how long an accepted delivery is remembered: 72
// hours covers GitHub's redelivery of any delivery of the past three days
// and the Standard Webhooks retry schedules in use (about 28 hours). A
// replay after it is still held to the event-time rule (see Replays and
// ingestd.Job.At): it cannot roll a document back.
const DefaultReplayWindow = 72 * time.Hour

// Config is the `webhook:` block of an installation.
type Config struct {
	// Flavor is "github" (default) or "standard".
	Flavor string `yaml:"flavor"`
	// SecretEnv names the variable holding the signing secret; SecretsEnv
	// names more variables (a list, or one comma-separated string) for
	// rotation: a delivery signed with any of their secrets verifies. Each
	// variable holds one secret (surrounding whitespace is trimmed). At
	// least one is required. Standard Webhooks secrets are "whsec_<base64>".
	SecretEnv  string     `yaml:"secret_env"`
	SecretsEnv StringList `yaml:"secrets_env"`
	// Tolerance bounds a Standard Webhooks timestamp's distance from now;
	// default DefaultTolerance. GitHub deliveries carry no signed
	// timestamp.
	Tolerance time.Duration `yaml:"tolerance"`
	// ReplayWindow is how long an accepted delivery is remembered, by the
	// digest of its signed body (GitHub: the X-GitHub-Delivery header is
	// not signed) or its signed msg id (Standard Webhooks, at least as
	// long as the tolerance lets its timestamp pass); default
	// DefaultReplayWindow.
	ReplayWindow time.Duration `yaml:"replay_window"`
	// Fields maps a Standard Webhooks body to an item (see Fields).
	Fields Fields `yaml:"fields"`
	// Format of the mapped body text: plain (default), markdown or html.
	Format string `yaml:"format"`
	// DocsPaths are the globs a GitHub push must touch on the default
	// branch to trigger a sync; default github.DefaultDocsPaths.
	DocsPaths []string `yaml:"docs_paths"`
	// SyncInstallation is the installation a doc-changing push asks to
	// sync (a github installation of the same repository); default this
	// installation, whose own sync does nothing.
	SyncInstallation string `yaml:"sync_installation"`
}

// Fields are RFC 6901 JSON pointers into a Standard Webhooks body. The
// default accepted shape is a flat object:
//
//	{"id": "ticket-42", "title": "...", "body": "..." (or "text"), "url": "...", "author": "...", "deleted": false}
//
// id (a string or number) is required and is the item's external id;
// title or body must be present; "deleted": true tombstones the item. For
// an envelope such as {"type":..., "data": {...}} set the pointers, e.g.
// id: /data/id.
//
// updated_at (RFC 3339, or unix seconds) is the time of the state the
// body describes; without it the signed webhook-timestamp stands in. A
// delivery older than what is stored for its id is ignored, so a sender
// that may retry an old message after a newer one, or change an item
// more than once a second, should send it.
type Fields struct {
	ID        string `yaml:"id"`
	Title     string `yaml:"title"`
	Body      string `yaml:"body"`
	URL       string `yaml:"url"`
	Author    string `yaml:"author"`
	Deleted   string `yaml:"deleted"`
	UpdatedAt string `yaml:"updated_at"`
}

// StringList decodes from a YAML list or one comma-separated string.
type StringList []string

// UnmarshalYAML accepts a sequence or a scalar.
func (l *StringList) UnmarshalYAML(unmarshal func(any) error) error {
	var list []string
	if err := unmarshal(&list); err == nil {
		*l = list
		return nil
	}
	var s string
	if err := unmarshal(&s); err != nil {
		return fmt.Errorf("want a list or a comma-separated string")
	}
	*l = splitList(s)
	return nil
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
}

// Endpoint is one installation's resolved webhook settings: what the
// handler needs to verify and map its deliveries.
type Endpoint struct {
	Installation     string
	Flavor           string
	Secrets          [][]byte
	Tolerance        time.Duration
	ReplayWindow     time.Duration
	Fields           Fields
	Format           string
	DocsPaths        []string
	SyncInstallation string
}

// NewEndpoint validates cfg and resolves its secrets (the values, not the
// variable names). Errors are EINVALID and never echo a secret.
func NewEndpoint(installation string, cfg Config, secrets []string) (Endpoint, error) {
	ep := Endpoint{Installation: installation, Flavor: cfg.Flavor, Tolerance: cfg.Tolerance, ReplayWindow: cfg.ReplayWindow, Fields: cfg.Fields,
		Format: cfg.Format, DocsPaths: cfg.DocsPaths, SyncInstallation: cfg.SyncInstallation}
	if ep.Flavor == "" {
		ep.Flavor = FlavorGitHub
	}
	if ep.Flavor != FlavorGitHub && ep.Flavor != FlavorStandard {
		return Endpoint{}, ingestd.Errorf(ingestd.EINVALID, "webhook.flavor %q is not github or standard", cfg.Flavor)
	}
	for i, s := range secrets {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if ep.Flavor == FlavorStandard {
			k, err := ParseStandardSecret(s)
			if err != nil {
				return Endpoint{}, ingestd.Errorf(ingestd.EINVALID, "webhook secret %d: %v", i+1, err)
			}
			ep.Secrets = append(ep.Secrets, k)
			continue
		}
		ep.Secrets = append(ep.Secrets, []byte(s))
	}
	if len(ep.Secrets) == 0 {
		return Endpoint{}, ingestd.Errorf(ingestd.EINVALID, "webhook: no secret; set secret_env (an unsigned webhook is refused)")
	}
	switch {
	case ep.Tolerance == 0:
		ep.Tolerance = DefaultTolerance
	case ep.Tolerance < 0:
		return Endpoint{}, ingestd.Errorf(ingestd.EINVALID, "webhook.tolerance must not be negative")
	}
	switch {
	case ep.ReplayWindow == 0:
		ep.ReplayWindow = DefaultReplayWindow
	case ep.ReplayWindow < 0:
		return Endpoint{}, ingestd.Errorf(ingestd.EINVALID, "webhook.replay_window must not be negative")
	}
	switch ep.Format {
	case "":
		ep.Format = ingestd.FormatPlain
	case ingestd.FormatPlain, ingestd.FormatMarkdown, ingestd.FormatHTML:
	default:
		return Endpoint{}, ingestd.Errorf(ingestd.EINVALID, "webhook.format %q is not plain, markdown or html", ep.Format)
	}
	f := &ep.Fields
	for _, p := range []struct {
		name string
		ptr  *string
		def  string
	}{{"id", &f.ID, "/id"}, {"title", &f.Title, "/title"}, {"body", &f.Body, ""}, {"url", &f.URL, "/url"}, {"author", &f.Author, "/author"}, {"deleted", &f.Deleted, "/deleted"}, {"updated_at", &f.UpdatedAt, "/updated_at"}} {
		if *p.ptr == "" {
			*p.ptr = p.def
			continue
		}
		if !strings.HasPrefix(*p.ptr, "/") {
			return Endpoint{}, ingestd.Errorf(ingestd.EINVALID, "webhook.fields.%s: %q is not a JSON pointer (it starts with /)", p.name, *p.ptr)
		}
	}
	if len(ep.DocsPaths) == 0 {
		ep.DocsPaths = append([]string(nil), github.DefaultDocsPaths...)
	}
	if ep.SyncInstallation == "" {
		ep.SyncInstallation = installation
	}
	return ep, nil
}

// ParseStandardSecret decodes a Standard Webhooks secret: base64, with
// or without the "whsec_" prefix.
func ParseStandardSecret(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	if err != nil || len(k) == 0 {
		return nil, fmt.Errorf("not a whsec_<base64> secret")
	}
	return k, nil
}

// Source is a webhook installation. Webhooks push, so there is nothing to
// pull: Sync does nothing and succeeds (a scheduled or manual sync of a
// webhook installation is harmless). The handler is built from the
// sources' Endpoints.
type Source struct{ ep Endpoint }

var _ ingestd.Source = (*Source)(nil)

// Sync does nothing: deliveries arrive through the handler.
func (s *Source) Sync(context.Context, ingestd.Pass) error { return nil }

// Endpoint returns the installation's resolved webhook settings.
func (s *Source) Endpoint() Endpoint { return s.ep }

// EndpointOf returns the endpoint of a source built by Kind, false for any
// other source.
func EndpointOf(src ingestd.Source) (Endpoint, bool) {
	s, ok := src.(*Source)
	if !ok {
		return Endpoint{}, false
	}
	return s.ep, true
}

func newSource(inst ingestd.Installation, s connectors.Settings) (ingestd.Source, error) {
	var cfg Config
	if s.Decode != nil {
		if err := s.Decode(&cfg); err != nil {
			return nil, fmt.Errorf("decode webhook settings: %w", err)
		}
	}
	lookup := s.LookupEnv
	if lookup == nil {
		lookup = func(string) (string, bool) { return "", false }
	}
	var names []string
	if cfg.SecretEnv != "" {
		names = append(names, cfg.SecretEnv)
	}
	for _, n := range cfg.SecretsEnv {
		names = append(names, splitList(n)...)
	}
	var secrets []string
	for _, n := range names {
		v, ok := lookup(n)
		if !ok || strings.TrimSpace(v) == "" {
			return nil, ingestd.Errorf(ingestd.EINVALID, "webhook: environment variable %s is not set", n)
		}
		secrets = append(secrets, v)
	}
	ep, err := NewEndpoint(inst.ID, cfg, secrets)
	if err != nil {
		return nil, err
	}
	return &Source{ep: ep}, nil
}
