// Package connectors is the registry of connector kinds. A kind is a name,
// the provenance policy that says which tiers its installations may
// declare, and a constructor. A kind without a complete policy cannot be
// registered, and an installation whose declared tier its kind's policy
// does not allow cannot be built.
//
// It never stamps tiers itself: package pipeline does, from the
// installation's declared tier.
package connectors

import (
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

// Kind is one connector kind.
type Kind struct {
	Name   string
	Policy provenance.Policy
	// New builds the source for one installation from its settings.
	New func(inst ingestd.Installation, s Settings) (ingestd.Source, error)
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
}

// Registry maps kind names to kinds.
type Registry struct {
	kinds map[string]Kind
}

// NewRegistry returns a registry of the kinds. It panics when a kind has no
// name, no constructor or an incomplete provenance policy, or when a name
// is registered twice: those are programming errors a test catches.
func NewRegistry(kinds ...Kind) *Registry {
	r := &Registry{kinds: map[string]Kind{}}
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
	r.kinds[k.Name] = k
	return nil
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
		return ingestd.Errorf(ingestd.EINVALID, "installation %q: unknown kind %q (known: %v)", inst.ID, inst.Kind, r.Names())
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

// Build checks the installation and builds its source.
func (r *Registry) Build(inst ingestd.Installation, s Settings) (ingestd.Source, error) {
	if err := r.Check(inst); err != nil {
		return nil, err
	}
	src, err := r.kinds[inst.Kind].New(inst, s)
	if err != nil {
		return nil, fmt.Errorf("installation %q: %w", inst.ID, err)
	}
	return src, nil
}
