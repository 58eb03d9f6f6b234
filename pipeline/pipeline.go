// Package pipeline turns what connectors emit into stored, fenced,
// embedded documents: item → stamp tier → chunk → fence → embed → store.
//
// It is the only place a document's tier is set: from the installation's
// declared tier, restricted by the item's own tier and its parent's (most
// restrictive wins). It never lets text reach the store unfenced, and it
// never writes or embeds anything for content the store already holds.
package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/chunker"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/provenance"
)

// Options configures a Pipeline. Store and Embedder are required.
type Options struct {
	Store ingestd.DocumentStore
	// Embedder makes the chunk vectors. Wrap it in embedder.Cached so that
	// text seen before is never embedded twice.
	Embedder ingestd.Embedder
	// Chunking is passed to the chunker; nil means its defaults.
	Chunking *chunker.Options
	// OnStored, when set, is called after a document was written (added,
	// changed, rejected or tombstoned): the hook for the stored-document
	// event. Its error is logged, never returned: the document is stored.
	OnStored func(ctx context.Context, doc *ingestd.Document)
	// Erasures, when set, is asked whether an item was erased before it
	// is stamped (package erasure's Gate): an erased item is skipped,
	// counted under the reason "erased", and nothing of it is written,
	// embedded or queued. cmd always sets it.
	Erasures Erasures
	// Traces, when set, records a span per sync pass, per item and per
	// stage (trace.go). Nil records none.
	Traces trace.TracerProvider
	Logger *slog.Logger
	Now    func() time.Time
}

// Erasures tells whether an item was erased (package erasure's Gate): its
// identity, the document it was derived from or its author carries a
// tombstone. An error stops the item (and a pass: a store that cannot
// answer, or whose tombstones another erasure key made, must not let an
// erased item back in).
type Erasures interface {
	Erased(ctx context.Context, installation string, item ingestd.Item) (bool, error)
	// ErasedAny reports whether any of the items was erased, in one
	// question: a sync pass asks it of the documents of a batch, each of
	// which passed Erased when it was stamped, just before it writes
	// them, so that an erasure made while they waited keeps them out.
	ErasedAny(ctx context.Context, installation string, items []ingestd.Item) (bool, error)
}

// SkipErased is the skip reason of an item that was erased.
const SkipErased = "erased"

// errErased is what stamp returns for an erased item.
var errErased = errors.New(SkipErased)

// Pipeline ingests items into a store. It is safe for concurrent use.
type Pipeline struct {
	store    ingestd.DocumentStore
	embedder ingestd.Embedder
	chunking *chunker.Options
	onStored func(context.Context, *ingestd.Document)
	erasures Erasures
	tracer   trace.Tracer
	log      *slog.Logger
	now      func() time.Time
	docLocks [64]sync.Mutex // IngestAt and DeleteAt, striped by document id
	failures failureMemory  // what each installation's last pass failed on (failures.go)
}

// New returns a pipeline.
func New(o Options) (*Pipeline, error) {
	if o.Store == nil || o.Embedder == nil {
		return nil, fmt.Errorf("pipeline: store and embedder are required")
	}
	p := &Pipeline{store: o.Store, embedder: o.Embedder, chunking: o.Chunking, onStored: o.OnStored, erasures: o.Erasures, tracer: newTracer(o.Traces), log: o.Logger, now: o.Now}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.now == nil {
		p.now = time.Now
	}
	return p, nil
}

// Outcome is what ingesting one item did.
type Outcome string

// Outcomes.
const (
	Added     Outcome = "added"
	Changed   Outcome = "changed"
	Unchanged Outcome = "unchanged"
	Deleted   Outcome = "deleted"
	Failed    Outcome = "failed"
	// Skipped is an item the connector left out by a rule (Pass.Skip).
	Skipped Outcome = "skipped"
)

