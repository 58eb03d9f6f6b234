package mail

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors/internal/extract"
)

// DefaultMaxAttachments is the most child documents one message makes when
// the configuration says nothing (max_attachments). A person attaches a
// handful of files and a list digest carries a few dozen messages; a
// hundred is well past both, and low enough that one message cannot bury
// an installation: 10,000 tiny attachments would otherwise be 10,000
// documents to chunk, embed and serve.
const DefaultMaxAttachments = 100

// Attachments is what AttachmentItems makes of a message's attachments.
type Attachments struct {
	// Children are the child items, at most the cap.
	Children []ingestd.Item
	// Binary lists the attachments that are not children (binary, or
	// text-like without text, or a PDF, DOCX or ODT that could not be
	// read) as "name (type, N bytes)", at most the cap and then one
	// "and N more" entry: for the parent's Meta.
	Binary []string
	// Over are the external ids that the readable attachments past the
	// cap would have had, in order: the connector reports each as
	// skipped.
	Over []string
	// Failed are the PDF, DOCX and ODT attachments that could not be
	// read (over a limit, not the format they claim, too slow): the
	// connector reports each with pass.Fail, so a version stored by an
	// earlier pass is kept. An encrypted document is not among them: it
	// is what it is, not a failure to read it.
	Failed []Failed
	// Defect says what the cap left out and which documents could not be
	// read, and why, "; "-separated, for the parent's defects; "" when
	// nothing was.
	Defect string
}

// Failed is an attachment that could not be read.
type Failed struct {
	ExternalID string
	Err        error
}

// AttachmentOptions tune AttachmentItems.
type AttachmentOptions struct {
	// Max is how many attachments of a message are read (max_attachments):
	// the text-like ones with text, and the PDF, DOCX and ODT ones
	// whether they can be read or not (reading one costs the same either
	// way). <= 0 means DefaultMaxAttachments.
	Max int
	// Meta is copied into every child's Meta.
	Meta map[string]string
	// Extract bounds the reading of PDF, DOCX and ODT attachments (the
	// installation's extract: block; zero fields are the defaults).
	Extract extract.Config
}

