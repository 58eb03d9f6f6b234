package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/connectors"
	"github.com/ingestd/ingestd/connectors/internal/jsonmsg"
)

// Standard is the "standard" webhook flavour: Standard Webhooks
// signatures, and a JSON document mapped to one item by the JSON pointers
// of StandardConfig.Fields.
var Standard = connectors.NewFlavor(FlavorStandard, connectors.SchemeStandardWebhooks,
	func(installation string, cfg StandardConfig) (connectors.DeliveryMapper, error) {
		return NewStandardMapper(installation, cfg)
	})

// StandardConfig is the standard flavour's keys of a webhook block.
type StandardConfig struct {
	// Fields maps a body to an item (see Fields).
	Fields Fields `yaml:"fields"`
	// Format of the mapped body text: plain (default), markdown or html.
	Format string `yaml:"format"`
}

// Fields are RFC 6901 JSON pointers into a Standard Webhooks body. The
// default accepted shape is a flat object:
//
//	{"id": "ticket-42", "title": "...", "body": "..." (or "text"), "url": "...", "author": "...", "deleted": false}
//
// id (a string or number) is required and is the item's external id;
// title or body must be present; "deleted": true tombstones the item. For
// an envelope such as {"type":..., "data": {...}} set the pointers, e.g.
// id: /data/id.
//
// updated_at (RFC 3339, or unix seconds) is the time of the state the
// body describes; without it the signed webhook-timestamp stands in. A
// delivery older than what is stored for its id is ignored, so a sender
// that may retry an old message after a newer one, or change an item
// more than once a second, should send it.
type Fields struct {
	ID        string `yaml:"id"`
	Title     string `yaml:"title"`
	Body      string `yaml:"body"`
	URL       string `yaml:"url"`
	Author    string `yaml:"author"`
	Deleted   string `yaml:"deleted"`
	UpdatedAt string `yaml:"updated_at"`
}

// StandardMapper maps one installation's verified Standard Webhooks
// deliveries to one job each.
type StandardMapper struct {
	installation string
	fields       Fields
	format       string
}

var _ connectors.DeliveryMapper = (*StandardMapper)(nil)

// NewStandardMapper validates cfg and applies its defaults. Errors are
// EINVALID and name the key.
func NewStandardMapper(installation string, cfg StandardConfig) (*StandardMapper, error) {
	m := &StandardMapper{installation: installation, fields: cfg.Fields, format: cfg.Format}
	switch m.format {
	case "":
		m.format = ingestd.FormatPlain
	case ingestd.FormatPlain, ingestd.FormatMarkdown, ingestd.FormatHTML:
	default:
		return nil, ingestd.Errorf(ingestd.EINVALID, "webhook.format %q is not plain, markdown or html", cfg.Format)
	}
	f := &m.fields
	for _, p := range []struct {
		name string
		ptr  *string
		def  string
	}{{"id", &f.ID, "/id"}, {"title", &f.Title, "/title"}, {"body", &f.Body, ""}, {"url", &f.URL, "/url"}, {"author", &f.Author, "/author"}, {"deleted", &f.Deleted, "/deleted"}, {"updated_at", &f.UpdatedAt, "/updated_at"}} {
		if *p.ptr == "" {
			*p.ptr = p.def
			continue
		}
		if !strings.HasPrefix(*p.ptr, "/") {
			return nil, ingestd.Errorf(ingestd.EINVALID, "webhook.fields.%s: %q is not a JSON pointer (it starts with /)", p.name, *p.ptr)
		}
	}
	return m, nil
}

// ErrUnprocessable marks a verified body the standard flavour cannot map
// (the intake answers 422).
var ErrUnprocessable = errors.New("unprocessable payload")

func unprocessable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnprocessable, fmt.Sprintf(format, args...))
}

// Map maps a verified body to one job by the field pointers (see Fields):
// an item, or a delete when the deleted field is true. The job's At is the
// body's updated_at, else d.SentAt (the signed webhook-timestamp). A body
// that is not a JSON object, has no id, has neither title nor body or has
// an updated_at that is not a time is ErrUnprocessable with a message
// naming the pointer.
func (m *StandardMapper) Map(d connectors.Delivery) ([]ingestd.Job, error) {
	job, err := m.job(d.Body, d.SentAt)
	if err != nil {
		return nil, err
	}
	return []ingestd.Job{job}, nil
}

