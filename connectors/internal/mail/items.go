package mail

import (
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd"
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
	// text-like without text) as "name (type, N bytes)", at most the cap
	// and then one "and N more" entry: for the parent's Meta.
	Binary []string
	// Over are the external ids that the text-like attachments past the
	// cap would have had, in order: the connector reports each as
	// skipped.
	Over []string
	// Defect says what the cap left out, for the parent's defects; ""
	// when it left out nothing.
	Defect string
}

// AttachmentItems returns a child item for each text-like attachment of m
// with readable text, derived from parent (the message's item: its
// ExternalID, URI, Author and dates are used), up to max children (<= 0
// means DefaultMaxAttachments); the rest are listed in Over and Defect,
// never silently dropped. A child's external id is
// "<parent>#attachment/<n>/<name>" with n counting every attachment from 1,
// and its ParentExternalID is the parent's, so the pipeline gives it the
// more restrictive of its own and the message's tier. extraMeta is copied
// into every child's Meta. Binary attachments are not items; they are
// listed in Binary for the parent's Meta.
func AttachmentItems(parent ingestd.Item, m *Message, extraMeta map[string]string, max int) Attachments {
	if max <= 0 {
		max = DefaultMaxAttachments
	}
	var out Attachments
	binary := 0
	for i, a := range m.Attachments {
		if !a.TextLike || a.Text == "" {
			binary++
			if len(out.Binary) >= max {
				continue
			}
			n := a.Filename
			if n == "" {
				n = "unnamed"
			}
			out.Binary = append(out.Binary, fmt.Sprintf("%s (%s, %d bytes)", n, a.ContentType, a.Size))
			continue
		}
		name := a.Filename
		if name == "" {
			name = "attachment"
			if a.Message != nil {
				name = "message.eml"
			}
		}
		frag := fmt.Sprintf("attachment/%d/%s", i+1, strings.ReplaceAll(name, "/", "_"))
		if len(out.Children) >= max {
			out.Over = append(out.Over, parent.ExternalID+"#"+frag)
			continue
		}
		uri := parent.URI + "#" + url.PathEscape(frag)
		if u, err := url.Parse(parent.URI); err == nil {
			u.Fragment = frag
			uri = u.String()
		}
		child := ingestd.Item{
			ExternalID:       parent.ExternalID + "#" + frag,
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
		for k, v := range extraMeta {
			child.Meta[k] = v
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
		out.Children = append(out.Children, child)
	}
	if more := binary - len(out.Binary); more > 0 {
		out.Binary = append(out.Binary, fmt.Sprintf("and %d more", more))
	}
	if len(out.Over) > 0 {
		out.Defect = fmt.Sprintf("%d of %d text attachments over max_attachments (%d); not ingested",
			len(out.Over), len(out.Over)+len(out.Children), max)
	}
	return out
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
