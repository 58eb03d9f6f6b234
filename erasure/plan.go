package erasure

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
)

// Request names what to erase (see ingestd.ErasureRequest; DryRun is the
// caller's).
type Request = ingestd.ErasureRequest

// check returns EINVALID for a request that names nothing, or names
// documents and something else.
func check(r Request) error {
	switch {
	case len(r.DocumentIDs) > 0 && (r.Installation != "" || r.Author != ""):
		return ingestd.Errorf(ingestd.EINVALID, "erase documents by id, or an installation, or an author (optionally in one installation): not ids with another selector")
	case len(r.DocumentIDs) == 0 && r.Installation == "" && r.Author == "":
		return ingestd.Errorf(ingestd.EINVALID, "erase what: name document ids, an installation or an author")
	case r.Author != "" && NormalizeAuthor(r.Author) == "":
		return ingestd.Errorf(ingestd.EINVALID, "author %q names no one identity: give one mail address or login", r.Author)
	}
	return nil
}

// Store is what an Eraser needs of a store.
type Store interface {
	ingestd.Eraser
	DocumentChunks(ctx context.Context, docIDs []string) ([]ingestd.ChunkView, error)
}

// Forget returns the cursor edits that drop the external ids from what an
// installation's connector keeps in its own cursors (connectors.Forgetter);
// nil for an installation whose connector keeps nothing of its items
// there.
type Forget func(ctx context.Context, installation string, externalIDs []string) ([]ingestd.Cursor, error)

// Options configure an Eraser. Keys and Store are required.
type Options struct {
	Keys   *Keyer
	Store  Store
	Forget Forget
	Now    func() time.Time
}

// Eraser plans and runs erasures against one store.
type Eraser struct {
	o Options
}

// New returns an Eraser.
func New(o Options) *Eraser {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Eraser{o: o}
}

// Plan is what an erasure removes, computed and not yet applied.
type Plan struct {
	// Documents are the documents that go, in id order.
	Documents []ingestd.Document
	Erasure   ingestd.Erasure
}

// Report lists the plan's documents.
func (p *Plan) Report(dryRun bool) ingestd.ErasureReport {
	r := ingestd.ErasureReport{DryRun: dryRun, Documents: make([]ingestd.ErasedDocument, 0, len(p.Documents)), Tombstones: len(p.Erasure.Tombstones)}
	for _, d := range p.Documents {
		r.Documents = append(r.Documents, ingestd.ErasedDocument{ID: d.ID, Installation: d.Installation, ExternalID: d.ExternalID,
			ItemKind: d.ItemKind, Title: d.Title, Status: d.Status})
	}
	return r
}

// Plan finds what req erases: the documents it names, those derived from
// them (transitively), the embedding cache keys of their chunks, the
// cursors that name them and the tombstones to record. It writes nothing.
// Returns EINVALID for a request that names nothing or mixes ids with
// another selector, ENOTFOUND for a document id the store does not hold
// (nothing is erased then).
func (e *Eraser) Plan(ctx context.Context, req Request) (*Plan, error) {
	if err := check(req); err != nil {
		return nil, err
	}
	author := NormalizeAuthor(req.Author)
	roots, err := e.roots(ctx, req, author)
	if err != nil {
		return nil, err
	}
	docs, err := e.withDerived(ctx, roots)
	if err != nil {
		return nil, err
	}
	p := &Plan{Documents: docs}
	now := e.o.Now().UTC()
	tomb := func(kind, inst, key string) ingestd.Tombstone {
		return ingestd.Tombstone{Key: key, KeyID: e.o.Keys.ID(), Kind: kind, Installation: inst, CreatedAt: now}
	}
	if author != "" {
		p.Erasure.Tombstones = append(p.Erasure.Tombstones, tomb(ingestd.TombstoneAuthor, req.Installation, e.o.Keys.Author(req.Installation, author)))
	}
	byInst := map[string][]string{}
	var insts []string
	for _, d := range docs {
		p.Erasure.DocumentIDs = append(p.Erasure.DocumentIDs, d.ID)
		p.Erasure.Tombstones = append(p.Erasure.Tombstones, tomb(ingestd.TombstoneDocument, d.Installation, e.o.Keys.Document(d.Installation, d.ExternalID)))
		p.Erasure.Cursors = append(p.Erasure.Cursors, ingestd.Cursor{Installation: d.Installation, Key: pipeline.EventCursorKey(d.ExternalID)})
		if _, ok := byInst[d.Installation]; !ok {
			insts = append(insts, d.Installation)
		}
		byInst[d.Installation] = append(byInst[d.Installation], d.ExternalID)
	}
	if e.o.Forget != nil {
		for _, inst := range insts {
			edits, err := e.o.Forget(ctx, inst, byInst[inst])
			if err != nil {
				return nil, fmt.Errorf("forget in %s's cursors: %w", inst, err)
			}
			p.Erasure.Cursors = append(p.Erasure.Cursors, edits...)
		}
	}
	chunks, err := e.o.Store.DocumentChunks(ctx, p.Erasure.DocumentIDs)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, c := range chunks {
		// What the pipeline embedded (title and heading path with the
		// text), and what reindex embeds (the text alone).
		for _, h := range []string{embedder.TextHash(pipeline.EmbedInput(c.Title, c.HeadingPath, c.Text)), embedder.TextHash(c.Text)} {
			if !seen[h] {
				seen[h] = true
				p.Erasure.TextHashes = append(p.Erasure.TextHashes, h)
			}
		}
	}
	return p, nil
}

