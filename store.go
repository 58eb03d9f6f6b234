package ingestd

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"
)

// Store is every ability a store has: the union of the roles below, which
// both implementations have — store/sqlite (the embedded default) and
// store/postgres (scale-out) — and store/storetest checks. Wiring (cmd)
// holds a Store; every other package takes the smallest role it uses:
// DocumentStore (the pipeline, the admin routes), Searcher (retrieval),
// RunStore (the sync-pass history), embedder.Cache (the embedding cache),
// provenance.FactReader, Eraser (erasure and the pipeline's tombstone
// check), Archiver (export and import). A store's
// upkeep outside requests is not part of it: cmd knows which store it
// opened and whether that one has any.
//
// Unless a method says otherwise it returns an *Error with ENOTFOUND for a
// document id it does not hold, EINVALID for arguments it refuses, and
// EUNAVAILABLE when the database cannot be reached.
type Store interface {
	DocumentStore
	Searcher
	RunStore
	Eraser
	Archiver

	// PutInstallations records the configured installations (id, kind,
	// declared tier) so reports can name them. Installations no longer
	// configured keep their documents.
	PutInstallations(ctx context.Context, insts []Installation) error

	// CachedEmbeddings returns the vectors the embedder already made for
	// the given text hashes; missing hashes are absent from the map.
	CachedEmbeddings(ctx context.Context, embedderID string, textHashes []string) (map[string][]float32, error)
	// PutEmbeddings adds vectors to the embedding cache.
	PutEmbeddings(ctx context.Context, embedderID string, vecs map[string][]float32) error

	// DocumentChunks returns every chunk of the given documents in document
	// and ordinal order, embeddings included.
	DocumentChunks(ctx context.Context, docIDs []string) ([]ChunkView, error)

	// ChunksToEmbed returns up to limit chunks whose vector was not made by
	// the embedder with the given id (for reindex), after the chunk id after.
	ChunksToEmbed(ctx context.Context, embedderID, after string, limit int) ([]Chunk, error)
	// SetEmbeddings replaces the vectors of the given chunks.
	SetEmbeddings(ctx context.Context, embedderID string, vecs map[string][]float32) error

	// Ping reports whether the store can serve (readiness).
	Ping(ctx context.Context) error
	// Close releases the store; ctx bounds the wait for its background
	// work. PostgreSQL waits for the connections in use to be released
	// and returns ctx's error when ctx ends first; SQLite skips its index
	// snapshot (a cache that speeds up the next open) when ctx has ended.
	// Every closing role of the module takes a context (jobs.Queue too),
	// so that one deadline bounds a shutdown. The store must not be used
	// after.
	Close(ctx context.Context) error
}

// DocumentStore is where documents are written and their life cycle and
// sync state kept: what package pipeline writes through and the admin
// routes (reject, delete) change. Errors as for Store.
type DocumentStore interface {
	// Document returns the document with the id, deleted ones included.
	Document(ctx context.Context, id string) (*Document, error)

	// PutDocument writes doc and replaces its chunks and outgoing links in
	// one transaction. Writing a document whose stored ContentHash, Tier,
	// Status and SourceKind are the same as doc's is a no-op that reports
	// changed=false.
	// A deleted document written again comes back to life.
	PutDocument(ctx context.Context, doc *Document, chunks []Chunk, links []Link) (changed bool, err error)
	// PutDocuments writes each of puts as PutDocument would, in as few
	// transactions as the store can, and returns one result per put, in
	// order: a sync pass hands its documents over in batches so that one
	// commit serves many. A put that is refused or fails (EINVALID,
	// ECONFLICT) leaves the others: only its own result carries the
	// error. Every put whose result has no error is committed when
	// PutDocuments returns; a transaction that cannot commit fails every
	// put it held. PutDocumentsOf is the default, one PutDocument each.
	PutDocuments(ctx context.Context, puts []DocumentPut) []PutResult

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
}

// DocumentPut is one document for DocumentStore.PutDocuments: what
// PutDocument takes.
type DocumentPut struct {
	Doc    *Document
	Chunks []Chunk
	Links  []Link
}

// PutResult is what DocumentStore.PutDocuments did with one put:
// PutDocument's results.
type PutResult struct {
	Changed bool
	Err     error
}

