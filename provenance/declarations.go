package provenance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ingestd/ingestd"
)

// Declared is the tier an installation's declaration stamps on an item
// with the given metadata: the tier of the tier_by_<key> rules and the
// verified_senders rule the metadata matches (the most restrictive, if
// several match), else the installation's declared tier. The pipeline stamps with it and
// Declarations judges stored documents with it, so the stamp and the tier
// in force cannot drift apart.
func Declared(inst ingestd.Installation, meta map[string]string) ingestd.Tier {
	return declared(&inst, meta)
}

func declared(inst *ingestd.Installation, meta map[string]string) ingestd.Tier {
	var (
		out     ingestd.Tier
		matched bool
	)
	if len(meta) > 0 {
		for key, byValue := range inst.TierByMeta {
			v, ok := meta[key]
			if !ok {
				continue
			}
			if t, ok := byValue[v]; ok {
				out, matched = MostRestrictive(out, t), true
			}
		}
	}
	if t, ok := verifiedSender(inst.VerifiedSenders, meta); ok {
		out, matched = MostRestrictive(out, t), true
	}
	if !matched {
		return inst.Tier
	}
	return out
}

// verifiedSender is the tier an installation's VerifiedSenders declares
// for an item with the metadata meta, and whether it applies: the item's
// connector reported its sender verified by the declared authserv-id for
// one of the declared domains, and reported none of its text derived
// from someone else's (MetaDerivedContent). Nothing else raises a mail.
func verifiedSender(vs *ingestd.VerifiedSenders, meta map[string]string) (ingestd.Tier, bool) {
	if vs == nil || len(meta) == 0 || meta[ingestd.MetaDerivedContent] != "" {
		return "", false
	}
	d, by := meta[ingestd.MetaSenderVerifiedDomain], meta[ingestd.MetaSenderVerifiedBy]
	if d == "" || by == "" || !strings.EqualFold(by, strings.TrimSpace(vs.AuthservID)) {
		return "", false
	}
	for _, want := range vs.Domains {
		if strings.EqualFold(d, strings.TrimSpace(want)) {
			return vs.Tier, true
		}
	}
	return "", false
}

// verifiedSenderKeys are the metadata keys verifiedSender reads.
var verifiedSenderKeys = []string{ingestd.MetaDerivedContent, ingestd.MetaSenderVerifiedBy, ingestd.MetaSenderVerifiedDomain}

// Declarations is the tier declaration in force: the installations of the
// configuration this process loaded. It is the one place that says which
// tier a stored document counts as (its tier in force), so every surface
// that decides a verdict, shows a tier, filters by tier or reports on the
// corpus agrees with the configuration the moment it is loaded, without a
// sync:
//
//   - a document's tier in force is the most restrictive of its stored
//     stamp and what its installation's current declaration stamps for its
//     stored metadata (Declared) — and, for a derived document, the same of
//     its parent. A declaration that grows more restrictive (an
//     installation re-declared untrusted-external, a tier_by rule removed
//     or narrowed) holds at once; one that grows less restrictive waits for
//     a sync to stamp the documents again.
//   - a document whose installation is no longer configured, or is now
//     configured with another connector kind than the one that wrote it,
//     is orphaned: untrusted-external.
//   - an undeclared (NULL) stamp takes its installation's declaration; an
//     unknown stored value stays untrusted-external.
//
// A nil or empty Declarations configures nothing: every document is
// orphaned. It is safe for concurrent use and never changes.
type Declarations struct {
	insts map[string]*ingestd.Installation
	order []string // ids, as declared
	keys  []string
}

// Declare returns the declaration in force for the configured
// installations. An installation listed twice keeps its last entry.
func Declare(insts []ingestd.Installation) *Declarations {
	d := &Declarations{insts: make(map[string]*ingestd.Installation, len(insts))}
	for _, in := range insts {
		if _, ok := d.insts[in.ID]; !ok {
			d.order = append(d.order, in.ID)
		}
		d.insts[in.ID] = &in
		keys := slices.Collect(maps.Keys(in.TierByMeta))
		if in.VerifiedSenders != nil {
			keys = append(keys, verifiedSenderKeys...)
		}
		for _, key := range keys {
			if !slices.Contains(d.keys, key) {
				d.keys = append(d.keys, key)
			}
		}
	}
	slices.Sort(d.keys)
	return d
}

