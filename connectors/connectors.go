// Package connectors is the registry of connector kinds and the contract
// of their abilities. A kind is a name, the provenance policy that says
// which tiers its installations may declare, a constructor and the webhook
// flavours it supplies. A kind without a complete policy cannot be
// registered, and an installation whose declared tier its kind's policy
// does not allow cannot be built.
//
// The constructor returns a Connector: the installation's Source and the
// abilities it has (Watcher, ItemReader, Intake), declared as fields so
// that no consumer has to probe a source's type for them.
//
// It never stamps tiers itself: package pipeline does, from the
// installation's declared tier.
package connectors

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

// Kind is one connector kind.
type Kind struct {
	Name   string
	Policy provenance.Policy
	// New builds one installation from its settings: its Source and the
	// abilities it has.
	New func(inst ingestd.Installation, s Settings) (Connector, error)
	// Flavors are the webhook flavours the kind supplies, for
	// installations of the webhook kind to name. Optional.
	Flavors []Flavor
	// VerifiesSenders says the kind reports, when its installation
	// declares VerifiedSenders, what its boundary MTA verified of each
	// mail's sender and which of its text is derived
	// (ingestd.MetaSenderVerifiedDomain and the keys beside it). An
	// installation of another kind may not declare verified senders: no
	// item of it would carry the facts the rule reads.
	VerifiesSenders bool
}

// Settings is what a connector gets from configuration. cmd owns the
// configuration file and the environment; connectors see them only here.
type Settings struct {
	// Decode decodes the installation's kind-specific block (the `files:`
	// of a files installation) into v, rejecting unknown keys. Errors name
	// the file and line.
	Decode func(v any) error
	// LookupEnv reads a secret named by a *_env key.
	LookupEnv func(name string) (string, bool)
	// BaseDir is the directory of the configuration file: relative paths
	// in an installation's block are relative to it.
	BaseDir string
	// DataDir is where the connector may keep caches.
	DataDir string
	Logger  *slog.Logger
	Now     func() time.Time
	// Flavor finds a webhook flavour by name among those the registered
	// kinds supply; FlavorNames lists their names, sorted, for a message.
	// Registry.Build sets them when they are nil.
	Flavor      func(name string) (Flavor, bool)
	FlavorNames func() []string
}

// Registry maps kind names to kinds, and flavour names to the webhook
// flavours the kinds supply.
type Registry struct {
	kinds   map[string]Kind
	flavors map[string]Flavor
}

// NewRegistry returns a registry of the kinds. It panics when a kind has no
// name, no constructor or an incomplete provenance policy, when a flavour
// has no name, no constructor or a scheme this build does not verify, or
// when a kind or flavour name is registered twice: those are programming
// errors a test catches.
func NewRegistry(kinds ...Kind) *Registry {
	r := &Registry{kinds: map[string]Kind{}, flavors: map[string]Flavor{}}
	for _, k := range kinds {
		if err := r.add(k); err != nil {
			panic(err)
		}
	}
	return r
}

func (r *Registry) add(k Kind) error {
	if k.Name == "" {
		return fmt.Errorf("connectors: kind without a name")
	}
	if err := k.Policy.Validate(); err != nil {
		return fmt.Errorf("connectors: kind %q: %w", k.Name, err)
	}
	if k.New == nil {
		return fmt.Errorf("connectors: kind %q has no constructor", k.Name)
	}
	if _, dup := r.kinds[k.Name]; dup {
		return fmt.Errorf("connectors: kind %q registered twice", k.Name)
	}
	for _, f := range k.Flavors {
		switch _, dup := r.flavors[f.Name]; {
		case f.Name == "":
			return fmt.Errorf("connectors: kind %q: a webhook flavour without a name", k.Name)
		case f.build == nil:
			return fmt.Errorf("connectors: kind %q: webhook flavour %q has no constructor", k.Name, f.Name)
		case !f.Scheme.Known():
			return fmt.Errorf("connectors: kind %q: webhook flavour %q: scheme %q is not one this build verifies", k.Name, f.Name, f.Scheme)
		case dup:
			return fmt.Errorf("connectors: webhook flavour %q registered twice", f.Name)
		}
		r.flavors[f.Name] = f
	}
	r.kinds[k.Name] = k
	return nil
}

// Flavor returns the webhook flavour with the name.
func (r *Registry) Flavor(name string) (Flavor, bool) {
	f, ok := r.flavors[name]
	return f, ok
}

