package access

import (
	"context"

	"github.com/ingestd/ingestd"
)

// DocumentLister lists an installation's documents a page at a time.
// retrieval.Service implements it. ListDocuments returns EINVALID for a
// limit out of range and ENOTFOUND for an installation that is neither
// configured nor holds documents.
type DocumentLister interface {
	ListDocuments(ctx context.Context, r ingestd.DocumentListRequest) (*ingestd.DocumentList, error)
}

var _ DocumentLister = (*Listing)(nil)

// Listing is a DocumentLister that applies the principal in the context:
// ScopeRetrieve, and an installation it may not see is refused with
// EFORBIDDEN naming it, as a retrieval naming it is (never narrowed to an
// empty page). It checks the page as well and refuses one that carries a
// document of another installation (EINTERNAL) rather than serve it.
type Listing struct{ next DocumentLister }

// NewListing wraps next.
func NewListing(next DocumentLister) *Listing { return &Listing{next: next} }

// ListDocuments returns the page when the principal may see the
// installation.
func (a *Listing) ListDocuments(ctx context.Context, r ingestd.DocumentListRequest) (*ingestd.DocumentList, error) {
	p, err := RequireInstallation(ctx, ScopeRetrieve, r.Installation)
	if err != nil {
		return nil, err
	}
	if r.Reader, err = p.Reader(r.Principal); err != nil {
		return nil, err
	}
	list, err := a.next.ListDocuments(ctx, r)
	if err != nil || list == nil {
		return list, err
	}
	for _, d := range list.Documents {
		if !p.Sees(d.Installation) || d.Installation != r.Installation {
			return nil, ingestd.Errorf(ingestd.EINTERNAL, "listing of %q carried document %s of installation %q", r.Installation, d.ID, d.Installation)
		}
		if !r.Reader.May(d.Readers) {
			return nil, ingestd.Errorf(ingestd.EINTERNAL, "listing of %q carried document %s its reader may not read", r.Installation, d.ID)
		}
	}
	return list, nil
}
