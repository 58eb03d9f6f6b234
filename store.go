package ingestd

import (
	"context"
	"time"
)

// Store is where documents, chunks, links and sync state live. Two
// implementations exist: store/sqlite (the embedded default) and
// store/postgres (scale-out). Both pass store/storetest.
//
// Unless a method says otherwise it returns an *Error with ENOTFOUND for a
// document id it does not hold, EINVALID for arguments it refuses, and
// EUNAVAILABLE when the database cannot be reached.
type Store interface {
	// PutInstallations records the configured installations (id, kind,
	// declared tier) so reports can name them. Installations no longer
	// configured keep their documents.
	PutInstallations(ctx context.Context, insts []Installation) error

	// Document returns the document with the id, deleted ones included.
	Document(ctx context.Context, id string) (*Document, error)

	// PutDocument writes doc and replaces its chunks and outgoing links in
	// one transaction. Writing a document whose stored ContentHash, Tier,
	// Status and SourceKind are the same as doc's is a no-op that reports
	// changed=false.
	// A deleted document written again comes back to life.
	PutDocument(ctx context.Context, doc *Document, chunks []Chunk, links []Link) (changed bool, err error)

	// DeleteDocument tombstones the document: its status becomes deleted and
	// its chunks leave every search index. Deleting a tombstone is a no-op.
	DeleteDocument(ctx context.Context, id string) error

	// SetStatus marks a stored, not deleted document active or rejected.
	// Returns EINVALID for StatusDeleted (use DeleteDocument).
	SetStatus(ctx context.Context, id string, status Status) error

	// DocumentRefs lists the not-deleted documents of an installation.
	DocumentRefs(ctx context.Context, installation string) ([]DocumentRef, error)

	// Cursor returns the value stored for (installation, key), "" if none.
	Cursor(ctx context.Context, installation, key string) (string, error)
	// SetCursor stores a sync cursor.
	SetCursor(ctx context.Context, installation, key, value string) error

	// CachedEmbeddings returns the vectors the embedder already made for
	// the given text hashes; missing hashes are absent from the map.
	CachedEmbeddings(ctx context.Context, embedderID string, textHashes []string) (map[string][]float32, error)
	// PutEmbeddings adds vectors to the embedding cache.
	PutEmbeddings(ctx context.Context, embedderID string, vecs map[string][]float32) error

	// SearchText ranks chunks by full-text relevance to the query (higher
	// score is better). Query syntax is never interpreted: the words of the
	// query are matched, operators and quotes are plain text.
	SearchText(ctx context.Context, query string, f Filter, limit int) ([]Hit, error)
	// SearchVector ranks chunks by cosine similarity to v (higher is better).
	SearchVector(ctx context.Context, v []float32, f Filter, limit int) ([]Hit, error)

	// Chunks returns the chunks with the given ids, with their documents,
	// in the order of ids; ids it does not hold are skipped. Embeddings are
	// included.
	Chunks(ctx context.Context, ids []string) ([]ChunkView, error)
	// DocumentChunks returns every chunk of the given documents in document
	// and ordinal order, embeddings included.
	DocumentChunks(ctx context.Context, docIDs []string) ([]ChunkView, error)
	// Links returns the links that start or end at any of the documents.
	Links(ctx context.Context, docIDs []string) ([]Link, error)
	// TierFacts returns, for each document id it holds (deleted ones
	// included), what the document's tier in force is computed from: its
	// installation, source kind and stored tier as stored (undeclared is
	// "", unknown values verbatim), the values of metaKeys among its
	// metadata, and the same facts of the document it was derived from
	// (ParentID) when the store holds that one. Ids it does not hold are
	// absent. Package provenance turns the facts into tiers; the verdict
	// is computed from them, never from what a caller sent.
	TierFacts(ctx context.Context, docIDs, metaKeys []string) (map[string]TierFacts, error)

	// CountDocuments counts not-deleted documents by their TierFacts (with
	// the values of metaKeys), for the provenance report. Documents with
	// equal facts are counted together.
	CountDocuments(ctx context.Context, metaKeys []string) ([]DocumentCount, error)

	// ChunksToEmbed returns up to limit chunks whose vector was not made by
	// the embedder with the given id (for reindex), after the chunk id after.
	ChunksToEmbed(ctx context.Context, embedderID, after string, limit int) ([]Chunk, error)
	// SetEmbeddings replaces the vectors of the given chunks.
	SetEmbeddings(ctx context.Context, embedderID string, vecs map[string][]float32) error

	// Ping reports whether the store can serve (readiness).
	Ping(ctx context.Context) error
	Close() error
}

// Filter narrows a search. Empty slices mean no narrowing.
type Filter struct {
	Installations []string
	SourceKinds   []string
	// Tiers lists the stored tiers to keep; "" stands for undeclared.
	// Unknown stored values match only if listed verbatim.
	Tiers []Tier
	// Statuses defaults to active only. Deleted documents never match.
	Statuses []Status
	// EmbedderID limits SearchVector to vectors that embedder made, since
	// vectors of different embedders are never compared. Empty means the
	// embedder of the most recently written vector with as many dimensions
	// as the query. SearchText ignores it.
	EmbedderID string
}

// Hit is one ranked chunk.
type Hit struct {
	ChunkID    string
	DocumentID string
	Score      float64
}

// ChunkView is a chunk with the fields of its document that retrieval serves.
type ChunkView struct {
	Chunk
	Installation   string
	SourceKind     string
	ItemKind       string
	URI            string
	Title          string
	DocumentTier   Tier
	DocumentStatus Status
	UpdatedAt      time.Time
}

// DocumentRef is the identity and hash of a stored document.
type DocumentRef struct {
	ID          string
	ExternalID  string
	ContentHash string
	Status      Status
}

// TierFacts is what a document's tier in force is computed from: where it
// came from, the stamp it was stored with, the metadata an installation's
// tier_by_<key> rules look at, and the same of its parent. Package
// provenance owns the computation.
type TierFacts struct {
	Installation string
	SourceKind   string
	// Tier is the stored stamp: "" for undeclared, any value verbatim.
	Tier Tier
	// Meta holds the requested metadata keys the document has; nil when
	// none was requested or it has none of them.
	Meta map[string]string
	// Parent is the facts of the document this one was derived from,
	// when the store holds it (deleted or not); its own Parent is nil.
	Parent *TierFacts
}

// DocumentCount is the number of not-deleted documents with the same
// TierFacts.
type DocumentCount struct {
	TierFacts
	Count int
}

// CheckPut validates a document for Store.PutDocument and returns its id
// (DocumentID of its installation and external id when ID is empty) and
// the status to store (active when empty). Every store calls it, so all of
// them refuse the same documents with the same EINVALID messages: one
// without installation, external id, source kind or content hash, one
// with StatusDeleted (use DeleteDocument) or an unknown status.
func CheckPut(doc *Document) (id string, status Status, err error) {
	if doc == nil || doc.Installation == "" || doc.ExternalID == "" || doc.SourceKind == "" || doc.ContentHash == "" {
		return "", "", Errorf(EINVALID, "document needs installation, external id, source kind and content hash")
	}
	id = doc.ID
	if id == "" {
		id = DocumentID(doc.Installation, doc.ExternalID)
	}
	switch status = doc.Status; status {
	case "":
		status = StatusActive
	case StatusActive, StatusRejected:
	case StatusDeleted:
		return "", "", Errorf(EINVALID, "document %s: put with status deleted (use DeleteDocument)", id)
	default:
		return "", "", Errorf(EINVALID, "document %s: unknown status %q", id, status)
	}
	return id, status, nil
}