// AttachmentItems returns a child item for each attachment of m with
// readable text, derived from parent (the message's item: its ExternalID,
// URI, Author and dates are used), up to o.Max; the rest are listed in
// Over and Defect, never silently dropped. A text-like attachment's text
// is the child's Text; a PDF, DOCX or ODT attachment is read under
// o.Extract (each within its timeout) into the child's Sections, so its
// chunks carry their page or heading path, and its format, pages and own
// defects go to the child's Meta. One that cannot be read makes no child:
// it is listed in Failed (encrypted ones are not), in Binary, and in
// Defect with the reason, and the others are read all the same.
//
// A child's external id is "<parent>#attachment/<n>/<name>" with n
// counting every attachment from 1, and its ParentExternalID is the
// parent's, so the pipeline gives it the more restrictive of its own and
// the message's tier. Binary attachments are not items; they are listed
// in Binary for the parent's Meta. The error is ctx's, when it ends: the
// pass is stopping.
func AttachmentItems(ctx context.Context, parent ingestd.Item, m *Message, o AttachmentOptions) (Attachments, error) {
	max := o.Max
	if max <= 0 {
		max = DefaultMaxAttachments
	}
	var out Attachments
	var defects []string
	binary, taken := 0, 0
	listBinary := func(a Attachment) {
		binary++
		if len(out.Binary) >= max {
			return
		}
		n := a.Filename
		if n == "" {
			n = "unnamed"
		}
		out.Binary = append(out.Binary, fmt.Sprintf("%s (%s, %d bytes)", n, a.ContentType, a.Size))
	}
	for i, a := range m.Attachments {
		rich := a.Rich != extract.Unknown && a.Data != nil
		if !rich && (!a.TextLike || a.Text == "") {
			listBinary(a)
			continue
		}
		name := attachmentName(a)
		frag := fmt.Sprintf("attachment/%d/%s", i+1, strings.ReplaceAll(name, "/", "_"))
		id := parent.ExternalID + "#" + frag
		if taken >= max {
			out.Over = append(out.Over, id)
			continue
		}
		taken++
		child := attachmentChild(parent, a, id, frag, name)
		for k, v := range o.Meta {
			child.Meta[k] = v
		}
		setNonEmpty(child.Meta, "filename", a.Filename)
		switch ext := strings.ToLower(path.Ext(a.Filename)); {
		case rich:
			doc, err := o.Extract.Read(ctx, a.Data, a.Rich, int64(len(a.Data)))
			if err != nil {
				if ctx.Err() != nil {
					return Attachments{}, ctx.Err()
				}
				listBinary(a)
				reason := ingestd.ErrorMessage(err)
				if errors.Is(err, extract.ErrEncrypted) {
					reason = "encrypted; not read"
				} else {
					out.Failed = append(out.Failed, Failed{ExternalID: id, Err: err})
				}
				defects = append(defects, fmt.Sprintf("attachment %q: %s", truncate(name, 64), reason))
				continue
			}
			child.Text, child.Format, child.Sections = "", ingestd.FormatMarkdown, doc.ItemSections()
			doc.Describe(child.Meta)
		case a.Message != nil:
			asMessage(&child, a)
		case ext == ".md" || a.ContentType == "text/markdown":
			child.Format = ingestd.FormatMarkdown
		}
		out.Children = append(out.Children, child)
	}
	if more := binary - len(out.Binary); more > 0 {
		out.Binary = append(out.Binary, fmt.Sprintf("and %d more", more))
	}
	if len(out.Over) > 0 {
		// The wording predates PDF, DOCX and ODT attachments; it is kept,
		// since a parent whose defects read otherwise would be a changed
		// document to re-embed.
		defects = append([]string{fmt.Sprintf("%d of %d text attachments over max_attachments (%d); not ingested",
			len(out.Over), len(out.Over)+taken, max)}, defects...)
	}
	out.Defect = strings.Join(defects, "; ")
	return out, nil
}

// attachmentName is a's file name, else "message.eml" for an attached
// message and "attachment" for anything else.
func attachmentName(a Attachment) string {
	if a.Filename != "" {
		return a.Filename
	}
	if a.Message != nil {
		return "message.eml"
	}
	return "attachment"
}

// attachmentChild is the item of attachment a of parent, under the
// external id and URI fragment frag, titled name, before its format is
// known: plain text, the parent's author and times.
func attachmentChild(parent ingestd.Item, a Attachment, id, frag, name string) ingestd.Item {
	uri := parent.URI + "#" + url.PathEscape(frag)
	if u, err := url.Parse(parent.URI); err == nil {
		u.Fragment = frag
		uri = u.String()
	}
	return ingestd.Item{
		ExternalID:       id,
		ItemKind:         "attachment",
		URI:              uri,
		Title:            name,
		Author:           parent.Author,
		CreatedAt:        parent.CreatedAt,
		UpdatedAt:        parent.UpdatedAt,
		Format:           ingestd.FormatPlain,
		Text:             a.Text,
		ParentExternalID: parent.ExternalID,
		Meta: map[string]string{
			"content_type": a.ContentType,
			"size":         strconv.Itoa(a.Size),
		},
	}
}

// asMessage makes child the item of an attached message: mail format,
// and the message's subject (unless the attachment has a file name),
// sender, date and Message-ID.
func asMessage(child *ingestd.Item, a Attachment) {
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
}

// AddDefect appends d to the "; "-separated defects in meta.
func AddDefect(meta map[string]string, d string) {
	if d == "" {
		return
	}
	if have := meta["defects"]; have != "" {
		d = have + "; " + d
	}
	meta["defects"] = d
}

func setNonEmpty(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}
