package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
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

// VerifyGitHub checks an X-Hub-Signature-256 header ("sha256=<hex>")
// against the HMAC-SHA256 of the raw body under each secret, in constant
// time per comparison. It returns nil when any secret matches.
func VerifyGitHub(secrets [][]byte, body []byte, header string) error {
	if header == "" {
		return ErrNoSignature
	}
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil || len(got) != sha256.Size {
		return ErrBadSignature
	}
	for _, s := range secrets {
		m := hmac.New(sha256.New, s)
		m.Write(body)
		if hmac.Equal(m.Sum(nil), got) {
			return nil
		}
	}
	return ErrBadSignature
}

// VerifyStandard checks Standard Webhooks headers: the timestamp (unix
// seconds) must be within tol of now, and one of the space-separated
// "v1,<base64>" signatures must be the HMAC-SHA256 of "id.timestamp.body"
// under one of the secrets. Other signature versions are ignored.
func VerifyStandard(secrets [][]byte, id, timestamp string, body []byte, header string, now time.Time, tol time.Duration) error {
	if id == "" || header == "" {
		return ErrNoSignature
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tol || d < -tol {
		return ErrStaleTimestamp
	}
	var sigs [][]byte
	for _, f := range strings.Fields(header) {
		v, b64, ok := strings.Cut(f, ",")
		if !ok || v != "v1" {
			continue
		}
		if sig, err := base64.StdEncoding.DecodeString(b64); err == nil && len(sig) == sha256.Size {
			sigs = append(sigs, sig)
		}
	}
	if len(sigs) == 0 {
		return ErrBadSignature
	}
	for _, s := range secrets {
		m := hmac.New(sha256.New, s)
		m.Write([]byte(id))
		m.Write([]byte{'.'})
		m.Write([]byte(timestamp))
		m.Write([]byte{'.'})
		m.Write(body)
		want := m.Sum(nil)
		for _, sig := range sigs {
			if hmac.Equal(want, sig) {
				return nil
			}
		}
	}
	return ErrBadSignature
}