// roots returns the documents req names: by id (ENOTFOUND for one the
// store does not hold), by author (normalised, in the installation if
// req names one) or the installation's.
func (e *Eraser) roots(ctx context.Context, req Request, author string) ([]ingestd.Document, error) {
	var roots []ingestd.Document
	var err error
	switch {
	case len(req.DocumentIDs) > 0:
		ids := slices.Compact(slices.Sorted(slices.Values(req.DocumentIDs)))
		if roots, err = e.o.Store.FindDocuments(ctx, ingestd.DocumentQuery{IDs: ids}); err != nil {
			return nil, err
		}
		if len(roots) != len(ids) {
			var missing []string
			for _, id := range ids {
				if !slices.ContainsFunc(roots, func(d ingestd.Document) bool { return d.ID == id }) {
					missing = append(missing, id)
				}
			}
			return nil, ingestd.Errorf(ingestd.ENOTFOUND, "no document %s (erased already, or never stored): nothing was erased", strings.Join(missing, ", "))
		}
	case author != "":
		found, err := e.o.Store.FindDocuments(ctx, ingestd.DocumentQuery{AuthorContains: author})
		if err != nil {
			return nil, err
		}
		for _, d := range found {
			if (req.Installation == "" || d.Installation == req.Installation) && slices.Contains(AuthorKeys(d.Author), author) {
				roots = append(roots, d)
			}
		}
	default:
		if roots, err = e.o.Store.FindDocuments(ctx, ingestd.DocumentQuery{Installation: req.Installation}); err != nil {
			return nil, err
		}
	}
	return roots, nil
}

// withDerived adds to docs every document derived from one of them, at
// any depth, and returns them in id order.
func (e *Eraser) withDerived(ctx context.Context, docs []ingestd.Document) ([]ingestd.Document, error) {
	seen := map[string]bool{}
	var out []ingestd.Document
	frontier := docs
	for len(frontier) > 0 {
		var ids []string
		for _, d := range frontier {
			if !seen[d.ID] {
				seen[d.ID] = true
				out = append(out, d)
				ids = append(ids, d.ID)
			}
		}
		if len(ids) == 0 {
			break
		}
		var err error
		if frontier, err = e.o.Store.FindDocuments(ctx, ingestd.DocumentQuery{ParentIDs: ids}); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b ingestd.Document) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Erase applies the plan to the store (see ingestd.Eraser.Erase).
func (e *Eraser) Erase(ctx context.Context, p *Plan) (ingestd.ErasureCounts, error) {
	return e.o.Store.Erase(ctx, p.Erasure)
}

// Lift removes the tombstones req names and returns how many the store
// held. Returns EINVALID for a request that names none.
func (e *Eraser) Lift(ctx context.Context, req ingestd.LiftRequest) (int, error) {
	var keys []string
	switch {
	case len(req.Keys) > 0:
		keys = req.Keys
	case req.ExternalID != "":
		if req.Installation == "" {
			return 0, ingestd.Errorf(ingestd.EINVALID, "lift by external id needs its installation")
		}
		keys = []string{e.o.Keys.Document(req.Installation, req.ExternalID)}
	case req.Author != "":
		a := NormalizeAuthor(req.Author)
		if a == "" {
			return 0, ingestd.Errorf(ingestd.EINVALID, "author %q names no one identity: give one mail address or login", req.Author)
		}
		keys = []string{e.o.Keys.Author(req.Installation, a)}
	case req.Installation != "":
		all, err := e.o.Store.Tombstones(ctx)
		if err != nil {
			return 0, err
		}
		for _, t := range all {
			if t.Installation == req.Installation {
				keys = append(keys, t.Key)
			}
		}
	default:
		return 0, ingestd.Errorf(ingestd.EINVALID, "lift what: name keys, an external id with its installation, an author, or an installation")
	}
	return e.o.Store.LiftTombstones(ctx, keys)
}
