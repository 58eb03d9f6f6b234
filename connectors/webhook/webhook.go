// Package webhook is the signed webhook intake and the webhook connector
// kind. The intake is an http.Handler for POST /v1/webhooks/{installation}
// that refuses a request without a well-formed signature header before
// reading its body, verifies the signature over the raw body as it streams
// in (holding it, bounded, until then), drops replays of what the
// signature covers, hands the verified delivery to the installation's
// connectors.DeliveryMapper and answers 202 only after every job it
// returned was enqueued. It verifies the two connectors.Schemes:
// X-Hub-Signature-256 (over the body alone) and Standard Webhooks
// (webhook-id, webhook-timestamp, webhook-signature).
//
// The kind's installations accept deliveries of one flavour, named by
// webhook.flavor: "standard" (Standard Webhooks, a JSON document mapped to
// one item by JSON pointers) lives here; any other is supplied by the kind
// that knows the sender ("github", by package connectors/github) and found
// through connectors.Settings.Flavor. This package imports no other
// connector kind.
//
// It never parses, logs or stores a payload whose signature did not
// verify, never trusts an unsigned header for anything but logs and
// routing, never blocks on ingest (Enqueue only queues) and never sets a
// tier: the installation's declared tier is stamped by the pipeline.
package webhook

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/provenance"
)

// Kind registers the webhook connector.
var Kind = connectors.Kind{
	Name: "webhook",
	Policy: provenance.AnyTier("the sender decides what it posts — a public repository's events carry strangers' " +
		"text, an internal system's carry the organisation's — so only the owner can say"),
	New:     newConnector,
	Flavors: []connectors.Flavor{Standard},
}

// Flavours this package names. FlavorGitHub is supplied by package
// connectors/github; it is the default of Config.Flavor.
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

