package ingestd

import (
	"slices"
	"strings"
)

// Principal names a person or a group of people who may read a
// document: "user:alice@example.com", "group:hr". Everyone, "*", stands
// for any person (a public document). A principal never holds white
// space.
type Principal string

// Everyone is the principal of a public document: any person may read it.
const Everyone Principal = "*"

// Kinds of principal, the part before the colon.
const (
	PrincipalUser  = "user"
	PrincipalGroup = "group"
)

// ParsePrincipal returns s as a principal: "user:<name>", "group:<name>"
// or "*". A bare name with an @ ("alice@example.com") is a user. It
// returns EINVALID for anything else: an empty name, another kind, white
// space.
func ParsePrincipal(s string) (Principal, error) {
	s = strings.TrimSpace(s)
	if s == string(Everyone) {
		return Everyone, nil
	}
	kind, name, ok := strings.Cut(s, ":")
	if !ok && strings.Contains(s, "@") {
		kind, name, ok = PrincipalUser, s, true
	}
	switch {
	case !ok:
		return "", Errorf(EINVALID, "principal %q is not user:<name> or group:<name>", s)
	case kind != PrincipalUser && kind != PrincipalGroup:
		return "", Errorf(EINVALID, "principal %q is of kind %q, not user or group", s, kind)
	case name == "" || strings.ContainsFunc(name, isSpace):
		return "", Errorf(EINVALID, "principal %q needs a name without white space", s)
	}
	return Principal(kind + ":" + name), nil
}

// UserPrincipal returns the user principal of a login or address, or
// EINVALID when it is not one (see ParsePrincipal).
func UserPrincipal(name string) (Principal, error) {
	if !strings.Contains(name, ":") {
		name = PrincipalUser + ":" + strings.TrimSpace(name)
	}
	p, err := ParsePrincipal(name)
	if err != nil {
		return "", err
	}
	if !p.IsUser() {
		return "", Errorf(EINVALID, "principal %q is not a user", name)
	}
	return p, nil
}

// IsUser reports whether p names one person.
func (p Principal) IsUser() bool { return strings.HasPrefix(string(p), PrincipalUser+":") }

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

// Readers is who may read a document. The zero value is unmapped: the
// document's readers could not be determined (a shared mailbox on a
// server without ACLs, a source API that failed, a document stored
// before readers existed), and no person may read it; only a service
// view (a token declared service, the operator) does. A mapped
// document is read by the persons its Principals name, by anyone when
// they hold Everyone, by no person when they are empty.
type Readers struct {
	Mapped     bool
	Principals []Principal // sorted, without duplicates (Normal)
}

// Public is the readers of a document anyone may read.
func Public() Readers { return Readers{Mapped: true, Principals: []Principal{Everyone}} }

// ReadersOf is the mapped readers ps, normalised.
func ReadersOf(ps ...Principal) Readers { return Readers{Mapped: true, Principals: ps}.Normal() }

// Normal returns r with its principals sorted and without duplicates;
// an unmapped r has none.
func (r Readers) Normal() Readers {
	if !r.Mapped {
		return Readers{}
	}
	ps := slices.Clone(r.Principals)
	slices.Sort(ps)
	return Readers{Mapped: true, Principals: slices.Compact(ps)}
}

// IsPublic reports whether anyone may read the document.
func (r Readers) IsPublic() bool { return r.Mapped && slices.Contains(r.Principals, Everyone) }

// Equal reports whether r and o admit the same principals.
func (r Readers) Equal(o Readers) bool {
	a, b := r.Normal(), o.Normal()
	return a.Mapped == b.Mapped && slices.Equal(a.Principals, b.Principals)
}

// Intersect returns who may read both: the readers of a document derived
// from another (an attachment, a reply) are the intersection of its own
// and its parent's, as its tier is the most restrictive of both.
// Unmapped on either side is unmapped; Everyone on one side leaves the
// other's.
func (r Readers) Intersect(o Readers) Readers {
	switch {
	case !r.Mapped || !o.Mapped:
		return Readers{}
	case r.IsPublic():
		return o.Normal()
	case o.IsPublic():
		return r.Normal()
	}
	var out []Principal
	for _, p := range r.Principals {
		if slices.Contains(o.Principals, p) {
			out = append(out, p)
		}
	}
	return ReadersOf(out...)
}

// Values of Readers.State and of the provenance report's reader counts.
const (
	ReadersUnmapped   = "unmapped"
	ReadersPublic     = "public"
	ReadersRestricted = "restricted"
)

// State says which of unmapped, public and restricted r is.
func (r Readers) State() string {
	switch {
	case !r.Mapped:
		return ReadersUnmapped
	case r.IsPublic():
		return ReadersPublic
	}
	return ReadersRestricted
}

// Encode is r as the stores keep it: ok=false for unmapped (NULL), else
// the sorted principals joined by single spaces ("" for none).
func (r Readers) Encode() (s string, ok bool) {
	if !r.Mapped {
		return "", false
	}
	n := r.Normal()
	parts := make([]string, len(n.Principals))
	for i, p := range n.Principals {
		parts[i] = string(p)
	}
	return strings.Join(parts, " "), true
}

// DecodeReaders is the inverse of Encode.
func DecodeReaders(s string, ok bool) Readers {
	if !ok {
		return Readers{}
	}
	var ps []Principal
	for _, f := range strings.Fields(s) {
		ps = append(ps, Principal(f))
	}
	return ReadersOf(ps...)
}

// Reader is the person a request reads for: the user and every group
// they are in, as the one scope check (api/access) resolved them. A nil
// *Reader is the service view, which reads every document, unmapped ones
// included; it is never what a request for a person gets.
type Reader struct {
	User Principal
	// Principals are User, the groups it is in and Everyone, sorted.
	Principals []Principal
}

// NewReader returns the reader for user, a member of groups.
func NewReader(user Principal, groups ...Principal) *Reader {
	ps := append([]Principal{user, Everyone}, groups...)
	slices.Sort(ps)
	return &Reader{User: user, Principals: slices.Compact(ps)}
}

// May reports whether the reader may read a document with readers rs: a
// nil reader (the service view) may read every document; a person, only
// a mapped one that names them, one of their groups, or Everyone.
func (r *Reader) May(rs Readers) bool {
	if r == nil {
		return true
	}
	if !rs.Mapped {
		return false
	}
	for _, p := range rs.Principals {
		if slices.Contains(r.Principals, p) {
			return true
		}
	}
	return false
}

// Groups is the configured group membership: each group's members,
// users or other groups. A user is in a group when it is a member, or a
// member of a group that is (at any depth; cycles are harmless).
type Groups map[Principal][]Principal

// Reader returns the reader for user with every group it is in.
func (g Groups) Reader(user Principal) *Reader {
	in := map[Principal]bool{}
	frontier := []Principal{user}
	for len(frontier) > 0 {
		var next []Principal
		for grp, members := range g {
			if in[grp] {
				continue
			}
			for _, m := range members {
				if slices.Contains(frontier, m) {
					in[grp] = true
					next = append(next, grp)
					break
				}
			}
		}
		frontier = next
	}
	var groups []Principal
	for grp := range in {
		groups = append(groups, grp)
	}
	return NewReader(user, groups...)
}
