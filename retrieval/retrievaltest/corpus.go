// Package retrievaltest writes test documents into a store the way the pipeline
// would: chunks fenced by firewall.Fence, embedded by the lexical
// embedder, tiers stored verbatim (including undeclared and unknown
// values). It is for tests and benchmarks of package retrieval and its
// subpackages only; it never decides a tier.
package retrievaltest

import (
	"context"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/provenance"
)

// Doc is one test document.
type Doc struct {
	Installation string
	Kind         string // source kind; default "files"
	ExternalID   string
	Title        string
	Tier         ingestd.Tier // stored verbatim: "" is undeclared
	Status       ingestd.Status
	Chunks       []string // one chunk per entry, ordinals in order
	// Locators, when set, are the chunks' locators, one per chunk.
	Locators []string
	Links    []Link // outgoing, by external id in the same installation
	Meta     map[string]string
	// Parent is the external id, in the same installation, of the
	// document this one was derived from.
	Parent string
}

// Link is an outgoing link of a Doc.
type Link struct {
	To       string // external id
	Relation string
	// ToInstallation is the target's installation; empty means the same.
	ToInstallation string
}

// ID returns the document id of d.
func (d Doc) ID() string { return ingestd.DocumentID(d.Installation, d.ExternalID) }

// Put writes the documents. Chunks are fenced and embedded with e.
func Put(ctx context.Context, s ingestd.DocumentStore, e ingestd.Embedder, docs ...Doc) error {
	for _, d := range docs {
		kind := d.Kind
		if kind == "" {
			kind = "files"
		}
		status := d.Status
		if status == "" {
			status = ingestd.StatusActive
		}
		id := d.ID()
		uri := "test://" + d.Installation + "/" + d.ExternalID
		doc := &ingestd.Document{
			ID: id, Installation: d.Installation, ExternalID: d.ExternalID, SourceKind: kind, ItemKind: "file",
			URI: uri, Title: d.Title, Tier: d.Tier, Status: status, Meta: d.Meta,
			ContentHash: ingestd.ContentHash(append([]string{d.Title, string(d.Tier), string(status)}, d.Chunks...)...),
			CreatedAt:   time.Unix(1_700_000_000, 0).UTC(), UpdatedAt: time.Unix(1_700_000_000, 0).UTC(),
		}
		if d.Parent != "" {
			doc.ParentID = ingestd.DocumentID(d.Installation, d.Parent)
		}
		vecs, err := e.Embed(ctx, d.Chunks)
		if err != nil {
			return err
		}
		origin := firewall.Origin{Installation: d.Installation, SourceKind: kind, Tier: provenance.Name(d.Tier), URI: uri, Title: d.Title}
		chunks := make([]ingestd.Chunk, len(d.Chunks))
		for i, text := range d.Chunks {
			chunks[i] = ingestd.Chunk{
				ID: ingestd.ChunkID(id, text, i), DocumentID: id, Ordinal: i, Text: text,
				Fenced: firewall.Fence(text, origin), Tokens: len(text) / 4,
				Embedding: vecs[i], EmbedderID: e.ID(), Tier: d.Tier,
			}
			if i < len(d.Locators) {
				chunks[i].Locator = d.Locators[i]
			}
		}
		var links []ingestd.Link
		for _, l := range d.Links {
			inst := l.ToInstallation
			if inst == "" {
				inst = d.Installation
			}
			links = append(links, ingestd.Link{From: id, To: ingestd.DocumentID(inst, l.To), Relation: l.Relation})
		}
		if _, err := s.PutDocument(ctx, doc, chunks, links); err != nil {
			return err
		}
	}
	return nil
}

// MustPut is Put for tests.
func MustPut(tb testing.TB, s ingestd.DocumentStore, e ingestd.Embedder, docs ...Doc) {
	tb.Helper()
	if err := Put(context.Background(), s, e, docs...); err != nil {
		tb.Fatalf("put corpus: %v", err)
	}
}
