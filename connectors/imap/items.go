package imap

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/mail"
)

// MessageExternalID is the external id of the first content met with the
// Message-ID, normalised: angle brackets and spaces removed, the domain
// part lower-cased, then written as "<local@domain>". Every mailbox of an
// installation, and the In-Reply-To and References of every other
// message, name a message the same way, so a thread's links resolve and a
// message in two mailboxes (or seen again after a UIDVALIDITY change) is
// one document. Another content with the same Message-ID gets a
// fingerprint after it (see identities). "" for an empty id.
func MessageExternalID(messageID string) string {
	id := strings.TrimSpace(messageID)
	id = strings.TrimPrefix(id, "<")
	id = strings.TrimSuffix(id, ">")
	id = strings.Join(strings.Fields(id), "")
	if id == "" {
		return ""
	}
	if at := strings.LastIndexByte(id, '@'); at >= 0 {
		id = id[:at] + strings.ToLower(id[at:])
	}
	return "<" + id + ">"
}

// contentExternalID is the external id of a message without a
// Message-ID: a hash of its bytes with line endings and trailing space
// normalised, so the copy on another server or after a rescan is the
// same document.
func contentExternalID(raw []byte) string {
	n := bytes.ReplaceAll(raw, []byte("\r\n"), []byte("\n"))
	n = bytes.TrimRight(n, " \t\r\n")
	sum := sha256.Sum256(n)
	return "sha256:" + hex.EncodeToString(sum[:16])
}

// URI is the RFC 5092-style address of a message of an installation:
// imap://<installation>/<mailbox>;uidvalidity=<v>/;uid=<u>. It names the
// installation, not the server, so it does not leak the account.
func URI(installation, mailbox string, uidvalidity, uid uint32) string {
	parts := strings.Split(mailbox, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return fmt.Sprintf("imap://%s/%s;uidvalidity=%d/;uid=%d", url.PathEscape(installation), strings.Join(parts, "/"), uidvalidity, uid)
}

// fetched is one message as the server gave it.
type fetched struct {
	mailbox      string
	uidvalidity  uint32
	uid          uint32
	raw          []byte
	internalDate time.Time
}

// messageItems turns a parsed message into its items: the message
// (ItemKind "mail", external id id) and one child (ItemKind "attachment")
// per text-like attachment with text and per PDF, DOCX or ODT attachment
// read, external id "<id>#attachment/<n>/<name>" with n counting all
// attachments from 1, at most o.Max (see mail.AttachmentItems). Binary
// attachments, text-like ones whose text was not extracted and documents
// that could not be read are listed in the parent's Meta["attachments"].
// att.Over are the ids of the attachments past the cap and att.Failed the
// documents that could not be read, which the parent's Meta["defects"]
// also names. replyTo are the ids the message answers (its In-Reply-To's
// contents). The error is ctx's.
//
// With authservID set, the message's item (never a child: an attached
// message's header is whatever its forwarder was sent) carries
// mail.SenderFacts: what the boundary's Authentication-Results verified
// and which of its text is derived.
func messageItems(ctx context.Context, installation string, f fetched, m *mail.Message, id string, replyTo []string, o mail.AttachmentOptions, authservID string) (items []ingestd.Item, att mail.Attachments, err error) {
	created := m.Date
	if created.IsZero() {
		created = f.internalDate
	}
	it := ingestd.Item{
		ExternalID: id,
		ItemKind:   "mail",
		URI:        URI(installation, f.mailbox, f.uidvalidity, f.uid),
		Title:      m.Subject,
		Author:     m.From,
		CreatedAt:  created,
		Format:     ingestd.FormatMail,
		Text:       m.Text,
		Meta: map[string]string{
			"mailbox":     f.mailbox,
			"uid":         strconv.FormatUint(uint64(f.uid), 10),
			"uidvalidity": strconv.FormatUint(uint64(f.uidvalidity), 10),
			"size":        strconv.Itoa(len(f.raw)),
		},
	}
	if !f.internalDate.IsZero() {
		it.Meta["internal_date"] = f.internalDate.UTC().Format(time.RFC3339)
	}
	setNonEmpty(it.Meta, "message_id", m.MessageID)
	setNonEmpty(it.Meta, "in_reply_to", m.InReplyTo)
	setNonEmpty(it.Meta, "references", strings.Join(m.References, " "))
	setNonEmpty(it.Meta, "to", strings.Join(m.To, ", "))
	setNonEmpty(it.Meta, "cc", strings.Join(m.Cc, ", "))
	setNonEmpty(it.Meta, "defects", strings.Join(m.Defects, "; "))
	it.Links = threadLinks(id, m, replyTo)

	o.Meta = map[string]string{"mailbox": f.mailbox, "uid": it.Meta["uid"]}
	att, err = mail.AttachmentItems(ctx, it, m, o)
	if err != nil {
		return nil, mail.Attachments{}, err
	}
	setNonEmpty(it.Meta, "attachments", strings.Join(att.Binary, "; "))
	for k, v := range mail.SenderFacts(m, authservID) {
		it.Meta[k] = v
	}
	mail.AddDefect(it.Meta, att.Defect)
	return append([]ingestd.Item{it}, att.Children...), att, nil
}

// threadLinks links a message to the ones it answers ("reply": replyTo,
// every content stored under its In-Reply-To) and to the rest of its
// References ("thread"), by the ids those messages are stored under. A
// reference links to the bare id only, the first content with that
// Message-ID: looking up every reference's contents would cost a read per
// reference per message, and the reply link is the one that says which
// message this one answers.
func threadLinks(self string, m *mail.Message, replyTo []string) []ingestd.ItemLink {
	var links []ingestd.ItemLink
	seen := map[string]bool{self: true}
	for _, to := range replyTo {
		if to != "" && !seen[to] {
			seen[to] = true
			links = append(links, ingestd.ItemLink{ToExternalID: to, Relation: "reply"})
		}
	}
	for _, r := range m.References {
		if to := MessageExternalID(r); to != "" && !seen[to] {
			seen[to] = true
			links = append(links, ingestd.ItemLink{ToExternalID: to, Relation: "thread"})
		}
	}
	return links
}

func setNonEmpty(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}

// autoGenerated reports whether the header of raw says a machine sent it:
// Auto-Submitted other than "no" (RFC 3834), Precedence bulk, list or
// junk, or List-Id / List-Unsubscribe (RFC 2369, 2919).
func autoGenerated(raw []byte) bool {
	var name string
	var value strings.Builder
	check := func() bool {
		v := strings.ToLower(strings.TrimSpace(value.String()))
		switch strings.ToLower(name) {
		case "auto-submitted":
			return v != "" && v != "no"
		case "precedence":
			return v == "bulk" || v == "list" || v == "junk"
		case "list-id", "list-unsubscribe":
			return true
		}
		return false
	}
	for len(raw) > 0 {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		line = bytes.TrimRight(line, "\r")
		if len(line) == 0 {
			break // end of header
		}
		if line[0] == ' ' || line[0] == '\t' {
			value.Write(line)
			continue
		}
		if name != "" && check() {
			return true
		}
		name, value = "", strings.Builder{}
		if k, v, ok := bytes.Cut(line, []byte{':'}); ok {
			name = string(bytes.TrimSpace(k))
			value.Write(v)
		}
	}
	return name != "" && check()
}
