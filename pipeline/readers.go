package pipeline

import (
	"context"
	"fmt"

	"github.com/ingestd/ingestd"
)

// SetReaders gives the stored document of the installation's item new
// readers (ingestd.Pass.SetReaders): intersected with its parent's for a
// derived document, unmapped while that parent is not stored. Its
// content, chunks and vectors are kept: the store writes the readers
// alone. A document not stored, or deleted, is left alone.
func (p *Pipeline) SetReaders(ctx context.Context, inst ingestd.Installation, externalID string, readers ingestd.Readers) error {
	id := ingestd.DocumentID(inst.ID, externalID)
	unlock := p.lockDoc(id)
	defer unlock()
	doc, err := p.store.Document(ctx, id)
	switch {
	case ingestd.ErrorCode(err) == ingestd.ENOTFOUND:
		return nil
	case err != nil:
		return fmt.Errorf("load %s: %w", id, err)
	case doc.Status == ingestd.StatusDeleted:
		return nil
	}
	r := readers.Normal()
	if doc.ParentID != "" {
		parent, err := p.store.Document(ctx, doc.ParentID)
		switch {
		case err == nil:
			r = r.Intersect(parent.Readers)
		case ingestd.ErrorCode(err) == ingestd.ENOTFOUND:
			r = ingestd.Readers{}
		default:
			return fmt.Errorf("load parent %s: %w", doc.ParentID, err)
		}
	}
	if doc.Readers.Equal(r) && doc.Readers.Mapped == r.Mapped {
		return nil
	}
	doc.Readers = r
	if _, err := p.store.PutDocument(ctx, doc, nil, nil); err != nil {
		return fmt.Errorf("set readers of %s: %w", id, err)
	}
	p.stored(ctx, doc)
	return nil
}
