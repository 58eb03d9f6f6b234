package mail

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
)

// authorFields are the header fields Fingerprint covers: what the author
// wrote and how the body is to be read. Everything else in a header is
// added on the way (Received, Return-Path, Delivered-To, DKIM-Signature,
// ARC-*, Authentication-Results, X-*, an mbox Status) or may be rewritten
// by a list (Sender, Reply-To, List-*), and differs between two deliveries
// of one message.
var authorFields = []string{
	"from", "to", "cc", "date", "subject", "in-reply-to", "references",
	"content-type", "content-transfer-encoding",
}

// Fingerprint is the content identity of a raw message: the first 128 bits,
// in hex, of a SHA-256 over the author's header fields (From, To, Cc, Date,
// Subject, In-Reply-To, References, and Content-Type and
// Content-Transfer-Encoding, which say how the body reads; each occurrence,
// unfolded, its whitespace collapsed, names case-insensitive) and the body
// bytes after the header, line ends made "\n" and trailing whitespace at
// the end dropped. The body is hashed as sent, so its text parts and
// attachments are covered byte for byte.
//
// Two deliveries of one message (another Received chain, another
// Delivered-To, a copy in a second mailbox) have the same fingerprint; two
// messages that differ in anything their author wrote do not, even when
// they carry the same Message-ID. A relay that re-encodes the body (8-bit
// to quoted-printable) or a list that tags the subject or appends a
// footer makes a different fingerprint: a second document, never a lost
// one.
//
// It reads the bytes only, never the parsed text, so a change to how this
// package renders mail never changes a message's identity.
func Fingerprint(raw []byte) string {
	p := &parser{}
	h, body, ok := p.readHeader(raw, true)
	if !ok {
		h, body = nil, raw
	}
	sum := sha256.New()
	write := func(b []byte) {
		sum.Write([]byte(strconv.Itoa(len(b))))
		sum.Write([]byte{':'})
		sum.Write(b)
	}
	for _, k := range authorFields {
		for _, f := range h {
			if f.key == k {
				write([]byte(k + ":" + strings.Join(strings.Fields(f.value), " ")))
			}
		}
	}
	body = bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	write(bytes.TrimRight(body, " \t\r\n"))
	return hex.EncodeToString(sum.Sum(nil)[:16])
}
