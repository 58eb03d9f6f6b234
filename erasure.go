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
