package mail

import (
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/ingestd/ingestd"
)

// AttachmentItems returns a child item for each text-like attachment of m
// with readable text, derived from parent (the message's item: its
// ExternalID, URI, Author and dates are used). A child's external id is
// "<parent>#attachment/<n>/<name>" with n counting every attachment from 1,
// and its ParentExternalID is the parent's, so the pipeline gives it the
// more restrictive of its own and the message's tier. extraMeta is copied
// into every child's Meta. Binary attachments are not items; they are
// returned as a listing, "name (type, N bytes)", for the parent's Meta.
func AttachmentItems(parent ingestd.Item, m *Message, extraMeta map[string]string) (children []ingestd.Item, binary []string) {
	for i, a := range m.Attachments {
		if !a.TextLike || a.Text == "" {
			n := a.Filename
			if n == "" {
				n = "unnamed"
			}
			binary = append(binary, fmt.Sprintf("%s (%s, %d bytes)", n, a.ContentType, a.Size))
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
		children = append(children, child)
	}
	return children, binary
}

func setNonEmpty(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}