// Ingest stamps, chunks, fences, embeds and stores one item of the
// installation. An item whose content, tier and status the store already
// holds is Unchanged: nothing is chunked, embedded or written. An item
// that was erased is Skipped (reason SkipErased) and nothing of it is
// written. Returns EINVALID for an item without an external id, and for
// one with both Text and Sections.
func (p *Pipeline) Ingest(ctx context.Context, inst ingestd.Installation, item ingestd.Item) (o Outcome, err error) {
	ctx, span := p.startItem(ctx, inst, item)
	defer func() { endItem(span, o, err) }()
	w, o, err := p.prepare(ctx, inst, item)
	if w == nil {
		return o, err
	}
	sctx, sspan := p.start(ctx, SpanStore)
	if sspan.IsRecording() {
		sspan.SetAttributes(attribute.Int("ingestd.chunks", len(w.chunks)))
	}
	changed, err := p.store.PutDocument(sctx, w.doc, w.chunks, w.links)
	endSpan(sspan, err)
	return p.written(ctx, w, changed, err)
}

// write is a document ready for the store: stamped, chunked, fenced and
// embedded, with the stored one it replaces (nil if none).
type write struct {
	doc, prev *ingestd.Document
	chunks    []ingestd.Chunk
	links     []ingestd.Link
}

// prepare does everything Ingest does before the store writes: it returns
// the write, or nil with the item's outcome when there is nothing to
// write (erased, unchanged, failed).
func (p *Pipeline) prepare(ctx context.Context, inst ingestd.Installation, item ingestd.Item) (*write, Outcome, error) {
	item = clean(item)
	doc, prev, err := p.stamp(ctx, inst, item)
	if errors.Is(err, errErased) {
		return nil, Skipped, nil
	}
	if err != nil {
		return nil, Failed, err
	}
	id := doc.ID
	if unchanged(prev, doc) {
		return nil, Unchanged, nil
	}
	if sameContent(prev, doc) {
		// Only who may read it changed (a revocation, a new member): the
		// store writes the readers and keeps every chunk and vector.
		return &write{doc: doc, prev: prev}, "", nil
	}

	chunks, err := p.chunks(ctx, doc, item)
	if err != nil {
		return nil, Failed, err
	}
	links := make([]ingestd.Link, 0, len(item.Links)+1)
	if doc.ParentID != "" {
		links = append(links, ingestd.Link{From: id, To: doc.ParentID, Relation: "parent"})
	}
	for _, l := range item.Links {
		if l.ToExternalID == "" || l.ToExternalID == item.ExternalID {
			continue
		}
		rel := l.Relation
		if rel == "" {
			rel = "link"
		}
		links = append(links, ingestd.Link{From: id, To: ingestd.DocumentID(inst.ID, l.ToExternalID), Relation: rel})
	}
	return &write{doc: doc, prev: prev, chunks: chunks, links: links}, "", nil
}

// written is the outcome of w once the store wrote it (PutDocument's
// results), and runs the stored hook for a document that changed.
func (p *Pipeline) written(ctx context.Context, w *write, changed bool, err error) (Outcome, error) {
	if err != nil {
		return Failed, fmt.Errorf("store %s: %w", w.doc.ID, err)
	}
	if !changed {
		return Unchanged, nil
	}
	p.stored(ctx, w.doc)
	if w.prev == nil || w.prev.Status == ingestd.StatusDeleted {
		return Added, nil
	}
	return Changed, nil
}

