package ingestd

import (
	"context"
	"time"
)

// Eraser is a store's part in erasure: finding what an erasure names,
// removing it for good with the tombstones that keep a re-sync from
// bringing it back, and answering whether an identity was erased (the
// pipeline asks before it stamps an item). Package erasure computes the
// keys and plans the erasure; the store never sees an identity in clear
// in a tombstone. Errors as for Store.
type Eraser interface {
	// FindDocuments returns the documents q selects, deleted ones
	// included, in id order, without chunks. Returns EINVALID unless
	// exactly one of q's fields is set.
	FindDocuments(ctx context.Context, q DocumentQuery) ([]Document, error)

	// Erase removes the documents with e.DocumentIDs for good, in one
	// transaction with e's tombstones and cursor edits: their rows
	// (tombstoned ones too), chunks, full-text and vector entries, links
	// from and to them, the embedding cache entries of e.TextHashes
	// (for every embedder), the cursor summaries in the sync history of
	// their installations (SyncRun.Cursors, which may name an erased
	// item), and every in-memory copy (each process's index drops them
	// at its next catch-up). Then it removes what the
	// database keeps of deleted rows as far as the store can (SQLite:
	// deleted content overwritten, the full-text index merged, the
	// write-ahead log checkpointed and truncated; PostgreSQL: VACUUM
	// ANALYZE of the touched tables). Ids it does not hold are skipped.
	// Returns EINVALID for a tombstone without key, key id or kind.
	Erase(ctx context.Context, e Erasure) (ErasureCounts, error)

	// Erased reports whether any of keys is a tombstone. Returns
	// ECONFLICT when the store holds tombstones made with another key
	// than keyID names: keys made with this one cannot match them, so
	// the answer would be wrong.
	Erased(ctx context.Context, keyID string, keys []string) (bool, error)
	// Tombstones returns every tombstone, oldest first.
	Tombstones(ctx context.Context) ([]Tombstone, error)
	// LiftTombstones removes the tombstones with the keys and returns how
	// many it held: what they kept out may be ingested again.
	LiftTombstones(ctx context.Context, keys []string) (int, error)

	// Cursors returns the installation's cursors whose key starts with
	// prefix, in key order (a connector's own maps, which an erasure
	// rewrites without the erased items).
	Cursors(ctx context.Context, installation, prefix string) ([]Cursor, error)
}

// Archiver is a store's part in export and import: all of its content,
// read from one consistent snapshot, and written back as it was. Errors
// as for Store.
type Archiver interface {
	// Export calls fn with everything the store holds, read from one
	// consistent snapshot while writers go on: first a record with the
	// Summary, then every installation, every tombstone, every document
	// in id order (with its chunks, embeddings included, and its
	// outgoing links), every cursor. An error from fn stops it and is
	// returned as it is.
	Export(ctx context.Context, fn func(ArchiveRecord) error) error
	// Import writes the records (a Summary is ignored) in one
	// transaction, as they are: a document replaces the one with its id,
	// with its status, stamps, times, chunks and outgoing links, and no
	// other change; an installation is added only when the store has
	// none with its id (the configuration's own stay); a cursor or
	// tombstone replaces the one with its key. It validates what it
	// writes as PutDocument does and as CheckArchived says (EINVALID,
	// nothing written): a chunk whose fenced text fails the store's
	// FenceCheck is refused, and a store opened without one imports no
	// chunk. It never judges a tier: the caller decides what an unknown
	// one becomes.
	Import(ctx context.Context, recs []ArchiveRecord) error
}

// FenceCheck is the one fence's own check (firewall.Check): nil when
// fenced is exactly one well-formed fence, EINVALID saying what is wrong
// otherwise. A store takes it in its options and asks it of every chunk
// that reaches it by a door other than the pipeline, which fences each
// chunk it makes (Archiver.Import; a restored file's chunks), so that
// "every stored chunk is fenced" is a property of what a store accepts,
// not of which door the text came in by. It is declared here because
// both stores consume it and neither may import package firewall.
type FenceCheck func(fenced string) error

// CheckArchived validates a document for Archiver.Import and returns its
// id: what CheckPut refuses (a tombstoned document is allowed), a chunk
// without an id or of another document, a link that does not start at
// it, and a chunk whose Fenced fails check — every chunk when check is
// nil, since nothing can then tell a fence from text. Every store calls
// it, so all of them refuse the same archives with the same EINVALID
// messages.
func CheckArchived(ad *ArchivedDocument, check FenceCheck) (id string, err error) {
	d := ad.Document
	if d.Status == StatusDeleted {
		d.Status = StatusActive
	}
	if id, _, err = CheckPut(&d); err != nil {
		return "", err
	}
	for _, c := range ad.Chunks {
		if c.ID == "" || (c.DocumentID != "" && c.DocumentID != id) {
			return "", Errorf(EINVALID, "document %s: chunk %q without an id or of another document", id, c.ID)
		}
		if check == nil {
			return "", Errorf(EINVALID, "document %s: chunk %s: this store was opened without the fence's check, so it imports no chunk", id, c.ID)
		}
		if err := check(c.Fenced); err != nil {
			return "", Errorf(EINVALID, "document %s: chunk %s: its fenced text is not one fence (%s): refused; an import fences each chunk from its text", id, c.ID, ErrorMessage(err))
		}
	}
	for _, l := range ad.Links {
		if (l.From != "" && l.From != id) || l.To == "" {
			return "", Errorf(EINVALID, "document %s: link %s -> %s is not one of its own", id, l.From, l.To)
		}
	}
	return id, nil
}

