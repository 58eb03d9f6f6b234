package ingestd

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// A principal assertion is how a chat backend says which person a request
// is for without being trusted to name anyone: it signs the person and an
// expiry with a key it shares with ingestd (HMAC-SHA256), and sends the
// result in the AssertionHeader of each request beside its bearer token.
// A token configured with the key reads as the person its request's
// assertion names, and refuses a request without a valid one. Its form:
//
//	v1.<base64url(principal)>.<expiry, Unix seconds>.<base64url(mac)>
//
// mac = HMAC-SHA256(key, "ingestd-assertion-v1\x00" principal "\x00" expiry).
// The principal is a user ("user:alice@example.com"); a group or everyone
// is refused. An assertion is good until its expiry, at most
// MaxAssertionLifetime ahead of the server's clock (with AssertionSkew
// allowed either way), so it can be replayed within that window by
// whoever sees it, like the bearer token beside it: both travel over
// the same TLS connection.

// AssertionHeader is the request header that carries an assertion.
const AssertionHeader = "Ingestd-Principal-Assertion"

// Bounds of an assertion's expiry, against the verifying server's clock.
const (
	MaxAssertionLifetime = 15 * time.Minute
	AssertionSkew        = 30 * time.Second
)

// MinAssertionKeyBytes is the shortest key an assertion may be signed
// with.
const MinAssertionKeyBytes = 32

const assertionV1 = "v1"

// SignAssertion returns the assertion that principal (a user) is the
// person of a request, good until expires. It returns EINVALID for a key
// shorter than MinAssertionKeyBytes or a principal that is not a user.
func SignAssertion(key []byte, principal string, expires time.Time) (string, error) {
	if len(key) < MinAssertionKeyBytes {
		return "", Errorf(EINVALID, "an assertion key needs at least %d bytes; this one has %d", MinAssertionKeyBytes, len(key))
	}
	p, err := UserPrincipal(principal)
	if err != nil {
		return "", err
	}
	exp := strconv.FormatInt(expires.Unix(), 10)
	return strings.Join([]string{assertionV1, base64.RawURLEncoding.EncodeToString([]byte(p)), exp,
		base64.RawURLEncoding.EncodeToString(assertionMAC(key, string(p), exp))}, "."), nil
}

// VerifyAssertion returns the person an assertion names when key signed
// it and it has not expired at now. Every refusal is EUNAUTHORIZED and
// says why without repeating the assertion.
func VerifyAssertion(key []byte, assertion string, now time.Time) (Principal, error) {
	refuse := func(why string) (Principal, error) {
		return "", Errorf(EUNAUTHORIZED, "the %s header %s", AssertionHeader, why)
	}
	parts := strings.Split(strings.TrimSpace(assertion), ".")
	if assertion == "" {
		return refuse("is required: this token reads as the person a signed assertion names")
	}
	if len(parts) != 4 || parts[0] != assertionV1 {
		return refuse("is not an assertion of the form v1.<principal>.<expiry>.<mac>")
	}
	name, err1 := base64.RawURLEncoding.DecodeString(parts[1])
	mac, err2 := base64.RawURLEncoding.DecodeString(parts[3])
	exp, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || parts[2] != strconv.FormatInt(exp, 10) {
		return refuse("is not an assertion of the form v1.<principal>.<expiry>.<mac>")
	}
	// The MAC first: nothing an unsigned assertion says is looked at.
	if !hmac.Equal(mac, assertionMAC(key, string(name), parts[2])) {
		return refuse("is not signed with this token's assertion key")
	}
	switch at := time.Unix(exp, 0); {
	case now.After(at.Add(AssertionSkew)):
		return refuse("expired at " + at.UTC().Format(time.RFC3339))
	case at.After(now.Add(MaxAssertionLifetime + AssertionSkew)):
		return refuse("expires more than " + MaxAssertionLifetime.String() + " from now; sign assertions for a short time")
	}
	p, err := UserPrincipal(string(name))
	if err != nil || string(p) != string(name) {
		return refuse("names no user (user:<address>)")
	}
	return p, nil
}

func assertionMAC(key []byte, principal, exp string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("ingestd-assertion-v1\x00" + principal + "\x00" + exp))
	return m.Sum(nil)
}