// stamp builds the document an item would be stored as (identity, hash,
// tier, status) and loads the stored one, nil if none. It writes nothing.
// It is where every item enters, so it is where an erased one is turned
// away: errErased, before anything is read of it.
func (p *Pipeline) stamp(ctx context.Context, inst ingestd.Installation, item ingestd.Item) (doc, prev *ingestd.Document, err error) {
	ctx, span := p.start(ctx, SpanStamp)
	defer func() {
		if doc != nil {
			span.SetAttributes(attribute.String("ingestd.tier", string(doc.Tier)))
		}
		if errors.Is(err, errErased) {
			span.SetAttributes(attribute.Bool("ingestd.erased", true))
			endSpan(span, nil) // turned away, as it should be: not a failure
			return
		}
		endSpan(span, err)
	}()
	if strings.TrimSpace(item.ExternalID) == "" {
		return nil, nil, ingestd.Errorf(ingestd.EINVALID, "installation %q: item without an external id", inst.ID)
	}
	if item.Text != "" && len(item.Sections) > 0 {
		return nil, nil, ingestd.Errorf(ingestd.EINVALID, "installation %q: item %q has both text and sections", inst.ID, item.ExternalID)
	}
	id := ingestd.DocumentID(inst.ID, item.ExternalID)
	if p.erasures != nil {
		erased, err := p.erasures.Erased(ctx, inst.ID, item)
		if err != nil {
			return nil, nil, fmt.Errorf("check erasure of %s: %w", id, err)
		}
		if erased {
			p.log.Debug("ingest.item_erased", "installation", inst.ID, "document", id)
			return nil, nil, errErased
		}
	}
	prev, err = p.store.Document(ctx, id)
	if ingestd.ErrorCode(err) == ingestd.ENOTFOUND {
		prev = nil
	} else if err != nil {
		return nil, nil, fmt.Errorf("load %s: %w", id, err)
	}

	doc = &ingestd.Document{
		ID:           id,
		Installation: inst.ID,
		ExternalID:   item.ExternalID,
		SourceKind:   inst.Kind,
		ItemKind:     item.ItemKind,
		URI:          item.URI,
		Title:        item.Title,
		Author:       item.Author,
		CreatedAt:    item.CreatedAt.UTC(),
		UpdatedAt:    item.UpdatedAt.UTC(),
		Meta:         item.Meta,
		IngestedAt:   p.now().UTC(),
		ContentHash:  itemHash(item),
	}
	tiers := []ingestd.Tier{provenance.Declared(inst, item.Meta), item.Tier}
	doc.Readers = declaredReaders(inst, item)
	if item.ParentExternalID != "" {
		doc.ParentID = ingestd.DocumentID(inst.ID, item.ParentExternalID)
		parent, err := p.store.Document(ctx, doc.ParentID)
		switch {
		case err == nil:
			tiers = append(tiers, parent.Tier)
			doc.Readers = doc.Readers.Intersect(parent.Readers)
		case ingestd.ErrorCode(err) != ingestd.ENOTFOUND:
			return nil, nil, fmt.Errorf("load parent %s: %w", doc.ParentID, err)
		default:
			// Its parent is not stored yet: no person reads it until a
			// later pass finds the parent (fail closed).
			doc.Readers = ingestd.Readers{}
		}
	}
	doc.Tier = provenance.MostRestrictive(tiers...)
	doc.Status = item.Status
	if doc.Status == "" {
		doc.Status = ingestd.StatusActive
		if prev != nil && prev.Status == ingestd.StatusRejected {
			doc.Status = ingestd.StatusRejected // a human's or an earlier pass's dismissal stands
		}
	}
	return doc, prev, nil
}

// unchanged reports whether the store already holds doc as it is: same
// content, tier, status and source kind (a document written by another
// kind of connector is orphaned until stamped again), not a tombstone.
func unchanged(prev, doc *ingestd.Document) bool {
	return sameContent(prev, doc) && prev.Readers.Equal(doc.Readers)
}

// sameContent is unchanged but for the readers.
func sameContent(prev, doc *ingestd.Document) bool {
	return prev != nil && prev.Status != ingestd.StatusDeleted &&
		prev.ContentHash == doc.ContentHash && prev.Tier == doc.Tier && prev.Status == doc.Status &&
		prev.SourceKind == doc.SourceKind
}

// declaredReaders is who may read an item before its parent is
// considered: what its connector mirrored from the source when it did,
// else the owner's declaration for its path (the first matching
// readers_by_path glob), else the installation's.
func declaredReaders(inst ingestd.Installation, item ingestd.Item) ingestd.Readers {
	if item.Readers != nil {
		return item.Readers.Normal()
	}
	for _, r := range inst.ReadersByPath {
		if ok, _ := path.Match(r.Glob, item.ExternalID); ok {
			return r.Readers.Normal()
		}
	}
	return inst.Readers.Normal()
}

// clean makes an item's strings storable in every store: invalid UTF-8
// becomes U+FFFD and NUL bytes are dropped (PostgreSQL refuses them in
// text; a mail with a stray NUL must not fail its whole document). The
// fields that are served outside the fence (title, URI, author, section
// locators) also pass firewall.Neutralise, as heading paths do in chunks:
// only the text is fenced, and they are shown beside it. Ordinary
// metadata is unchanged by it, so is an unchanged item's content hash; a
// stored document whose metadata holds marker-like or hidden text hashes
// differently and is stored again, neutralised, on its next sync.
func clean(it ingestd.Item) ingestd.Item {
	fix := func(s string) string {
		if strings.IndexByte(s, 0) >= 0 {
			s = strings.ReplaceAll(s, "\x00", "")
		}
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		return s
	}
	served := func(s string) string { return firewall.Neutralise(fix(s)) }
	it.Text, it.Title, it.Author, it.URI = fix(it.Text), served(it.Title), served(it.Author), served(it.URI)
	if len(it.Sections) > 0 {
		secs := make([]ingestd.Section, len(it.Sections))
		for i, s := range it.Sections {
			secs[i] = ingestd.Section{Locator: served(s.Locator), Text: fix(s.Text)}
		}
		it.Sections = secs
	}
	return it
}

