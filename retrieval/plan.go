// Plan: a request validated into the scopes an answer ranks under.

package retrieval

import (
	"slices"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/provenance"
)

// tierSet is a set of tiers in force; nil means any.
type tierSet []ingestd.Tier

func (ts tierSet) has(t ingestd.Tier) bool { return ts == nil || slices.Contains(ts, t) }

// everyTier is every tier in force a document can have: undeclared and
// the declared tiers (provenance owns the list).
var everyTier = append(tierSet{""}, provenance.Tiers...)

// scope is a narrowing of what may be served: the store's filter, the
// tiers in force to keep among what the store returns (nil keeps all),
// and whether nothing can match.
type scope struct {
	filter ingestd.Filter
	tiers  tierSet
	empty  bool
}

// scope narrows to the installations and source kinds (empty: all) and
// the tiers in force (nil: all). The store filters by what
// Declarations.Reach says such documents can be; what it returns is judged
// by tier in force.
func (s *Service) scope(insts, kinds []string, tiers tierSet) scope {
	sc := scope{filter: ingestd.Filter{Installations: insts, SourceKinds: kinds}, tiers: tiers}
	if tiers == nil {
		return sc
	}
	reach, stored := s.decl.Reach(tiers)
	sc.filter.Tiers = stored
	if reach != nil {
		if len(insts) > 0 {
			reach = slices.DeleteFunc(slices.Clone(insts), func(id string) bool { return !slices.Contains(reach, id) })
		}
		sc.filter.Installations = reach
		sc.empty = len(reach) == 0
	}
	sc.empty = sc.empty || len(tiers) == 0
	return sc
}

// plan is a validated request.
type plan struct {
	query    string
	topK     int
	asked    scope // the caller's narrowing
	served   scope // what may be served: asked, narrowed by exclude_untrusted
	trusted  scope // asked without untrusted tiers: what exclude_untrusted serves
	expand   bool
	rejected bool
	exclude  bool
	auto     bool // grounding auto, without exclude_untrusted (which leaves it nothing to choose)
	view     bool // trusted_view
}

func (s *Service) plan(r ingestd.RetrieveRequest) (*plan, error) {
	q := strings.TrimSpace(r.Query)
	if q == "" {
		return nil, ingestd.Errorf(ingestd.EINVALID, "query is empty")
	}
	if len(q) > ingestd.MaxQueryBytes {
		return nil, ingestd.Errorf(ingestd.EINVALID, "query is %d bytes, at most %d are allowed", len(q), ingestd.MaxQueryBytes)
	}
	p := &plan{query: q, topK: r.TopK, expand: r.Expand == nil || *r.Expand,
		rejected: r.IncludeRejected == nil || *r.IncludeRejected, exclude: r.ExcludeUntrusted,
		view: r.TrustedView}
	switch g := strings.TrimSpace(r.Grounding); g {
	case "", ingestd.GroundingAll:
	case ingestd.GroundingAuto:
		p.auto = !p.exclude
	default:
		return nil, ingestd.Errorf(ingestd.EINVALID, "grounding %q is not one of %s, %s", r.Grounding, ingestd.GroundingAll, ingestd.GroundingAuto)
	}
	switch {
	case p.topK == 0:
		p.topK = ingestd.DefaultTopK
	case p.topK < 0 || p.topK > ingestd.MaxTopK:
		return nil, ingestd.Errorf(ingestd.EINVALID, "top_k must be a whole number from 1 to %d, not %d", ingestd.MaxTopK, r.TopK)
	}
	var tiers tierSet
	for _, t := range r.Tiers {
		t = strings.TrimSpace(t)
		switch {
		case t == "" || t == provenance.Undeclared:
			tiers = append(tiers, "")
		case provenance.Valid(ingestd.Tier(t)):
			tiers = append(tiers, ingestd.Tier(t))
		default:
			return nil, ingestd.Errorf(ingestd.EINVALID, "tier %q is not one of %s, %s", t, provenance.ValidList(), provenance.Undeclared)
		}
	}
	insts, kinds := nonEmpty(r.Installations), nonEmpty(r.SourceKinds)
	if err := s.checkInstallations(insts); err != nil {
		return nil, err
	}
	p.asked = s.scope(insts, kinds, tiers)
	p.asked.filter.Reader = r.Reader // every block's search reads as the person
	p.served = p.asked
	if p.exclude || p.auto || p.view {
		keep, from := tierSet{}, tiers
		if from == nil {
			from = everyTier
		}
		for _, t := range from {
			if !provenance.Untrusted(t) {
				keep = append(keep, t)
			}
		}
		p.trusted = s.scope(insts, kinds, keep)
		p.trusted.filter.Reader = r.Reader
	}
	if p.exclude {
		p.served = p.trusted
	}
	return p, nil
}

// checkInstallations refuses a filter that names an installation that is
// not configured: a typo would otherwise read as an installation with
// nothing relevant in it.
func (s *Service) checkInstallations(ids []string) error {
	for _, id := range ids {
		if slices.Contains(s.ids, id) {
			continue
		}
		if len(s.ids) == 0 {
			return ingestd.Errorf(ingestd.EINVALID, "installation %q is not configured (none is)", id)
		}
		return ingestd.Errorf(ingestd.EINVALID, "installation %q is not configured (configured: %s)", id, strings.Join(s.ids, ", "))
	}
	return nil
}

func installationIDs(insts []ingestd.Installation) []string {
	ids := make([]string, len(insts))
	for i, inst := range insts {
		ids[i] = inst.ID
	}
	return ids
}

func nonEmpty(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