// PutDocumentsOf implements DocumentStore.PutDocuments with one
// PutDocument per put, in order: a store without a way to share a
// transaction among documents calls it, and store/storetest checks that
// every store answers as it does.
func PutDocumentsOf(ctx context.Context, s interface {
	PutDocument(ctx context.Context, doc *Document, chunks []Chunk, links []Link) (bool, error)
}, puts []DocumentPut) []PutResult {
	out := make([]PutResult, len(puts))
	for i, p := range puts {
		out[i].Changed, out[i].Err = s.PutDocument(ctx, p.Doc, p.Chunks, p.Links)
	}
	return out
}

// Searcher is what package retrieval reads: ranked candidates, the
// chunks around them, the links between documents and the facts their
// tiers in force are computed from. It is declared here, not in
// retrieval, because both stores implement it and store/storetest checks
// its contract, ExpansionChunks's default included. Errors as for Store.
//
// A search's answer is a function of the stored corpus and the request,
// never of the order rows were written in: among equal scores the lower
// chunk id comes first (SortHits), and a limit that falls inside a run of
// equal scores keeps the lowest ids of the run. Chunk ids are derived
// from content (ChunkID), so two stores holding the same corpus answer
// alike.
type Searcher interface {
	// SearchText ranks chunks by full-text relevance to the query (higher
	// score is better). Query syntax is never interpreted: the words of the
	// query are matched, operators and quotes are plain text.
	SearchText(ctx context.Context, query string, f Filter, limit int) ([]Hit, error)
	// SearchVector ranks chunks by cosine similarity to v (higher is
	// better). The answer is the exact top limit, whatever index finds
	// the candidates.
	SearchVector(ctx context.Context, v []float32, f Filter, limit int) ([]Hit, error)

	// Chunks returns the chunks with the given ids, with their documents,
	// in the order of ids; ids it does not hold are skipped. Embeddings are
	// included.
	Chunks(ctx context.Context, ids []string) ([]ChunkView, error)
	// ExpansionChunks returns the chunks an answer's expansion chooses
	// from (see Expansion for which, and ExpansionChunksOf, the default
	// implementation over DocumentChunks that a store without a faster
	// path calls, so that every store answers alike).
	ExpansionChunks(ctx context.Context, x Expansion) ([]ChunkView, error)
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
	// CountDocumentsFor counts as CountDocuments does the documents r may
	// read (every one for a nil r), each count of one ReadersState: the
	// provenance report for a person counts nothing they may not read,
	// and the service view's counts its unmapped documents.
	CountDocumentsFor(ctx context.Context, metaKeys []string, r *Reader) ([]DocumentCount, error)
}

// Expansion says which chunks Searcher.ExpansionChunks returns: those at
// the positions in Adjacent that exist, in that order; then, for each of
// Documents in order, its ExpansionCandidates chunks most similar to Query
// (Dot of the vectors; a chunk without a vector, with one of another
// length or made by another embedder than EmbedderID scores 0; the lowest
// ordinal first among equals), in ordinal order. A chunk is returned once,
// where it first comes.
//
// Retrieval reads the chunks next to its primary chunks (Adjacent) and
// the best chunk of each linked document (Documents); it picks the best
// of the candidates itself, with its own arithmetic, so a near tie
// rounded differently by a database still leaves it the chunk it would
// have picked from all of them.
type Expansion struct {
	Query      []float32
	EmbedderID string
	Adjacent   []ChunkPosition
	Documents  []string
	// Reader, when not nil, leaves out the chunks of every document the
	// person may not read (Reader.May), as Filter.Reader does.
	Reader *Reader
}

// ChunkPosition names a chunk by its document and ordinal.
type ChunkPosition struct {
	DocumentID string
	Ordinal    int
}

// ExpansionCandidates is how many chunks of each of Expansion.Documents
// ExpansionChunks returns.
const ExpansionCandidates = 2