// headingPath is a chunk's heading path as it is stored and served: each
// heading, which the chunker takes from the text, through
// firewall.Neutralise (see clean). A path it leaves as it is is returned
// as it is.
func headingPath(hp []string) []string {
	var out []string
	for i, h := range hp {
		if n := firewall.Neutralise(h); n != h {
			if out == nil {
				out = slices.Clone(hp)
			}
			out[i] = n
		}
	}
	if out == nil {
		return hp
	}
	return out
}

// chunks splits, fences and embeds the item's text, section by section
// when it has sections. A chunk's id depends on its document, its text and
// its occurrence only, as before sections existed: a document without
// sections keeps its chunk ids, and a paragraph that moves to another page
// keeps its id and takes the new page's locator.
func (p *Pipeline) chunks(ctx context.Context, doc *ingestd.Document, item ingestd.Item) ([]ingestd.Chunk, error) {
	format := item.Format
	if format == "" {
		format = ingestd.FormatPlain
	}
	_, cspan := p.start(ctx, SpanChunk)
	var pieces []chunker.Chunk
	if len(item.Sections) > 0 {
		pieces = chunker.SplitSections(item.Sections, format, p.chunking)
	} else {
		pieces = chunker.Split(item.Text, format, p.chunking)
	}
	origin := fenceOrigin(doc, doc.Tier)
	chunks := make([]ingestd.Chunk, 0, len(pieces))
	inputs := make([]string, 0, len(pieces))
	seen := map[string]int{}
	for _, pc := range pieces {
		if pc.Quoted {
			continue // quoted history was indexed with the mail it quotes
		}
		n := seen[pc.Text]
		seen[pc.Text] = n + 1
		hp := headingPath(pc.HeadingPath)
		chunks = append(chunks, ingestd.Chunk{
			ID:          ingestd.ChunkID(doc.ID, pc.Text, n),
			DocumentID:  doc.ID,
			Ordinal:     len(chunks),
			HeadingPath: hp,
			Text:        pc.Text,
			Fenced:      firewall.Fence(pc.Text, origin),
			Tokens:      pc.Tokens,
			Tier:        doc.Tier,
			EmbedderID:  p.embedder.ID(),
			Locator:     pc.Locator,
		})
		inputs = append(inputs, EmbedInput(doc.Title, hp, pc.Text))
	}
	cspan.SetAttributes(attribute.Int("ingestd.chunks", len(chunks)))
	cspan.End()
	if len(chunks) == 0 {
		return chunks, nil
	}
	ectx, espan := p.start(ctx, SpanEmbed)
	if espan.IsRecording() {
		espan.SetAttributes(attribute.String("ingestd.embedder", p.embedder.ID()), attribute.Int("ingestd.chunks", len(inputs)))
	}
	vecs, err := p.embedder.Embed(ectx, inputs)
	endSpan(espan, err)
	if err != nil {
		return nil, fmt.Errorf("embed %s: %w", doc.ID, err)
	}
	if len(vecs) != len(chunks) {
		return nil, fmt.Errorf("embed %s: %d vectors for %d chunks", doc.ID, len(vecs), len(chunks))
	}
	for i := range chunks {
		chunks[i].Embedding = vecs[i]
	}
	return chunks, nil
}

// fenceOrigin is the origin a chunk of doc is fenced with: where it came
// from and tier, the tier in force where it is written (what the pipeline
// just stamped it with).
func fenceOrigin(doc *ingestd.Document, tier ingestd.Tier) firewall.Origin {
	return firewall.Origin{
		Installation: doc.Installation,
		SourceKind:   doc.SourceKind,
		Tier:         provenance.Name(tier),
		URI:          doc.URI,
		Title:        doc.Title,
	}
}