// FlavorNames lists the webhook flavour names, sorted.
func (r *Registry) FlavorNames() []string {
	out := make([]string, 0, len(r.flavors))
	for n := range r.flavors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Kind returns the kind with the name.
func (r *Registry) Kind(name string) (Kind, bool) {
	k, ok := r.kinds[name]
	return k, ok
}

// Names lists the registered kind names, sorted.
func (r *Registry) Names() []string {
	out := make([]string, 0, len(r.kinds))
	for n := range r.kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Check validates an installation against its kind's policy without
// building it. Errors are EINVALID and name the installation.
func (r *Registry) Check(inst ingestd.Installation) error {
	k, ok := r.kinds[inst.Kind]
	if !ok {
		return ingestd.Errorf(ingestd.EINVALID, "installation %q: unknown kind %q (known: %s)", inst.ID, inst.Kind, strings.Join(r.Names(), ", "))
	}
	if inst.Tier == "" {
		return ingestd.Errorf(ingestd.EINVALID, "installation %q declares no tier; set tier: to one of %s", inst.ID, provenance.ValidList())
	}
	if !provenance.Valid(inst.Tier) {
		return ingestd.Errorf(ingestd.EINVALID, "installation %q: tier %q is not one of %s", inst.ID, inst.Tier, provenance.ValidList())
	}
	if !k.Policy.Allows(inst.Tier) {
		return ingestd.Errorf(ingestd.EINVALID, "installation %q: kind %q may not declare tier %q (%s)", inst.ID, inst.Kind, inst.Tier, k.Policy.Why)
	}
	if vs := inst.VerifiedSenders; vs != nil {
		switch {
		case !k.VerifiesSenders:
			return ingestd.Errorf(ingestd.EINVALID, "installation %q: kind %q does not report verified senders; verified_senders needs a mail kind", inst.ID, inst.Kind)
		case strings.TrimSpace(vs.AuthservID) == "":
			return ingestd.Errorf(ingestd.EINVALID, "installation %q: verified_senders needs authserv_id, the authserv-id your boundary MTA writes in Authentication-Results", inst.ID)
		case len(vs.Domains) == 0:
			return ingestd.Errorf(ingestd.EINVALID, "installation %q: verified_senders needs domains, the From domains to trust once verified", inst.ID)
		case !provenance.Valid(vs.Tier):
			return ingestd.Errorf(ingestd.EINVALID, "installation %q: verified_senders: tier %q is not one of %s", inst.ID, vs.Tier, provenance.ValidList())
		case !k.Policy.Allows(vs.Tier):
			return ingestd.Errorf(ingestd.EINVALID, "installation %q: verified_senders: kind %q may not declare tier %q", inst.ID, inst.Kind, vs.Tier)
		}
		for _, d := range vs.Domains {
			if d = strings.TrimSpace(d); d == "" || strings.ContainsAny(d, "@ \t;,") || strings.HasPrefix(d, ".") {
				return ingestd.Errorf(ingestd.EINVALID, "installation %q: verified_senders: %q is not a domain (write example.com)", inst.ID, d)
			}
		}
	}
	for key, byValue := range inst.TierByMeta {
		for v, t := range byValue {
			if !provenance.Valid(t) {
				return ingestd.Errorf(ingestd.EINVALID, "installation %q: tier_by_%s: %s: tier %q is not one of %s", inst.ID, key, v, t, provenance.ValidList())
			}
			if !k.Policy.Allows(t) {
				return ingestd.Errorf(ingestd.EINVALID, "installation %q: tier_by_%s: %s: kind %q may not declare tier %q", inst.ID, key, v, inst.Kind, t)
			}
		}
	}
	return nil
}

// Build checks the installation and builds it: its source and its
// abilities. Settings.Flavor, when nil, looks in this registry.
func (r *Registry) Build(inst ingestd.Installation, s Settings) (Connector, error) {
	if err := r.Check(inst); err != nil {
		return Connector{}, err
	}
	if s.Flavor == nil {
		s.Flavor, s.FlavorNames = r.Flavor, r.FlavorNames
	}
	c, err := r.kinds[inst.Kind].New(inst, s)
	if err != nil {
		return Connector{}, fmt.Errorf("installation %q: %w", inst.ID, err)
	}
	if c.Source == nil {
		return Connector{}, fmt.Errorf("installation %q: kind %q built no source", inst.ID, inst.Kind)
	}
	if c.Intake != nil && (c.Intake.Mapper == nil || !c.Intake.Scheme.Known() || len(c.Intake.Secrets) == 0) {
		return Connector{}, fmt.Errorf("installation %q: kind %q built an intake without a mapper, a known scheme or a secret", inst.ID, inst.Kind)
	}
	return c, nil
}
