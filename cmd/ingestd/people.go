package main

import (
	"fmt"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api"
	"github.com/ingestd/ingestd/config"
)

// personToken adds the token's person and the groups to tok.
func personToken(c *config.Config, tok api.Token, t config.TokenConfig) api.Token {
	if t.User != "" {
		tok.User, _ = ingestd.UserPrincipal(t.User) // checked by checkPeople
	}
	tok.ActForUsers = t.ActForUsers
	tok.Groups = c.Membership()
	return tok
}

// assertionKey reads auth.tokens[i]'s assertion key from the variable
// assertion_key_env names: nil without the key, an error at the token's
// line when the variable is unset or shorter than the minimum.
func assertionKey(c *config.Config, e *env, i int) ([]byte, error) {
	name := c.Auth.Tokens[i].AssertionKeyEnv
	if name == "" {
		return nil, nil
	}
	v, ok := e.lookupEnv(name)
	v = strings.TrimSpace(v)
	switch {
	case !ok || v == "":
		return nil, c.TokenError(i, fmt.Sprintf("environment variable %s (assertion_key_env) is not set", name))
	case len(v) < ingestd.MinAssertionKeyBytes:
		return nil, c.TokenError(i, fmt.Sprintf("the value of %s (assertion_key_env) is %d bytes; an assertion key needs at least %d (make one with `openssl rand -hex 32`)", name, len(v), ingestd.MinAssertionKeyBytes))
	}
	return []byte(v), nil
}
