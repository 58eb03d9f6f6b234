package github

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v62/github"

	"github.com/ingestd/ingestd"
)

// visibility is the repository's visibility, from its private flag when
// the API gave no visibility field.
func visibility(r *gh.Repository) string {
	if v := r.GetVisibility(); v != "" {
		return v
	}
	if r.GetPrivate() {
		return "private"
	}
	return "public"
}

// Values of a repository cursor's Readers: how its items were last put.
const (
	readersPublic   = "public"   // everyone
	readersDeclared = "declared" // the installation's declaration (no mirror configured)
	readersUnmapped = "unmapped" // the mirror failed: no person
	readersMirror   = "mirror:"  // + a digest of the mirrored principals
)

// mirrors reports whether a private repository's collaborators and teams
// are mirrored: only once the owner said who a login is.
func (s *Source) mirrors() bool { return len(s.cfg.Logins) > 0 || s.cfg.LoginDomain != "" }

// readersOf is who may read a repository's items, and the state that
// names the choice for the cursor (a change lists the repository again
// whole, so every stored item takes the new readers). A public
// repository: everyone. A private or internal one: with a mirror
// configured, its collaborators and teams as the API lists them now —
// unmapped (no person) when they cannot be listed, never the previous
// set and never everyone; without one nil, which leaves the readers the
// owner declared for the installation (unmapped when none).
func (s *Source) readersOf(ctx context.Context, pass ingestd.Pass, r repoCursor) (readers *ingestd.Readers, state string, err error) {
	switch {
	case r.Visibility == "public":
		p := ingestd.Public()
		return &p, readersPublic, nil
	case !s.mirrors():
		return nil, readersDeclared, nil
	}
	rs, err := s.mirror(ctx, r.FullName)
	if err != nil {
		if fatal(err) {
			return nil, "", err
		}
		// Fail closed: the items are put, read by no person, and the
		// pass says why.
		pass.Fail(r.FullName+" (readers)", err)
		return &ingestd.Readers{}, readersUnmapped, nil
	}
	return &rs, readersMirror + digest(rs), nil
}

// mirror lists the repository's collaborators (affiliation all: direct,
// outside, and through teams and the organisation's base permission)
// with read access, as people, and its teams, as groups.
func (s *Source) mirror(ctx context.Context, name string) (ingestd.Readers, error) {
	var ps []ingestd.Principal
	per := strconv.Itoa(s.cfg.PerPage)
	var users []*gh.User
	if err := list(ctx, s, "repos/"+name+"/collaborators?affiliation=all&per_page="+per, &users); err != nil {
		return ingestd.Readers{}, fmt.Errorf("list collaborators of %s: %w", name, err)
	}
	left := 0
	for _, u := range users {
		if p := u.GetPermissions(); p != nil && !p["pull"] {
			continue
		}
		if p, ok := s.person(u.GetLogin()); ok {
			ps = append(ps, p)
		} else {
			left++
		}
	}
	var teams []*gh.Team
	if err := list(ctx, s, "repos/"+name+"/teams?per_page="+per, &teams); err != nil {
		return ingestd.Readers{}, fmt.Errorf("list teams of %s: %w", name, err)
	}
	owner, _, _ := strings.Cut(name, "/")
	for _, t := range teams {
		if slug := t.GetSlug(); slug != "" {
			if p, err := ingestd.ParsePrincipal("group:github:" + owner + "/" + slug); err == nil {
				ps = append(ps, p)
			}
		}
	}
	if left > 0 {
		s.log.Info("github: collaborators without a person left out of the readers", "installation", s.installation, "repository", name, "collaborators", left)
	}
	return ingestd.ReadersOf(ps...), nil
}

// person is the principal of a login: Logins' entry, else the login at
// LoginDomain.
func (s *Source) person(login string) (ingestd.Principal, bool) {
	if login == "" {
		return "", false
	}
	if v, ok := s.cfg.Logins[login]; ok {
		p, err := ingestd.UserPrincipal(v)
		return p, err == nil
	}
	if s.cfg.LoginDomain == "" {
		return "", false
	}
	p, err := ingestd.UserPrincipal(strings.ToLower(login) + "@" + s.cfg.LoginDomain)
	return p, err == nil
}

// list reads every page of a listing into out, following Link rel=next.
func list[T any](ctx context.Context, s *Source, first string, out *[]T) error {
	read := map[string]bool{}
	for next := first; next != ""; {
		if s.api.again(read, next) {
			return fmt.Errorf("Link rel=next leads back to %s, a page already read", next)
		}
		var page []T
		resp, err := s.api.get(ctx, next, "", &page)
		if err != nil {
			return err
		}
		*out = append(*out, page...)
		next = resp.next
	}
	return nil
}

// digest names a set of readers in a cursor.
func digest(r ingestd.Readers) string {
	enc, _ := r.Encode()
	sum := sha256.Sum256([]byte(enc))
	return hex.EncodeToString(sum[:8])
}

// readersPass puts every item with the repository's readers.
type readersPass struct {
	ingestd.Pass
	readers *ingestd.Readers
}

func (p readersPass) Put(ctx context.Context, it ingestd.Item) error {
	it.Readers = p.readers
	return p.Pass.Put(ctx, it)
}
