package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"github.com/ingestd/ingestd"
)

// authenticator checks bearer tokens. Tokens are kept as SHA-256 digests
// and compared in constant time over the digests, so neither a token's
// content nor its length leaks through timing.
type authenticator struct {
	tokens []hashedToken
}

type hashedToken struct {
	name   string
	digest [sha256.Size]byte
	scopes []string
}

func newAuthenticator(tokens []Token) *authenticator {
	a := &authenticator{}
	for _, t := range tokens {
		a.tokens = append(a.tokens, hashedToken{name: t.Name, digest: sha256.Sum256([]byte(t.Token)), scopes: slices.Clone(t.Scopes)})
	}
	return a
}

// check returns nil when no tokens are configured or the request carries a
// token with scope; EUNAUTHORIZED without a known token, EFORBIDDEN when
// the token lacks the scope. Messages never contain the token.
func (a *authenticator) check(r *http.Request, scope string) error {
	if len(a.tokens) == 0 {
		return nil
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return ingestd.Errorf(ingestd.EUNAUTHORIZED, "a bearer token is required (Authorization: Bearer <token>)")
	}
	d := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	var found *hashedToken
	for i := range a.tokens {
		// Compare against every token so timing does not tell which matched.
		if subtle.ConstantTimeCompare(d[:], a.tokens[i].digest[:]) == 1 && found == nil {
			found = &a.tokens[i]
		}
	}
	if found == nil {
		return ingestd.Errorf(ingestd.EUNAUTHORIZED, "the bearer token is not valid")
	}
	if !slices.Contains(found.scopes, scope) {
		return ingestd.Errorf(ingestd.EFORBIDDEN, "token %q lacks the %q scope", found.name, scope)
	}
	return nil
}
