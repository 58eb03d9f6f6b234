package imap

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/mail"
)

// MessageExternalID is the external id of the message with the
// Message-ID, normalised: angle brackets and spaces removed, the domain
// part lower-cased, then written as "<local@domain>". Every mailbox of an
// installation, and the In-Reply-To and References of every other
// message, name a message the same way, so a thread's links resolve and a
// message in two mailboxes (or seen again after a UIDVALIDITY change) is
// one document. "" for an empty id.
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
// (ItemKind "mail") and one child (ItemKind "attachment") per text-like
// attachment with text, external id "<message id>#attachment/<n>/<name>"
// with n counting all attachments from 1. Binary attachments, and
// text-like ones whose text was not extracted, are listed in the parent's
// Meta["attachments"].
func messageItems(installation string, f fetched, m *mail.Message) []ingestd.Item {
	id := MessageExternalID(m.MessageID)
	if id == "" {
		id = contentExternalID(f.raw)
	}
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
	it.Links = threadLinks(id, m)

	items := []ingestd.Item{it}
	var listed []string
	for i, a := range m.Attachments {
		name := a.Filename
		if !a.TextLike || a.Text == "" {
			n := name
			if n == "" {
				n = "unnamed"
			}
			listed = append(listed, fmt.Sprintf("%s (%s, %d bytes)", n, a.ContentType, a.Size))
			continue
		}
		if name == "" {
			name = "attachment"
			if a.Message != nil {
				name = "message.eml"
			}
		}
		frag := fmt.Sprintf("attachment/%d/%s", i+1, strings.ReplaceAll(name, "/", "_"))
		child := ingestd.Item{
			ExternalID:       id + "#" + frag,
			ItemKind:         "attachment",
			URI:              it.URI + "#" + url.PathEscape(frag),
			Title:            name,
			Author:           it.Author,
			CreatedAt:        it.CreatedAt,
			Format:           ingestd.FormatPlain,
			Text:             a.Text,
			ParentExternalID: id,
			Meta: map[string]string{
				"mailbox":      f.mailbox,
				"uid":          it.Meta["uid"],
				"content_type": a.ContentType,
				"size":         strconv.Itoa(a.Size),
			},
		}
		setNonEmpty(child.Meta, "filename", a.Filename)
		switch ext := strings.ToLower(path.Ext(a.Filename)); {
		case a.Message != nil:
			child.Format = ingestd.FormatMail
			if a.Message.Subject != "" && a.Filename == "" {
				child.Title = a.Message.Subject
			}
			if a.Message.From != "" {
				child.Author = a.Message.From
			}
			if !a.Message.Date.IsZero() {
				child.CreatedAt = a.Message.Date
			}
			setNonEmpty(child.Meta, "message_id", a.Message.MessageID)
		case ext == ".md" || a.ContentType == "text/markdown":
			child.Format = ingestd.FormatMarkdown
		}
		items = append(items, child)
	}
	setNonEmpty(it.Meta, "attachments", strings.Join(listed, "; "))
	return items
}

// threadLinks links a message to the one it answers ("reply") and to the
// rest of its References ("thread"), by the same external ids those
// messages are stored under.
func threadLinks(self string, m *mail.Message) []ingestd.ItemLink {
	var links []ingestd.ItemLink
	seen := map[string]bool{self: true}
	if to := MessageExternalID(m.InReplyTo); to != "" && !seen[to] {
		seen[to] = true
		links = append(links, ingestd.ItemLink{ToExternalID: to, Relation: "reply"})
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
