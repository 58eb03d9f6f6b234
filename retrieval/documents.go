package retrieval

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/provenance"
)

// DocumentIndex is the store role behind ListDocuments and the
// document's own fields in Document: an ingestd.DocumentStore has it.
// Document returns ENOTFOUND for an id the store does not hold.
type DocumentIndex interface {
	Document(ctx context.Context, id string) (*ingestd.Document, error)
	DocumentRefs(ctx context.Context, installation string) ([]ingestd.DocumentRef, error)
}

// describe adds the stored document's own fields to doc when the service
// has an Index. Metadata values are written by the source and never
// pass the pipeline's neutralising (they are hashed and matched as they
// are), so they are neutralised here, where they leave for display.
func (s *Service) describe(ctx context.Context, doc *ingestd.ServedDocument) error {
	if s.index == nil {
		return nil
	}
	d, err := s.index.Document(ctx, doc.ID)
	if ingestd.ErrorCode(err) == ingestd.ENOTFOUND {
		return ingestd.Errorf(ingestd.ENOTFOUND, "document %q not found", doc.ID)
	}
	if err != nil {
		return fmt.Errorf("read document %s: %w", doc.ID, err)
	}
	// The external id is the source's name for the document (a path, a
	// URL, a message id): an identity, stored as the source wrote it, so
	// it is neutralised here, where it leaves for display.
	doc.ExternalID, doc.ItemKind, doc.Author = firewall.Neutralise(d.ExternalID), d.ItemKind, d.Author
	doc.CreatedAt, doc.UpdatedAt = d.CreatedAt, d.UpdatedAt
	if len(d.Meta) > 0 {
		doc.Metadata = make(map[string]string, len(d.Meta))
		for k, v := range d.Meta {
			doc.Metadata[firewall.Neutralise(k)] = firewall.Neutralise(v)
		}
	}
	return nil
}

// readable returns the refs whose documents reader may read (all of them
// for the service view), read from the stored readers before a page is
// cut.
func (s *Service) readable(ctx context.Context, reader *ingestd.Reader, refs []ingestd.DocumentRef) ([]ingestd.DocumentRef, error) {
	if reader == nil || len(refs) == 0 {
		return refs, nil
	}
	ids := make([]string, len(refs))
	for i, ref := range refs {
		ids[i] = ref.ID
	}
	may, err := ingestd.ReadableOf(ctx, s.store, reader, ids)
	if err != nil {
		return nil, fmt.Errorf("readers of the listed documents: %w", err)
	}
	return slices.DeleteFunc(refs, func(ref ingestd.DocumentRef) bool { return !may[ref.ID] }), nil
}

// ListDocuments returns one page of the installation's not-deleted
// documents in document id order, each with its tier in force. It returns
// EINVALID for a limit outside 0..MaxListLimit, ENOTFOUND for an
// installation that is not configured and holds no document, and
// EUNAVAILABLE when the service was built without Options.Index.
//
// The store lists an installation's documents whole (DocumentRefs, what
// a sync pass reads) and the page is cut from that list, so a page costs
// a read of the installation's ids plus one read per document on it.
func (s *Service) ListDocuments(ctx context.Context, r ingestd.DocumentListRequest) (*ingestd.DocumentList, error) {
	if s.index == nil {
		return nil, ingestd.Errorf(ingestd.EUNAVAILABLE, "documents cannot be listed here")
	}
	limit := r.Limit
	if limit == 0 {
		limit = ingestd.DefaultListLimit
	}
	if limit < 1 || limit > ingestd.MaxListLimit {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit must be a whole number from 1 to %d", ingestd.MaxListLimit)
	}
	refs, err := s.index.DocumentRefs(ctx, r.Installation)
	if err != nil {
		return nil, fmt.Errorf("list documents of %s: %w", r.Installation, err)
	}
	if refs, err = s.readable(ctx, r.Reader, refs); err != nil {
		return nil, err
	}
	if len(refs) == 0 && !slices.Contains(s.ids, r.Installation) {
		return nil, ingestd.Errorf(ingestd.ENOTFOUND, "installation %q is not configured and holds no documents", r.Installation)
	}
	slices.SortFunc(refs, func(a, b ingestd.DocumentRef) int { return strings.Compare(a.ID, b.ID) })
	start, _ := slices.BinarySearchFunc(refs, r.After, func(ref ingestd.DocumentRef, id string) int {
		if ref.ID <= id {
			return -1
		}
		return 1
	})
	page := refs[start:]
	out := &ingestd.DocumentList{Documents: []ingestd.DocumentSummary{}}
	if len(page) > limit {
		page = page[:limit]
		out.Next = page[limit-1].ID
	}
	ids := make([]string, len(page))
	for i, ref := range page {
		ids[i] = ref.ID
	}
	tiers, err := s.decl.Tiers(ctx, s.store, ids)
	if err != nil {
		return nil, fmt.Errorf("tiers of %s's documents: %w", r.Installation, err)
	}
	for _, id := range ids {
		d, err := s.index.Document(ctx, id)
		if ingestd.ErrorCode(err) == ingestd.ENOTFOUND {
			continue // deleted between the two reads
		}
		if err != nil {
			return nil, fmt.Errorf("read document %s: %w", id, err)
		}
		if d.Status == ingestd.StatusDeleted {
			continue
		}
		t, ok := tiers[id]
		if !ok {
			t = ingestd.TierUntrustedExternal
		}
		out.Documents = append(out.Documents, ingestd.DocumentSummary{
			ID: id, Installation: d.Installation, ExternalID: firewall.Neutralise(d.ExternalID), SourceKind: d.SourceKind, ItemKind: d.ItemKind,
			URI: d.URI, Title: d.Title, Tier: provenance.Name(t), Untrusted: provenance.Untrusted(t),
			Status: d.Status, UpdatedAt: d.UpdatedAt, Readers: d.Readers,
		})
	}
	return out, nil
}
