package ingestd

import (
	"context"
	"time"
)

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
