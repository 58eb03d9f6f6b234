package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash"
	"strconv"
	"strings"
	"time"
)

// Verification failures. They name what was wrong, never a value.
var (
	ErrNoSignature    = errors.New("missing signature")
	ErrBadSignature   = errors.New("signature does not match")
	ErrBadTimestamp   = errors.New("missing or malformed timestamp")
	ErrStaleTimestamp = errors.New("timestamp outside the tolerance window")
)

// claim is what a delivery's headers say about its body, checked before a
// byte of the body is read: the candidate signatures and what the MAC
// covers besides the body. A request whose headers cannot make a claim is
// refused without reading its body.
type claim struct {
	sigs   [][]byte // candidate HMAC-SHA256 values
	prefix []byte   // MAC'd before the body: "id.timestamp." for Standard Webhooks
	// sentAt is the signed Standard Webhooks timestamp; zero for GitHub.
	sentAt time.Time
}

// githubClaim parses an X-Hub-Signature-256 header ("sha256=<64 hex>").
func githubClaim(header string) (claim, error) {
	if header == "" {
		return claim{}, ErrNoSignature
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return claim{}, ErrBadSignature
	}
	sig, err := hex.DecodeString(hexSig)
	if err != nil || len(sig) != sha256.Size {
		return claim{}, ErrBadSignature
	}
	return claim{sigs: [][]byte{sig}}, nil
}

// standardClaim parses Standard Webhooks headers: the timestamp (unix
// seconds) must be within tol of now, and the signature header must hold
// at least one well-formed "v1,<base64>" signature (other versions are
// ignored).
func standardClaim(id, timestamp, header string, now time.Time, tol time.Duration) (claim, error) {
	if id == "" || header == "" {
		return claim{}, ErrNoSignature
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return claim{}, ErrBadTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tol || d < -tol {
		return claim{}, ErrStaleTimestamp
	}
	c := claim{prefix: []byte(id + "." + timestamp + "."), sentAt: time.Unix(ts, 0).UTC()}
	for _, f := range strings.Fields(header) {
		v, b64, ok := strings.Cut(f, ",")
		if !ok || v != "v1" {
			continue
		}
		if sig, err := base64.StdEncoding.DecodeString(b64); err == nil && len(sig) == sha256.Size {
			c.sigs = append(c.sigs, sig)
		}
	}
	if len(c.sigs) == 0 {
		return claim{}, ErrBadSignature
	}
	return c, nil
}

// macs computes the claim's MAC under every secret as the body streams
// through Write, so a body is verified without being held: the caller
// keeps it (bounded, see spool) only until verify answers.
type macs []hash.Hash

func (c claim) macs(secrets [][]byte) macs {
	m := make(macs, len(secrets))
	for i, s := range secrets {
		m[i] = hmac.New(sha256.New, s)
		m[i].Write(c.prefix)
	}
	return m
}

// Write feeds body bytes to every MAC; it never fails.
func (m macs) Write(p []byte) (int, error) {
	for _, h := range m {
		h.Write(p)
	}
	return len(p), nil
}

// verify returns nil when any secret's MAC equals any candidate signature,
// each comparison in constant time.
func (m macs) verify(c claim) error {
	for _, h := range m {
		sum := h.Sum(nil)
		for _, sig := range c.sigs {
			if hmac.Equal(sum, sig) {
				return nil
			}
		}
	}
	return ErrBadSignature
}

// VerifyGitHub checks an X-Hub-Signature-256 header ("sha256=<hex>")
// against the HMAC-SHA256 of the raw body under each secret, in constant
// time per comparison. It returns nil when any secret matches.
func VerifyGitHub(secrets [][]byte, body []byte, header string) error {
	c, err := githubClaim(header)
	if err != nil {
		return err
	}
	m := c.macs(secrets)
	m.Write(body)
	return m.verify(c)
}

// VerifyStandard checks Standard Webhooks headers: the timestamp (unix
// seconds) must be within tol of now, and one of the space-separated
// "v1,<base64>" signatures must be the HMAC-SHA256 of "id.timestamp.body"
// under one of the secrets. Other signature versions are ignored.
func VerifyStandard(secrets [][]byte, id, timestamp string, body []byte, header string, now time.Time, tol time.Duration) error {
	c, err := standardClaim(id, timestamp, header, now, tol)
	if err != nil {
		return err
	}
	m := c.macs(secrets)
	m.Write(body)
	return m.verify(c)
}
