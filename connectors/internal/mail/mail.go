// Package mail parses one RFC 5322 message into readable text: decoded
// headers, the best body (text/plain preferred, HTML converted), and the
// attachments with the text of those that have any, and the bytes of PDF,
// DOCX and ODT attachments, which AttachmentItems reads.
//
// It is lenient by design: mail in the wild has broken boundaries, unknown
// charsets and malformed base64, and a message a person can read should not
// be lost to a strict parser. Whatever was broken and recovered from is
// listed in Message.Defects. Parse never panics and never reads anything but
// the bytes it is given; it must never decide anything from the content (that
// is provenance's job, and provenance never reads content).
package mail

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/extract"
)

// Message is one parsed mail.
type Message struct {
	MessageID  string   // without angle brackets
	InReplyTo  string   // the first id of In-Reply-To, without angle brackets
	References []string // without angle brackets, oldest first
	Subject    string
	From       string // "Name <addr>" or "addr"; several senders are joined with ", "
	To, Cc     []string
	Date       time.Time // zero when absent or unparseable (a Defect says which)

	// Text is the best readable body: the text/plain part when there is one
	// with content, else the HTML part converted to readable text. Inline
	// text parts of a multipart/mixed are joined with a blank line.
	Text   string
	Format string // always ingestd.FormatMail

	Attachments []Attachment
	// Defects lists what was broken and recovered from, in the order it was
	// met: a missing boundary, an unknown charset, malformed base64...
	Defects []string

	// authResults are the Authentication-Results fields' values, topmost
	// first, and fromDomain the domain of the one From address (""
	// unless there is exactly one): what SenderFacts reads.
	authResults []string
	fromDomain  string
}

// Attachment is a part of a message that is not its body.
type Attachment struct {
	Filename    string // decoded; may be empty
	ContentType string // lower-case media type, e.g. "application/pdf"
	Size        int    // decoded bytes
	// Text is the readable text of a text-like attachment (HTML converted);
	// empty for binary ones and for text-like ones over
	// Options.MaxAttachmentBytes.
	Text string
	// TextLike is true for text/*, message/rfc822 and files named .txt,
	// .md, .csv, .html or .htm.
	TextLike bool
	// Rich is the format of a PDF, DOCX or ODT attachment (by its bytes,
	// then its type and name: extract.Detect), and Data its decoded bytes,
	// for AttachmentItems to read; Unknown and nil for any other, and for
	// one over Options.MaxAttachmentBytes (a Defect says so).
	Rich extract.Format
	Data []byte
	// Message is the parsed message of a message/rfc822 attachment.
	Message *Message
}

// Options tune Parse. The zero value and nil mean the defaults.
type Options struct {
	// MaxMessageBytes is the largest raw message Parse accepts; larger ones
	// fail with ETOOLARGE. Default 32 MiB.
	MaxMessageBytes int64
	// MaxAttachmentBytes is the largest decoded attachment whose text is
	// extracted; a larger one is listed with its size, no text, and a
	// Defect. Default 10 MiB.
	MaxAttachmentBytes int64
}

// Defaults for Options.
const (
	DefaultMaxMessageBytes    = 32 << 20
	DefaultMaxAttachmentBytes = 10 << 20
)

// maxDepth bounds nesting of multiparts and attached messages, so a hostile
// message cannot exhaust the stack.
const maxDepth = 24

// maxMessageDepth bounds how many message/rfc822 attachments deep the text
// of attached messages is extracted. Each level's text holds the levels
// below it (a forwarded message shows what it forwarded), so the text a
// message makes grows with this depth; a forward of a forward of a forward
// is real mail, eight levels of it is not. Deeper attached messages are
// listed without text and a Defect says so.
const maxMessageDepth = 8

// maxDefects bounds Message.Defects: a message with 10,000 broken parts
// gets the first maxDefects and a last entry saying how many more there
// were, not 10,000 lines of metadata.
const maxDefects = 50

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.MaxMessageBytes <= 0 {
		out.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if out.MaxAttachmentBytes <= 0 {
		out.MaxAttachmentBytes = DefaultMaxAttachmentBytes
	}
	return out
}

// Parse parses one raw RFC 5322 message (CRLF or LF line endings; a leading
// mbox "From " line is skipped). It recovers from what it can and lists it
// in Defects. It returns an error only when the bytes cannot be read as a
// message at all: empty input (EINVALID), no header field (EINVALID), or
// more than Options.MaxMessageBytes (ETOOLARGE). A panic inside the
// parser, which would be a bug here, comes back as EINTERNAL.
func Parse(raw []byte, o *Options) (m *Message, err error) {
	opts := o.withDefaults()
	if int64(len(raw)) > opts.MaxMessageBytes {
		return nil, ingestd.Errorf(ingestd.ETOOLARGE, "message is %d bytes, over the %d-byte limit", len(raw), opts.MaxMessageBytes)
	}
	defer func() {
		// A panic here is a bug in this package, not in the message; it
		// must not take a sync pass (or a daemon) down with it.
		if r := recover(); r != nil {
			m, err = nil, ingestd.Errorf(ingestd.EINTERNAL, "mail parser panicked: %v", r)
		}
	}()
	p := &parser{opts: opts}
	return p.message(raw, 0)
}

// parser holds the state of one message; an attached message gets its own.
type parser struct {
	opts    Options
	msg     *Message
	defects []string
	seen    map[string]bool
	more    int     // defects not listed, past maxDefects
	nest    int     // how many message/rfc822 attachments deep this message is
	top     *parser // the parser of the outermost message; nil in it
}

// outer returns the parser of the outermost message, whose defects a
// limit met deep inside must reach.
func (p *parser) outer() *parser {
	if p.top != nil {
		return p.top
	}
	return p
}

func (p *parser) defect(format string, args ...any) {
	d := fmt.Sprintf(format, args...)
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	if p.seen[d] {
		return
	}
	p.seen[d] = true
	if len(p.defects) >= maxDefects {
		p.more++
		return
	}
	p.defects = append(p.defects, d)
}

// listedDefects returns the defects, with a last entry counting those
// past maxDefects.
func (p *parser) listedDefects() []string {
	if p.more == 0 {
		return p.defects
	}
	return append(p.defects, fmt.Sprintf("%d more defects not listed", p.more))
}

func (p *parser) message(raw []byte, depth int) (*Message, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "empty message")
	}
	h, body, ok := p.readHeader(raw, true)
	if !ok {
		return nil, ingestd.Errorf(ingestd.EINVALID, "no header field: not an RFC 5322 message")
	}
	m := &Message{Format: ingestd.FormatMail}
	p.msg = m
	m.MessageID = firstID(h.get("Message-Id"))
	m.InReplyTo = firstID(h.get("In-Reply-To"))
	m.References = allIDs(h.get("References"))
	m.Subject = p.decodeHeader("Subject", h.get("Subject"))
	m.From = strings.Join(p.addresses("From", h.get("From")), ", ")
	m.fromDomain = fromDomain(h)
	for _, f := range h {
		if f.key == "authentication-results" {
			m.authResults = append(m.authResults, f.value)
		}
	}
	m.To = p.addresses("To", h.all("To"))
	m.Cc = p.addresses("Cc", h.all("Cc"))
	if d := h.get("Date"); d != "" {
		m.Date = p.date(d)
	}
	m.Text = p.entity(h, body, "text/plain", depth, true).readable()
	m.Defects = p.listedDefects()
	return m, nil
}