// ExpansionChunksOf implements Searcher.ExpansionChunks from every chunk
// of the documents concerned (DocumentChunks): one read, the choice made
// here. Stores without a faster path call it; store/storetest checks that
// every store answers as it does. Errors are DocumentChunks's.
func ExpansionChunksOf(ctx context.Context, s interface {
	DocumentChunks(ctx context.Context, docIDs []string) ([]ChunkView, error)
}, x Expansion) ([]ChunkView, error) {
	if len(x.Adjacent) == 0 && len(x.Documents) == 0 {
		return nil, nil
	}
	var ids []string
	seen := map[string]bool{}
	for _, id := range x.Documents {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for _, p := range x.Adjacent {
		if !seen[p.DocumentID] {
			seen[p.DocumentID] = true
			ids = append(ids, p.DocumentID)
		}
	}
	all, err := s.DocumentChunks(ctx, ids)
	if err != nil {
		return nil, err
	}
	byDoc := make(map[string][]ChunkView, len(ids))
	for _, v := range all {
		byDoc[v.DocumentID] = append(byDoc[v.DocumentID], v)
	}
	out := make([]ChunkView, 0, len(x.Adjacent)+ExpansionCandidates*len(x.Documents))
	picked := map[string]bool{}
	add := func(v ChunkView) {
		if !picked[v.ID] {
			picked[v.ID] = true
			out = append(out, v)
		}
	}
	for _, p := range x.Adjacent {
		for _, v := range byDoc[p.DocumentID] {
			if v.Ordinal == p.Ordinal {
				add(v)
			}
		}
	}
	score := func(v ChunkView) float32 {
		if len(v.Embedding) != len(x.Query) || (v.EmbedderID != "" && v.EmbedderID != x.EmbedderID) {
			return 0
		}
		return Dot(x.Query, v.Embedding)
	}
	for _, id := range x.Documents {
		chunks := byDoc[id] // in ordinal order
		scores := make([]float32, len(chunks))
		order := make([]int, len(chunks))
		for i, v := range chunks {
			scores[i], order[i] = score(v), i
		}
		// Best first; a stable sort keeps the lower ordinal ahead among equals.
		slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(scores[j], scores[i]) })
		best := order[:min(len(order), ExpansionCandidates)]
		slices.Sort(best)
		for _, i := range best {
			add(chunks[i])
		}
	}
	return out, nil
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
	// Reader, when not nil, keeps only the documents that person may read
	// (Reader.May): never an unmapped one. Nil is the service view.
	Reader *Reader
}

// Hit is one ranked chunk.
type Hit struct {
	ChunkID    string
	DocumentID string
	Score      float64
}

// SortHits orders hits best first: higher score, then lower chunk id —
// the total order every search answers in (Searcher).
func SortHits(hits []Hit) {
	slices.SortFunc(hits, func(a, b Hit) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.ChunkID, b.ChunkID))
	})
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
	// Readers is who may read the document, as stored. CountDocuments
	// leaves it zero.
	Readers Readers
}

// DocumentCount is the number of not-deleted documents with the same
// TierFacts.
type DocumentCount struct {
	TierFacts
	Count int
	// ReadersState is the documents' Readers.State in a count made by
	// CountDocumentsFor; "" in CountDocuments's.
	ReadersState string
}

// ReadableOf returns the ids among ids whose documents r may read (all
// of them for a nil r), by their stored readers (TierFacts): a store
// without a faster path narrows an Expansion with it.
func ReadableOf(ctx context.Context, s interface {
	TierFacts(ctx context.Context, docIDs, metaKeys []string) (map[string]TierFacts, error)
}, r *Reader, ids []string) (map[string]bool, error) {
	facts, err := s.TierFacts(ctx, ids, nil)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		if f, ok := facts[id]; ok && r.May(f.Readers) {
			out[id] = true
		}
	}
	return out, nil
}

// ReadableExpansion returns x without the documents and positions
// x.Reader may not read (ReadableOf); x itself when it names no reader.
func ReadableExpansion(ctx context.Context, s interface {
	TierFacts(ctx context.Context, docIDs, metaKeys []string) (map[string]TierFacts, error)
}, x Expansion) (Expansion, error) {
	if x.Reader == nil {
		return x, nil
	}
	var ids []string
	for _, p := range x.Adjacent {
		ids = append(ids, p.DocumentID)
	}
	ids = append(ids, x.Documents...)
	ok, err := ReadableOf(ctx, s, x.Reader, ids)
	if err != nil {
		return x, err
	}
	out := x
	out.Adjacent = slices.DeleteFunc(slices.Clone(x.Adjacent), func(p ChunkPosition) bool { return !ok[p.DocumentID] })
	out.Documents = slices.DeleteFunc(slices.Clone(x.Documents), func(id string) bool { return !ok[id] })
	return out, nil
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