func (m *StandardMapper) job(body []byte, sentAt time.Time) (ingestd.Job, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return ingestd.Job{}, unprocessable("body: %s", jsonmsg.Describe(err))
	}
	if dec.More() {
		return ingestd.Job{}, unprocessable("body has data after the JSON document")
	}
	if _, ok := doc.(map[string]any); !ok {
		return ingestd.Job{}, unprocessable("body is not a JSON object")
	}
	f := m.fields
	id, err := scalar(doc, f.ID)
	if err != nil {
		return ingestd.Job{}, err
	}
	if id == "" {
		return ingestd.Job{}, unprocessable("no id at %s (accepted shape: {\"id\", \"title\", \"body\" or \"text\", \"url\", \"author\", \"deleted\", \"updated_at\"})", f.ID)
	}
	updated, err := timeAt(doc, f.UpdatedAt)
	if err != nil {
		return ingestd.Job{}, err
	}
	at := updated
	if at.IsZero() {
		at = sentAt.UTC()
	}
	if v, ok := lookupPointer(doc, f.Deleted); ok && v == true {
		return ingestd.Job{Kind: ingestd.JobDelete, Installation: m.installation, ExternalID: id, At: at}, nil
	}
	it := ingestd.Item{ExternalID: id, ItemKind: "webhook", Format: m.format, UpdatedAt: updated}
	if it.Title, err = scalar(doc, f.Title); err != nil {
		return ingestd.Job{}, err
	}
	bodyPtr := f.Body
	if bodyPtr == "" { // default: "body", else "text"
		bodyPtr = "/body"
		if _, ok := lookupPointer(doc, "/body"); !ok {
			bodyPtr = "/text"
		}
	}
	if it.Text, err = scalar(doc, bodyPtr); err != nil {
		return ingestd.Job{}, err
	}
	if it.URI, err = scalar(doc, f.URL); err != nil {
		return ingestd.Job{}, err
	}
	if it.Author, err = scalar(doc, f.Author); err != nil {
		return ingestd.Job{}, err
	}
	if strings.TrimSpace(it.Title) == "" && strings.TrimSpace(it.Text) == "" {
		return ingestd.Job{}, unprocessable("neither a title at %s nor a body at %s", f.Title, bodyPtr)
	}
	if it.Title != "" && it.Text != "" {
		it.Text = it.Title + "\n\n" + it.Text
	} else if it.Text == "" {
		it.Text = it.Title
	}
	return ingestd.Job{Kind: ingestd.JobItem, Installation: m.installation, Item: &it, At: at}, nil
}

// timeAt returns the time at ptr: an RFC 3339 string or a number of unix
// seconds; zero when absent or null.
func timeAt(doc any, ptr string) (time.Time, error) {
	v, ok := lookupPointer(doc, ptr)
	if !ok || v == nil {
		return time.Time{}, nil
	}
	switch x := v.(type) {
	case string:
		t, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return time.Time{}, unprocessable("%s is not an RFC 3339 time", ptr)
		}
		return t.UTC(), nil
	case json.Number:
		if f, err := x.Float64(); err == nil && f > 0 && f < 1e11 {
			sec := int64(f)
			return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC(), nil
		}
	}
	return time.Time{}, unprocessable("%s is not a time (RFC 3339 or unix seconds)", ptr)
}

// scalar returns the string or number at ptr, "" when absent or null.
func scalar(doc any, ptr string) (string, error) {
	v, ok := lookupPointer(doc, ptr)
	if !ok || v == nil {
		return "", nil
	}
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", unprocessable("%s is an object or array; want a string", ptr)
}

// lookupPointer evaluates an RFC 6901 JSON pointer ("" is the whole doc).
func lookupPointer(doc any, ptr string) (any, bool) {
	if ptr == "" {
		return doc, true
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, false
	}
	cur := doc
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) || (len(tok) > 1 && tok[0] == '0') {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
