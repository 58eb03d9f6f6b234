package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/api/access"
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
	// assertionKey, when set, verifies the request's principal assertion.
	assertionKey []byte
}

// MinTokenBytes is the shortest bearer token accepted: 32 bytes, as
// `openssl rand -hex 32` (64 characters) or `head -c32 /dev/urandom |
// base64` (44) make comfortably.
const MinTokenBytes = 32

// minTokenVariety is how many different characters a token needs at
// least: a placeholder of repeated words ("changeme" five times) is long
// enough and no secret. A random hex token of 32 characters has fewer
// than 8 different ones with a chance below one in ten million.
const minTokenVariety = 8

// CheckToken returns EINVALID when tok cannot be a secret: shorter than
// MinTokenBytes, made of fewer than 8 different characters, or with
// white space around it (a request's token is trimmed, so it would never
// match). The message, a predicate ("is 5 bytes long; ..."), never
// contains the token.
func CheckToken(tok string) error {
	if strings.TrimSpace(tok) != tok {
		return ingestd.Errorf(ingestd.EINVALID, "begins or ends with white space, which a request's Authorization header cannot carry")
	}
	if n := len(tok); n < MinTokenBytes {
		unit := "bytes"
		if n == 1 {
			unit = "byte"
		}
		return ingestd.Errorf(ingestd.EINVALID, "is %d %s long; a bearer token needs at least %d (make one with `openssl rand -hex 32`)", n, unit, MinTokenBytes)
	}
	seen := map[rune]bool{}
	for _, r := range tok {
		seen[r] = true
	}
	if len(seen) < minTokenVariety {
		return ingestd.Errorf(ingestd.EINVALID, "has only %d different characters; a bearer token needs at least %d, as a random one has (make one with `openssl rand -hex 32`)", len(seen), minTokenVariety)
	}
	return nil
}

// newAuthenticator panics when a token fails CheckToken or two tokens
// share a value (the first listed would win, so the second's scopes and
// installations would never apply): cmd refuses both at start, naming
// the token's line, so here they are wiring errors.
func newAuthenticator(tokens []Token) *authenticator {
	a := &authenticator{}
	for i, t := range tokens {
		if err := CheckToken(t.Token); err != nil {
			panic(fmt.Sprintf("api: token %q %s", t.Name, ingestd.ErrorMessage(err)))
		}
		if t.User != "" && t.ActForUsers {
			panic(fmt.Sprintf("api: token %q is bound to %s and acts for users: it is one or the other", t.Name, t.User))
		}
		if t.AssertionKey != nil && (t.User != "" || t.ActForUsers || len(t.AssertionKey) < ingestd.MinAssertionKeyBytes) {
			panic(fmt.Sprintf("api: token %q: an assertion key of at least %d bytes, on a token neither bound to a person nor acting for users", t.Name, ingestd.MinAssertionKeyBytes))
		}
		p := access.Principal{Name: t.Name, Scopes: slices.Clone(t.Scopes), User: t.User, ActForUsers: t.ActForUsers, Groups: t.Groups}
		if t.Installations != nil {
			p.Installations = slices.Clone(t.Installations)
		}
		d := sha256.Sum256([]byte(t.Token))
		for _, prev := range a.tokens {
			if prev.digest == d {
				panic(fmt.Sprintf("api: token %q (Tokens[%d]) has the value of token %q", t.Name, i, prev.principal.Name))
			}
		}
		a.tokens = append(a.tokens, hashedToken{digest: d, principal: p, assertionKey: slices.Clone(t.AssertionKey)})
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
	if found.assertionKey != nil {
		// The person is the one the backend signed for, this request:
		// the token alone names no one.
		user, err := ingestd.VerifyAssertion(found.assertionKey, r.Header.Get(ingestd.AssertionHeader), time.Now())
		if err != nil {
			return nil, err
		}
		p.User = user
	}
	return &p, nil
}
