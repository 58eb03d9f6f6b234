package ingestd

import "time"

// Bounds of a DocumentListRequest.
const (
	DefaultListLimit = 50
	MaxListLimit     = 200
)

// DocumentListRequest asks for one page of an installation's documents
// (GET /v1/installations/{id}/documents). Pages are in document id order,
// which does not change as documents come and go: a page starts after the
// id the previous one ended with, so a document written or deleted
// between two pages neither repeats nor shifts the ones after it.
type DocumentListRequest struct {
	Installation string
	// After is the last document id of the previous page; "" starts at
	// the first.
	After string
	// Limit is the page's size: 0 means DefaultListLimit; 1..MaxListLimit.
	Limit int
	// Principal is the person the listing is for (a token acting for
	// people must name one), as RetrieveRequest.Principal.
	Principal string
	// Reader is who the listing reads as, resolved from the token and
	// Principal by the one scope check (api/access); nil is the service
	// view. Only documents it may read are listed, before the page is cut,
	// so neither a page's length nor its token tells of hidden ones.
	Reader *Reader
}

// DocumentList is one page of an installation's not-deleted documents.
type DocumentList struct {
	Documents []DocumentSummary `json:"documents"`
	// Next is the After of the next page, "" on the last page.
	Next string `json:"-"`
}

// DocumentSummary is one document of a listing: what a person needs to
// choose one to read (GET /v1/documents/{id}), without its text. Title
// and URI were neutralised where they entered, as in ServedChunk.
type DocumentSummary struct {
	ID           string `json:"document_id"`
	Installation string `json:"installation"`
	ExternalID   string `json:"external_id"`
	SourceKind   string `json:"source_kind"`
	ItemKind     string `json:"item_kind,omitempty"`
	URI          string `json:"uri"`
	Title        string `json:"title"`
	// Tier is the tier in force, as in ServedChunk.
	Tier      string    `json:"tier"`
	Untrusted bool      `json:"untrusted"`
	Status    Status    `json:"status"`
	UpdatedAt time.Time `json:"updated_at"`
	// Readers is who may read the document, for the one scope check to
	// judge; it is never served.
	Readers Readers `json:"-"`
}