// Config is the webhook kind's keys of a `webhook:` block. The block also
// holds its flavour's keys (connectors.Flavor.NewKeys): the standard
// flavour's are StandardConfig, the github flavour's github.HookConfig.
type Config struct {
	// Flavor names the flavour: "github" (default), "standard", or one
	// another kind supplies.
	Flavor string `yaml:"flavor"`
	// SecretEnv names the variable holding the signing secret; SecretsEnv
	// names more variables (a list, or one comma-separated string) for
	// rotation: a delivery signed with any of their secrets verifies. Each
	// variable holds one secret (surrounding whitespace is trimmed). At
	// least one is required. Standard Webhooks secrets are "whsec_<base64>".
	SecretEnv  string     `yaml:"secret_env"`
	SecretsEnv StringList `yaml:"secrets_env"`
	// Tolerance bounds a Standard Webhooks timestamp's distance from now;
	// default DefaultTolerance. X-Hub-Signature-256 deliveries carry no
	// signed timestamp.
	Tolerance time.Duration `yaml:"tolerance"`
	// ReplayWindow is how long an accepted delivery is remembered, by the
	// digest of its signed body (X-Hub-Signature-256: the delivery id
	// header is not signed) or its signed msg id (Standard Webhooks, at
	// least as long as the tolerance lets its timestamp pass); default
	// DefaultReplayWindow.
	ReplayWindow time.Duration `yaml:"replay_window"`
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

// Endpoint is one installation's resolved intake: its scheme, secrets,
// windows and mapper. It is the connectors.Intake a webhook installation
// declares.
type Endpoint = connectors.Intake

// NewEndpoint builds the endpoint of an installation taking deliveries of
// the flavour f: the mapper from settings (the flavour's keys as
// f.NewKeys made and the decoder filled them, nil for their defaults;
// f.Mapper hands them on typed), the secrets (values, not variable names) as the
// flavour's scheme reads them, and cfg's windows. cfg.Flavor is not read:
// f is the flavour. Errors are EINVALID and never echo a secret.
func NewEndpoint(installation string, f connectors.Flavor, settings any, cfg Config, secrets []string) (Endpoint, error) {
	if !f.Scheme.Known() {
		return Endpoint{}, ingestd.Errorf(ingestd.EINVALID, "webhook flavour %q: scheme %q is not one this build verifies", f.Name, f.Scheme)
	}
	ep := Endpoint{Scheme: f.Scheme, Tolerance: cfg.Tolerance, ReplayWindow: cfg.ReplayWindow}
	for i, s := range secrets {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if ep.Scheme == connectors.SchemeStandardWebhooks {
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
	m, err := f.Mapper(installation, settings)
	if err != nil {
		return Endpoint{}, err
	}
	ep.Mapper = m
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

// Source is a webhook installation's source. Webhooks push, so there is
// nothing to pull: Sync does nothing and succeeds (a scheduled or manual
// sync of a webhook installation is harmless). Deliveries arrive through
// the intake, built from the installation's connectors.Intake.
type Source struct{}

var _ ingestd.Source = (*Source)(nil)

// Sync does nothing: deliveries arrive through the handler.
func (s *Source) Sync(context.Context, ingestd.Pass) error { return nil }

// newConnector builds a webhook installation: a Source that does nothing
// and the Intake of its flavour.
func newConnector(inst ingestd.Installation, s connectors.Settings) (connectors.Connector, error) {
	cfg, f, settings, err := decode(s)
	if err != nil {
		return connectors.Connector{}, err
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
			return connectors.Connector{}, ingestd.Errorf(ingestd.EINVALID, "webhook: environment variable %s is not set", n)
		}
		secrets = append(secrets, v)
	}
	ep, err := NewEndpoint(inst.ID, f, settings, cfg, secrets)
	if err != nil {
		return connectors.Connector{}, err
	}
	return connectors.Connector{Source: &Source{}, Intake: &ep}, nil
}

// decode reads the webhook block: the kind's keys into Config and the
// flavour's keys into what its Settings returns, in one strict decode, so
// a key neither declares is refused with its line. The flavour is found by
// name first (a decode into a map, which refuses nothing).
func decode(s connectors.Settings) (Config, connectors.Flavor, any, error) {
	name := FlavorGitHub
	if s.Decode != nil {
		var raw map[string]any
		if err := s.Decode(&raw); err != nil {
			return Config{}, connectors.Flavor{}, nil, fmt.Errorf("decode webhook settings: %w", err)
		}
		if v, ok := raw["flavor"]; ok {
			n, isString := v.(string)
			if !isString {
				return Config{}, connectors.Flavor{}, nil, ingestd.Errorf(ingestd.EINVALID, "webhook.flavor: want a name, got %v", v)
			}
			if n != "" {
				name = n
			}
		}
	}
	f, ok := Standard, name == FlavorStandard
	if !ok && s.Flavor != nil {
		f, ok = s.Flavor(name)
	}
	if !ok {
		known := []string{FlavorStandard}
		if s.FlavorNames != nil {
			known = s.FlavorNames()
		}
		return Config{}, connectors.Flavor{}, nil, ingestd.Errorf(ingestd.EINVALID, "webhook.flavor %q is not one of %s", name, strings.Join(known, ", "))
	}
	if s.Decode == nil {
		return Config{}, f, nil, nil
	}
	settings := f.NewKeys()
	if settings == nil {
		var cfg Config
		if err := s.Decode(&cfg); err != nil {
			return Config{}, connectors.Flavor{}, nil, fmt.Errorf("decode webhook settings: %w", err)
		}
		return cfg, f, nil, nil
	}
	// One struct with both key sets inline: {Config; <flavour settings>}.
	both := reflect.New(reflect.StructOf([]reflect.StructField{
		{Name: "Kind", Type: reflect.TypeFor[Config](), Tag: `yaml:",inline"`},
		{Name: "Flavor", Type: reflect.TypeOf(settings).Elem(), Tag: `yaml:",inline"`},
	}))
	if err := s.Decode(both.Interface()); err != nil {
		return Config{}, connectors.Flavor{}, nil, fmt.Errorf("decode webhook settings: %w", err)
	}
	reflect.ValueOf(settings).Elem().Set(both.Elem().Field(1))
	return both.Elem().Field(0).Interface().(Config), f, settings, nil
}
