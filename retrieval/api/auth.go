package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"slices"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/retrieval/access"
)

// authenticator turns a request's bearer token into the caller's
// access.Principal. It decides who is calling, never what they may do:
// package access does that, in one place, for every route. Tokens are
// kept as SHA-256 digests and compared in constant time over the digests,
// so neither a token's content nor its length leaks through timing.
type authenticator struct {
	tokens []hashedToken
}

type hashedToken struct {
	digest    [sha256.Size]byte
	principal access.Principal
}

func newAuthenticator(tokens []Token) *authenticator {
	a := &authenticator{}
	for _, t := range tokens {
		p := access.Principal{Name: t.Name, Scopes: slices.Clone(t.Scopes)}
		if t.Installations != nil {
			p.Installations = slices.Clone(t.Installations)
		}
		a.tokens = append(a.tokens, hashedToken{digest: sha256.Sum256([]byte(t.Token)), principal: p})
	}
	return a
}

// principal returns who sent r: the operator when no tokens are
// configured (the server then answers loopback hosts only, see guard),
// the token's principal otherwise. EUNAUTHORIZED without a known token.
// Messages never contain the token.
func (a *authenticator) principal(r *http.Request) (*access.Principal, error) {
	if len(a.tokens) == 0 {
		return access.Operator(), nil
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return nil, ingestd.Errorf(ingestd.EUNAUTHORIZED, "a bearer token is required (Authorization: Bearer <token>)")
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
		return nil, ingestd.Errorf(ingestd.EUNAUTHORIZED, "the bearer token is not valid")
	}
	p := found.principal
	return &p, nil
}
