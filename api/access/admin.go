package access

import (
	"context"

	"github.com/ingestd/ingestd"
)

// DocumentActions are the admin actions on one document (api's
// reject and delete routes); an ingestd.DocumentStore has them.
type DocumentActions interface {
	Document(ctx context.Context, id string) (*ingestd.Document, error)
	SetStatus(ctx context.Context, id string, status ingestd.Status) error
	DeleteDocument(ctx context.Context, id string) error
}

var _ DocumentActions = (*Admin)(nil)

// Admin is DocumentActions that applies the principal in the context:
// ScopeAdmin, and a document of an installation it may not see is not
// found, as in Documents.
type Admin struct{ next DocumentActions }

// NewAdmin wraps next.
func NewAdmin(next DocumentActions) *Admin { return &Admin{next: next} }

// Document returns the stored document when the principal may act on it.
func (a *Admin) Document(ctx context.Context, id string) (*ingestd.Document, error) {
	p, err := Require(ctx, ScopeAdmin)
	if err != nil {
		return nil, err
	}
	reader, rerr := p.Reader("")
	doc, err := a.next.Document(ctx, id)
	if ingestd.ErrorCode(err) == ingestd.ENOTFOUND || err == nil && (doc == nil || !p.Sees(doc.Installation) || rerr != nil || !reader.May(doc.Readers)) {
		return nil, NotFound(id)
	}
	return doc, err
}

// SetStatus marks the document when the principal may act on it.
func (a *Admin) SetStatus(ctx context.Context, id string, status ingestd.Status) error {
	if _, err := a.Document(ctx, id); err != nil {
		return err
	}
	return a.next.SetStatus(ctx, id, status)
}

// DeleteDocument tombstones the document when the principal may act on it.
func (a *Admin) DeleteDocument(ctx context.Context, id string) error {
	if _, err := a.Document(ctx, id); err != nil {
		return err
	}
	return a.next.DeleteDocument(ctx, id)
}
