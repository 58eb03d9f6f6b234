package jobs

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"strings"

	"github.com/ingestd/ingestd"
)

// HeaderSignature carries a job's signature: "v1=" and the unpadded
// base64url HMAC-SHA256, under the job key, of the subject, the
// Nats-Msg-Id and the exact body bytes (each length-prefixed). Binding the
// subject means a signed job cannot be moved to another installation's
// subject; binding the message id means a captured job replayed with its
// own id is dropped by the dedupe window.
const HeaderSignature = "Ingestd-Signature"

// MinJobKeyBytes is the shortest job key Open accepts: 32 bytes, the
// output size of SHA-256 (`openssl rand -hex 32` prints 64 characters).
const MinJobKeyBytes = 32

// Reasons a worker refuses a job before any handler sees it. Each is the
// Ingestd-Reason header of the job's dead letter and, with spaces as
// underscores, the reason label of ingestd_jobs_refused_total.
const (
	ReasonUnsigned            = "unsigned"
	ReasonBadSignature        = "bad signature"
	ReasonUndecodable         = "undecodable"
	ReasonSubjectMismatch     = "subject mismatch"
	ReasonUnknownInstallation = "unknown installation"
)

const sigPrefix = "v1="

// keys are the job keys of a queue: the first signs and verifies, the rest
// only verify (a rotation in progress). No keys means signing is off.
type keys [][]byte

func (k keys) on() bool { return len(k) > 0 }

// sign returns the signature header value of a job, "" with signing off.
func (k keys) sign(subject, msgID string, data []byte) string {
	if !k.on() {
		return ""
	}
	return sigPrefix + base64.RawURLEncoding.EncodeToString(jobMAC(k[0], subject, msgID, data))
}

// verify returns nil if sig is a valid signature of the job under one of
// the keys, or the refusal reason: ReasonUnsigned for a missing header,
// ReasonBadSignature for anything else. Every key is tried (hmac.Equal
// compares in constant time).
func (k keys) verify(subject, msgID string, data []byte, sig string) string {
	if sig == "" {
		return ReasonUnsigned
	}
	raw, ok := strings.CutPrefix(sig, sigPrefix)
	if !ok {
		return ReasonBadSignature
	}
	got, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || len(got) != sha256.Size {
		return ReasonBadSignature
	}
	valid := false
	for _, key := range k {
		if hmac.Equal(got, jobMAC(key, subject, msgID, data)) {
			valid = true
		}
	}
	if !valid {
		return ReasonBadSignature
	}
	return ""
}

// jobMAC is HMAC-SHA256(key, "ingestd-job-v1" | len subject | subject |
// len msgID | msgID | body), lengths as 8-byte big-endian integers, so no
// two different (subject, id, body) triples share an input.
func jobMAC(key []byte, subject, msgID string, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("ingestd-job-v1"))
	writeField(m, []byte(subject))
	writeField(m, []byte(msgID))
	m.Write(data)
	return m.Sum(nil)
}

func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// checkKeys returns EINVALID for a key too short to be a secret or for
// accepted keys without a signing key.
func checkKeys(sign []byte, accept [][]byte) (keys, error) {
	if len(sign) == 0 {
		if len(accept) > 0 {
			return nil, ingestd.Errorf(ingestd.EINVALID, "accepted job keys need a job key to sign with")
		}
		return nil, nil
	}
	k := keys{sign}
	for _, a := range accept {
		if len(a) > 0 {
			k = append(k, a)
		}
	}
	for i, key := range k {
		if len(key) < MinJobKeyBytes {
			what := "the job key"
			if i > 0 {
				what = "an accepted job key"
			}
			return nil, ingestd.Errorf(ingestd.EINVALID, "%s is %d bytes; use at least %d random bytes (e.g. `openssl rand -hex 32`)", what, len(key), MinJobKeyBytes)
		}
	}
	return k, nil
}