// DocumentQuery selects documents for FindDocuments. Exactly one field is
// set.
type DocumentQuery struct {
	// IDs selects these documents.
	IDs []string
	// ParentIDs selects the documents derived from these (whose ParentID
	// is one of them).
	ParentIDs []string
	// Installation selects every document of the installation.
	Installation string
	// AuthorContains selects the documents whose Author contains it,
	// ignoring the case of ASCII letters. It is a superset: a caller
	// matches the author exactly itself.
	AuthorContains string
}

// Erasure is what Eraser.Erase removes and records.
type Erasure struct {
	DocumentIDs []string
	// TextHashes are embedding cache keys (embedder.TextHash of what was
	// embedded) of the erased chunks, removed for every embedder.
	TextHashes []string
	// Cursors are cursor edits: each replaces the value of its
	// (installation, key), and an empty Value removes the cursor (the
	// erased documents' event times, connectors' own maps rewritten
	// without the erased items).
	Cursors []Cursor
	// Tombstones are recorded in the same transaction.
	Tombstones []Tombstone
}

// ErasureCounts is what an erasure removed.
type ErasureCounts struct {
	Documents        int `json:"documents"`
	Chunks           int `json:"chunks"`
	Links            int `json:"links"`
	CachedEmbeddings int `json:"cached_embeddings"`
	Cursors          int `json:"cursors"`
	Tombstones       int `json:"tombstones"`
}

// Tombstone kinds.
const (
	// TombstoneDocument keys an installation and an external id.
	TombstoneDocument = "document"
	// TombstoneAuthor keys an author (a mail address, a login) within an
	// installation, or everywhere when Installation is empty.
	TombstoneAuthor = "author"
)

// Tombstone records an erasure without what it erased: a keyed hash of
// the erased identity, so that the pipeline can refuse the item when the
// source still holds it, while nobody without the key can tell from the
// store which identity it names.
type Tombstone struct {
	// Key is the hex HMAC-SHA256 of the identity under the deployment's
	// erasure key (package erasure).
	Key string `json:"key"`
	// KeyID names the erasure key that made Key (a fingerprint of the
	// key, never the key).
	KeyID string `json:"key_id"`
	// Kind is TombstoneDocument or TombstoneAuthor.
	Kind string `json:"kind"`
	// Installation is the installation the identity belongs to; "" for
	// an author erased from every installation.
	Installation string    `json:"installation,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
}

// Cursor is one stored sync cursor.
type Cursor struct {
	Installation string `json:"installation"`
	Key          string `json:"key"`
	Value        string `json:"value"`
}

// ArchivedDocument is a document as an archive carries it: the row as
// stored, its chunks and its outgoing links.
type ArchivedDocument struct {
	Document
	// DeletedAt is when a tombstoned (StatusDeleted) document was
	// deleted; zero otherwise.
	DeletedAt time.Time
	Chunks    []Chunk
	Links     []Link
}

// ArchiveRecord is one record of an export: exactly one field is set.
type ArchiveRecord struct {
	Summary      *ArchiveSummary
	Installation *Installation
	Tombstone    *Tombstone
	Document     *ArchivedDocument
	Cursor       *Cursor
}

// ArchiveSummary counts what an export holds, read from the same
// snapshot as the records that follow it.
type ArchiveSummary struct {
	Installations int `json:"installations"`
	Tombstones    int `json:"tombstones"`
	Documents     int `json:"documents"`
	Chunks        int `json:"chunks"`
	Links         int `json:"links"`
	Cursors       int `json:"cursors"`
	// Embedders counts the chunks by the embedder that made their vector;
	// chunks without a vector count under "".
	Embedders map[string]int `json:"embedders"`
}

// ErasureRequest names what to erase: DocumentIDs; or every document of
// Installation; or the documents Author wrote (a mail address, a login),
// in Installation when it is set, else everywhere. Each reaches the
// documents derived from those it names (a mail's attachments, whatever
// their author). DryRun lists what would go and changes nothing.
type ErasureRequest struct {
	DocumentIDs  []string `json:"document_ids,omitempty"`
	Installation string   `json:"installation,omitempty"`
	Author       string   `json:"author,omitempty"`
	DryRun       bool     `json:"dry_run,omitempty"`
}

// LiftRequest names erasure tombstones to lift: Keys as listed; or the
// document of Installation with ExternalID; or Author (in Installation,
// or everywhere when it is ""); or, with Installation alone, every
// tombstone of that installation.
type LiftRequest struct {
	Keys         []string `json:"keys,omitempty"`
	Installation string   `json:"installation,omitempty"`
	ExternalID   string   `json:"external_id,omitempty"`
	Author       string   `json:"author,omitempty"`
}

// ErasureReport is what an erasure did, or (DryRun) would do.
type ErasureReport struct {
	DryRun bool `json:"dry_run"`
	// Documents lists what goes: enough for the operator to see it.
	Documents  []ErasedDocument `json:"documents"`
	Tombstones int              `json:"tombstones"`
	// Erased counts what the store removed; nil in a dry run.
	Erased *ErasureCounts `json:"erased,omitempty"`
	// Messages counts the job, dead-letter and event messages erased from
	// the job streams, when the erasure reached them; QueueBusy names the
	// streams that held other messages, whose files could not be dropped.
	Messages  *int     `json:"messages,omitempty"`
	QueueBusy []string `json:"queue_busy,omitempty"`
}

// ErasedDocument is one document of an ErasureReport.
type ErasedDocument struct {
	ID           string `json:"id"`
	Installation string `json:"installation"`
	ExternalID   string `json:"external_id"`
	ItemKind     string `json:"item_kind,omitempty"`
	Title        string `json:"title,omitempty"`
	Status       Status `json:"status"`
}