// Refence sets each chunk's Fenced to its Text in the one fence, with
// doc's origin, as the pipeline fences the chunks it makes; tier is the
// tier the fence names, the document's tier in force where it is written
// (the pipeline names the stamp it just made, which is that). A door
// other than the pipeline that writes chunks (import) calls it, so that no
// fenced text it stores is one it was given: a forged fence, a fence
// closed early or plain text in an archive is replaced, and the fence
// never names a tier above what the writing deployment declares.
//
// It also passes the fields served beside the fence that outsiders write
// (the document's title, URI and author, each chunk's heading path and
// locator) through firewall.Neutralise, as clean and headingPath do for
// the pipeline's own items: an archive's fields are as untrusted as its
// fenced text.
func Refence(doc *ingestd.Document, tier ingestd.Tier, chunks []ingestd.Chunk) {
	doc.Title = firewall.Neutralise(doc.Title)
	doc.URI = firewall.Neutralise(doc.URI)
	doc.Author = firewall.Neutralise(doc.Author)
	origin := fenceOrigin(doc, tier)
	for i := range chunks {
		chunks[i].Fenced = firewall.Fence(chunks[i].Text, origin)
		chunks[i].HeadingPath = headingPath(chunks[i].HeadingPath)
		chunks[i].Locator = firewall.Neutralise(chunks[i].Locator)
	}
}

// EmbedInput is what the embedder sees for a chunk: its document's title
// and heading path give a short chunk the context a reader would have.
// The embedding cache is keyed by its hash (package erasure removes those
// of erased chunks).
func EmbedInput(title string, path []string, text string) string {
	var b strings.Builder
	if title != "" {
		b.WriteString(title)
		b.WriteByte('\n')
	}
	if len(path) > 0 {
		b.WriteString(strings.Join(path, " / "))
		b.WriteByte('\n')
	}
	b.WriteString(text)
	return b.String()
}

// Delete tombstones the document with the external id. Deleting what the
// store does not hold is not an error: the source and the store agree.
func (p *Pipeline) Delete(ctx context.Context, inst ingestd.Installation, externalID string) (Outcome, error) {
	id := ingestd.DocumentID(inst.ID, externalID)
	doc, err := p.store.Document(ctx, id)
	if ingestd.ErrorCode(err) == ingestd.ENOTFOUND {
		return Unchanged, nil
	}
	if err != nil {
		return Failed, fmt.Errorf("load %s: %w", id, err)
	}
	if doc.Status == ingestd.StatusDeleted {
		return Unchanged, nil
	}
	if err := p.store.DeleteDocument(ctx, id); err != nil {
		return Failed, fmt.Errorf("delete %s: %w", id, err)
	}
	doc.Status = ingestd.StatusDeleted
	p.stored(ctx, doc)
	return Deleted, nil
}

func (p *Pipeline) stored(ctx context.Context, doc *ingestd.Document) {
	if p.onStored != nil {
		p.onStored(ctx, doc)
	}
}

// itemHash covers every field of an item that reaches the store, so a
// change to any of them (an edited title, a new link, a page's text or
// locator) is a change — except UpdatedAt: a file touched without an
// edit, or a mail re-read from another server, is the same content and
// costs nothing. An item without sections hashes as it did before
// sections existed, so an upgrade finds it unchanged.
func itemHash(it ingestd.Item) string {
	meta := make([]string, 0, 2*len(it.Meta))
	keys := make([]string, 0, len(it.Meta))
	for k := range it.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		meta = append(meta, k, it.Meta[k])
	}
	links := make([]string, 0, len(it.Links))
	for _, l := range it.Links {
		links = append(links, l.Relation+"\x00"+l.ToExternalID)
	}
	sort.Strings(links)
	enc, _ := json.Marshal([]any{meta, links}) // strings only: cannot fail
	parts := []string{
		it.ItemKind, it.URI, it.Title, it.Author,
		it.CreatedAt.UTC().Format(time.RFC3339Nano),
		it.Format, it.Text, it.ParentExternalID, string(enc),
	}
	if len(it.Sections) > 0 {
		secs := make([][2]string, len(it.Sections))
		for i, s := range it.Sections {
			secs[i] = [2]string{s.Locator, s.Text}
		}
		b, _ := json.Marshal(secs) // strings only: cannot fail
		parts = append(parts, "sections", string(b))
	}
	return ingestd.ContentHash(parts...)
}
