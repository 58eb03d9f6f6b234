package access

import (
	"context"

	"github.com/ingestd/ingestd"
)

// DocumentReader reads one served document: its fenced chunks and its
// tier in force. retrieval.Service implements it. Document returns
// ENOTFOUND for an id the store does not hold or holds as deleted.
type DocumentReader interface {
	Document(ctx context.Context, id string) (*ingestd.ServedDocument, error)
}

var (
	_ ingestd.Retriever = (*Retriever)(nil)
	_ DocumentReader    = (*Documents)(nil)
)

// Retriever is an ingestd.Retriever that applies the principal in the
// context to every call before the wrapped one answers: ScopeRetrieve,
// and the principal's installations as the request's narrowing (see
// Principal.Narrow). The wrapped Retriever narrows all three blocks and
// the report by the request's installations; Retriever checks the answer
// as well, and refuses one that carries a document outside the limit
// (EINTERNAL) rather than serve it.
type Retriever struct{ next ingestd.Retriever }

// NewRetriever wraps next.
func NewRetriever(next ingestd.Retriever) *Retriever { return &Retriever{next: next} }

// Retrieve answers r as the principal may see it.
func (a *Retriever) Retrieve(ctx context.Context, r ingestd.RetrieveRequest) (*ingestd.RetrieveResponse, error) {
	p, err := Require(ctx, ScopeRetrieve)
	if err != nil {
		return nil, err
	}
	if r.Installations, err = p.Narrow(r.Installations); err != nil {
		return nil, err
	}
	if r.Reader, err = p.Reader(r.Principal); err != nil {
		return nil, err
	}
	resp, err := a.next.Retrieve(ctx, r)
	if err != nil || resp == nil {
		return resp, err
	}
	for _, block := range [][]ingestd.ServedChunk{resp.Primary, resp.Expanded, resp.Rejected} {
		for _, c := range block {
			if !p.Sees(c.Installation) {
				return nil, ingestd.Errorf(ingestd.EINTERNAL, "retrieval served document %s of installation %q outside the caller's installations", c.DocumentID, c.Installation)
			}
		}
	}
	return resp, nil
}

// Provenance returns the report over the installations the principal may
// see, narrowed as Retrieve narrows.
func (a *Retriever) Provenance(ctx context.Context, r ingestd.ProvenanceRequest) (ingestd.ProvenanceReport, error) {
	p, err := Require(ctx, ScopeRetrieve)
	if err != nil {
		return ingestd.ProvenanceReport{}, err
	}
	if r.Installations, err = p.Narrow(r.Installations); err != nil {
		return ingestd.ProvenanceReport{}, err
	}
	if r.Reader, err = p.Reader(r.Principal); err != nil {
		return ingestd.ProvenanceReport{}, err
	}
	rep, err := a.next.Provenance(ctx, r)
	if err != nil {
		return rep, err
	}
	for _, in := range rep.Installations {
		if !p.Sees(in.ID) {
			return ingestd.ProvenanceReport{}, ingestd.Errorf(ingestd.EINTERNAL, "provenance counted installation %q outside the caller's installations", in.ID)
		}
	}
	return rep, nil
}

// Documents is a DocumentReader that applies the principal in the
// context: ScopeRetrieve, and a document of an installation it may not
// see, or one its person may not read (a token acting for people reads
// none, since a document read names no person), reads as not found,
// with the same error as an id that does not exist.
type Documents struct{ next DocumentReader }

// NewDocuments wraps next.
func NewDocuments(next DocumentReader) *Documents { return &Documents{next: next} }

// Document returns the document when the principal may see it.
func (a *Documents) Document(ctx context.Context, id string) (*ingestd.ServedDocument, error) {
	p, err := Require(ctx, ScopeRetrieve)
	if err != nil {
		return nil, err
	}
	reader, rerr := p.Reader("")
	doc, err := a.next.Document(ctx, id)
	if ingestd.ErrorCode(err) == ingestd.ENOTFOUND || err == nil && (doc == nil || !p.Sees(doc.Installation) || rerr != nil || !reader.May(doc.Readers)) {
		return nil, NotFound(id)
	}
	if err != nil {
		return nil, err
	}
	return doc, nil
}

// NotFound is the error for a document that is not served to the caller:
// not held, deleted, or outside its installations alike.
func NotFound(id string) error {
	return ingestd.Errorf(ingestd.ENOTFOUND, "document %q not found", id)
}
