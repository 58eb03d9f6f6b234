package config

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/ingestd/ingestd"
)

// People in the configuration: who may read each installation's
// documents, the groups people are in, and whom each token's requests
// read for.
//
//	groups:
//	  hr: [user:alice@example.com, user:bob@example.com]
//	installations:
//	  - id: handbook
//	    kind: files
//	    readers: [group:staff]           # or [everyone]
//	    readers_by_path:
//	      - {glob: "hr/*", readers: [group:hr]}
//	auth:
//	  tokens:
//	    - {name: alice-laptop, token_env: T1, scopes: [retrieve], user: alice@example.com}
//	    - {name: chat, token_env: T2, scopes: [retrieve], act_for_users: true}
//	    - {name: ops, token_env: T3, scopes: [retrieve, admin], service: true}
//
// An installation without readers leaves its documents unmapped (no
// person reads them) unless its connector mirrors the source's own; a
// url installation is public unless it declares readers. Once people are
// configured (groups, or readers on any installation), every token must
// say whom it reads for: user, act_for_users or service.

// decodeReaders reads an installation's readers or readers_by_path key.
func (c *Config) decodeReaders(ic *InstallationConfig, k, v *yaml.Node) error {
	fail := func(line int, format string, args ...any) error {
		return &Error{Path: c.path, Line: line, Msg: fmt.Sprintf("installation %q: %s: ", ic.ID, k.Value) + fmt.Sprintf(format, args...)}
	}
	if k.Value == "readers" {
		var names []string
		if err := v.Decode(&names); err != nil {
			return fail(v.Line, "want a list of principals (user:<address>, group:<name>, everyone)")
		}
		r, err := parseReaders(names)
		if err != nil {
			return fail(v.Line, "%s", ingestd.ErrorMessage(err))
		}
		ic.Readers = &r
		return nil
	}
	var rules []struct {
		Glob    string   `yaml:"glob"`
		Readers []string `yaml:"readers"`
	}
	if err := v.Decode(&rules); err != nil {
		return fail(v.Line, "want a list of {glob, readers}")
	}
	for _, rule := range rules {
		if _, err := path.Match(rule.Glob, ""); err != nil || rule.Glob == "" {
			return fail(v.Line, "glob %q is not a path pattern", rule.Glob)
		}
		r, err := parseReaders(rule.Readers)
		if err != nil {
			return fail(v.Line, "glob %q: %s", rule.Glob, ingestd.ErrorMessage(err))
		}
		ic.ReadersByPath = append(ic.ReadersByPath, ingestd.PathReaders{Glob: rule.Glob, Readers: r})
	}
	return nil
}

// parseReaders reads a list of principals; "everyone" (or "*") is
// ingestd.Everyone.
func parseReaders(names []string) (ingestd.Readers, error) {
	var ps []ingestd.Principal
	for _, n := range names {
		if strings.EqualFold(strings.TrimSpace(n), "everyone") {
			n = string(ingestd.Everyone)
		}
		p, err := ingestd.ParsePrincipal(n)
		if err != nil {
			return ingestd.Readers{}, err
		}
		ps = append(ps, p)
	}
	return ingestd.ReadersOf(ps...), nil
}

// readers is the installation's declared readers: its readers key; for a
// url installation without one, everyone (a page on the web is public);
// else unmapped.
func (ic InstallationConfig) readers() ingestd.Readers {
	switch {
	case ic.Readers != nil:
		return *ic.Readers
	case ic.Kind == "url":
		return ingestd.Public()
	}
	return ingestd.Readers{}
}

// peopleConfigured reports whether the configuration names people:
// groups, or readers on an installation.
func (c *Config) peopleConfigured() bool {
	if len(c.Groups) > 0 {
		return true
	}
	return slices.ContainsFunc(c.Installations, func(ic InstallationConfig) bool { return ic.Readers != nil || len(ic.ReadersByPath) > 0 })
}

// checkPeople checks groups and each token's person: at most one of
// user, act_for_users and service, a user that is one, and, once people
// are configured, one of the three on every token.
func (c *Config) checkPeople() error {
	for g, members := range c.Groups {
		if _, err := ingestd.ParsePrincipal("group:" + g); err != nil {
			return &Error{Path: c.path, Line: c.Line("groups"), Msg: fmt.Sprintf("groups: %q: %s", g, ingestd.ErrorMessage(err))}
		}
		for _, m := range members {
			if _, err := ingestd.ParsePrincipal(m); err != nil || m == string(ingestd.Everyone) {
				return &Error{Path: c.path, Line: c.Line("groups"), Msg: fmt.Sprintf("groups: %s: member %q is not user:<address> or group:<name>", g, m)}
			}
		}
	}
	people := c.peopleConfigured()
	for i, t := range c.Auth.Tokens {
		n := 0
		for _, set := range []bool{t.User != "", t.ActForUsers, t.Service, t.AssertionKeyEnv != ""} {
			if set {
				n++
			}
		}
		switch {
		case n > 1:
			return c.TokenError(i, "user, act_for_users, assertion_key_env and service exclude each other: a token reads for one person, for the person each request names (trusted, or signed), or for no one in particular")
		case n == 0 && people:
			return c.TokenError(i, "people are configured (groups or readers), so the token must say whom it reads for: user: <address>, act_for_users: true, assertion_key_env: <variable>, or service: true (the operator's view, unmapped documents included)")
		}
		if t.User != "" {
			if _, err := ingestd.UserPrincipal(t.User); err != nil {
				return c.TokenError(i, "user: "+ingestd.ErrorMessage(err))
			}
		}
	}
	return nil
}

// Membership is the configured group membership as the root's vocabulary.
func (c *Config) Membership() ingestd.Groups {
	if len(c.Groups) == 0 {
		return nil
	}
	out := ingestd.Groups{}
	for g, members := range c.Groups {
		for _, m := range members {
			p, _ := ingestd.ParsePrincipal(m) // checked by checkPeople
			out[ingestd.Principal("group:"+g)] = append(out[ingestd.Principal("group:"+g)], p)
		}
	}
	return out
}