// MetaKeys lists the metadata keys some tier_by_<key> rule looks at,
// sorted: what a store must read with a document's tier (TierFacts).
func (d *Declarations) MetaKeys() []string {
	if d == nil {
		return nil
	}
	return slices.Clone(d.keys)
}

// Configured reports whether documents of the installation id written by
// a connector of kind are covered by a declaration in force.
func (d *Declarations) Configured(id, kind string) bool {
	return d.installation(id, kind) != nil
}

// installation returns the configured installation id when its kind is
// kind, else nil.
func (d *Declarations) installation(id, kind string) *ingestd.Installation {
	if d == nil {
		return nil
	}
	if in := d.insts[id]; in != nil && in.Kind == kind {
		return in
	}
	return nil
}

// Ceiling is what the declaration in force stamps on a document of the
// installation id, written by a connector of kind, with metadata meta:
// Declared for a configured installation, untrusted-external for an
// orphaned document.
func (d *Declarations) Ceiling(id, kind string, meta map[string]string) ingestd.Tier {
	in := d.installation(id, kind)
	if in == nil {
		return ingestd.TierUntrustedExternal
	}
	return declared(in, meta)
}

// InForce returns the tier in force of a document with the facts f: the
// most restrictive of its stored stamp and its Ceiling, and the same of
// its parent. It is never more trusting than the stored stamp.
func (d *Declarations) InForce(f ingestd.TierFacts) ingestd.Tier {
	t := MostRestrictive(f.Tier, d.Ceiling(f.Installation, f.SourceKind, f.Meta))
	if p := f.Parent; p != nil {
		t = MostRestrictive(t, p.Tier, d.Ceiling(p.Installation, p.SourceKind, p.Meta))
	}
	return t
}

// FactReader is the store half of Tiers (ingestd.Store has it).
type FactReader interface {
	TierFacts(ctx context.Context, docIDs, metaKeys []string) (map[string]ingestd.TierFacts, error)
}

// Tiers returns the tier in force of each document id the store holds,
// read with one TierFacts call. An id the store does not hold is absent:
// firewall.Decide counts it as untrusted.
func (d *Declarations) Tiers(ctx context.Context, r FactReader, docIDs []string) (map[string]ingestd.Tier, error) {
	out := make(map[string]ingestd.Tier, len(docIDs))
	if len(docIDs) == 0 {
		return out, nil
	}
	facts, err := r.TierFacts(ctx, docIDs, d.MetaKeys())
	if err != nil {
		return nil, fmt.Errorf("read tier facts: %w", err)
	}
	for id, f := range facts {
		out[id] = d.InForce(f)
	}
	return out, nil
}

// Reach narrows a search for documents whose tier in force is one of want
// to what a store can filter by: the configured installations that can
// hold such a document and the stored stamps it can have. The narrowing
// may keep more than want (a tier_by rule can only be judged per
// document), never less; the caller judges what it keeps with Tiers. A nil
// want, or one that holds untrusted-external (which every installation,
// orphaned or not, can hold), narrows nothing: both results are nil. An
// empty, non-nil installations means no installation can.
func (d *Declarations) Reach(want []ingestd.Tier) (installations []string, stored []ingestd.Tier) {
	if want == nil {
		return nil, nil
	}
	most := -1 // the most restrictive tier wanted
	for _, t := range want {
		if Untrusted(t) {
			return nil, nil
		}
		most = max(most, rank(t))
	}
	for _, t := range []ingestd.Tier{"", ingestd.TierTrustedInternal, ingestd.TierMachineGenerated} {
		if rank(t) <= most {
			stored = append(stored, t)
		}
	}
	installations = []string{}
	if d == nil {
		return installations, stored
	}
	for id, in := range d.insts {
		// The least restrictive tier the installation can stamp; a
		// document's tier in force is never less restrictive than it,
		// except undeclared, which keeps whatever was stored.
		least := rank(in.Tier)
		for _, byValue := range in.TierByMeta {
			for _, t := range byValue {
				least = min(least, rank(t))
			}
		}
		if vs := in.VerifiedSenders; vs != nil {
			least = min(least, rank(vs.Tier))
		}
		if least <= most {
			installations = append(installations, id)
		}
	}
	slices.Sort(installations)
	return installations, stored
}
