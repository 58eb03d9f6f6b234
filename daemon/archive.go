package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/archive"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/provenance"
)

// ArchiveInfo is what an archive's manifest says of the deployment
// beside what the daemon knows itself.
type ArchiveInfo struct {
	// Ingestd is the version that writes the archive.
	Ingestd string
	// Store is the store's driver and schema version.
	Store archive.StoreInfo
	// Dims is the configured embedding dimension (0 when the embedder
	// decides).
	Dims int
}

// Export writes the store's archive to w and returns its closed writer,
// which counts what it wrote.
func (d *Daemon) Export(ctx context.Context, w io.Writer, compression string) (*archive.Writer, error) {
	var aw *archive.Writer
	err := d.store.Export(ctx, func(r ingestd.ArchiveRecord) error {
		if r.Summary != nil {
			var err error
			aw, err = archive.NewWriter(w, d.manifest(*r.Summary), compression)
			return err
		}
		return aw.Write(r)
	})
	if err != nil {
		return nil, err
	}
	if aw == nil {
		return nil, errors.New("export: the store wrote no summary")
	}
	return aw, aw.Close()
}

// manifest describes this deployment for an archive's first record.
func (d *Daemon) manifest(sum ingestd.ArchiveSummary) archive.Manifest {
	ai := d.o.Archive
	return archive.Manifest{
		CreatedAt:    time.Now(),
		Ingestd:      ai.Ingestd,
		Store:        ai.Store,
		Embedder:     archive.EmbedderInfo{ID: d.embedder.ID(), Dims: ai.Dims},
		ErasureKeyID: d.keys.ID(),
		Counts:       sum,
	}
}

// importBatch is how many chunks one import transaction writes (a
// document's chunks are never split).
const importBatch = 500

// ImportResult is what an import did.
type ImportResult struct {
	Counts ingestd.ArchiveSummary
	// UnknownTiers counts the documents by the tier this build does not
	// know that they were archived with; each was imported as
	// untrusted-external.
	UnknownTiers map[ingestd.Tier]int
	// Reembedded counts the chunks re-embedded (reindex).
	Reembedded int
}

// errStop stops an Export after its summary.
var errStop = errors.New("stop")

// storeSummary is the counts of what the store holds.
func storeSummary(ctx context.Context, s ingestd.Archiver) (ingestd.ArchiveSummary, error) {
	var sum ingestd.ArchiveSummary
	err := s.Export(ctx, func(r ingestd.ArchiveRecord) error {
		sum = *r.Summary
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return sum, err
	}
	return sum, nil
}

// Import checks what the archive open returns holds against the
// deployment, reading it whole, then writes it to the store in batches: a
// damaged archive is refused before anything is written. It refuses
// (ECONFLICT) a store that holds documents or tombstones, vectors of
// another embedder than the daemon's (unless reindex: then they are
// dropped and re-embedded, telling progress), and tombstones made with
// another erasure key. A tier this build does not know becomes
// untrusted-external; every other tier, undeclared included, is kept as
// it is: a stamp is what the exporting deployment stamped, and what it
// counts for is decided where it is read, never above what the
// installations declare. No fenced text is taken from the archive: each
// chunk is fenced again from its text (Refencer), and the store refuses
// any chunk that is not then one fence (its FenceCheck).
func (d *Daemon) Import(ctx context.Context, open func() (*archive.Reader, io.Closer, error), reindex bool, progress func(int)) (ImportResult, error) {
	res := ImportResult{UnknownTiers: map[ingestd.Tier]int{}}
	have, err := storeSummary(ctx, d.store)
	if err != nil {
		return res, err
	}
	if have.Documents > 0 || have.Tombstones > 0 {
		return res, ingestd.Errorf(ingestd.ECONFLICT, "the store already holds %s and %s: import loads an archive into an empty store only "+
			"(a new data_dir or database); nothing was written", plural(have.Documents, "document"), plural(have.Tombstones, "tombstone"))
	}
	// The first pass only reads; the second writes.
	if _, err := d.readArchive(ctx, open, reindex, nil); err != nil {
		return res, fmt.Errorf("%w; nothing was written", err)
	}
	res, err = d.readArchive(ctx, open, reindex, d.store.Import)
	if err != nil {
		return res, fmt.Errorf("import stopped; the store holds part of the archive, so import again into an empty store: %w", err)
	}
	if reindex {
		n, err := d.Reembed(ctx, 256, progress)
		res.Reembedded = n
		if err != nil {
			return res, fmt.Errorf("import written; re-embedding stopped after %s (run `ingestd reindex` to finish): %w", plural(n, "chunk"), err)
		}
	}
	if d.maint != nil {
		if err := d.maint.Optimize(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}

// archiveRead is one pass of readArchive: what it checks records
// against, and the batch it passes to write.
type archiveRead struct {
	d       *Daemon
	want    string // the embedder's id
	reindex bool
	refence func(*ingestd.Document, []ingestd.Chunk)
	write   func(context.Context, []ingestd.ArchiveRecord) error
	batch   []ingestd.ArchiveRecord
	chunks  int
	res     ImportResult
}

// readArchive reads the archive through, checking each record and
// passing batches of them to write when it is set.
func (d *Daemon) readArchive(ctx context.Context, open func() (*archive.Reader, io.Closer, error), reindex bool, write func(context.Context, []ingestd.ArchiveRecord) error) (ImportResult, error) {
	ar := &archiveRead{d: d, want: d.embedder.ID(), reindex: reindex, refence: Refencer(d.Installations()), write: write,
		res: ImportResult{UnknownTiers: map[ingestd.Tier]int{}}}
	r, f, err := open()
	if err != nil {
		return ar.res, err
	}
	defer f.Close()
	defer r.Close()
	if err := ar.checkManifest(r.Manifest()); err != nil {
		return ar.res, err
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ar.res, err
		}
		if err := ar.add(ctx, rec); err != nil {
			return ar.res, err
		}
	}
	if err := ar.flush(ctx); err != nil {
		return ar.res, err
	}
	ar.res.Counts = r.Counts()
	return ar.res, nil
}

// checkManifest refuses an archive of other embedders' vectors (unless
// reindex) or of tombstones under another erasure key.
func (ar *archiveRead) checkManifest(m archive.Manifest) error {
	var others []string
	for id, n := range m.Counts.Embedders {
		if id != "" && id != ar.want {
			others = append(others, fmt.Sprintf("%s (%s)", id, plural(n, "chunk")))
		}
	}
	slices.Sort(others)
	if len(others) > 0 && !ar.reindex {
		return embedderMismatch(strings.Join(others, ", "), ar.want)
	}
	if m.Counts.Tombstones > 0 && m.ErasureKeyID != ar.d.keys.ID() {
		return keyMismatch(m.ErasureKeyID, ar.d.keys.ID())
	}
	return nil
}

// add checks one record and batches it, flushing a full batch.
func (ar *archiveRead) add(ctx context.Context, rec ingestd.ArchiveRecord) error {
	switch {
	case rec.Installation != nil:
		rec.Installation.Tier = provenance.Resolve(rec.Installation.Tier)
	case rec.Tombstone != nil:
		if k := rec.Tombstone.KeyID; k != ar.d.keys.ID() {
			return keyMismatch(k, ar.d.keys.ID())
		}
	case rec.Document != nil:
		if err := ar.document(rec.Document); err != nil {
			return err
		}
	}
	ar.batch = append(ar.batch, rec)
	if ar.chunks >= importBatch {
		return ar.flush(ctx)
	}
	return nil
}

// document resolves an archived document's tier, drops or refuses other
// embedders' vectors and, when writing, fences its chunks again.
func (ar *archiveRead) document(d *ingestd.ArchivedDocument) error {
	if t := provenance.Resolve(d.Tier); t != d.Tier {
		ar.res.UnknownTiers[d.Tier]++
		d.Tier = t
	}
	for i := range d.Chunks {
		c := &d.Chunks[i]
		c.Tier = d.Tier
		if len(c.Embedding) == 0 || c.EmbedderID == ar.want {
			continue
		}
		if !ar.reindex {
			return embedderMismatch(c.EmbedderID, ar.want)
		}
		c.Embedding, c.EmbedderID = nil, ""
	}
	if ar.write != nil {
		ar.refence(&d.Document, d.Chunks)
	}
	ar.chunks += len(d.Chunks) + 1
	return nil
}

func (ar *archiveRead) flush(ctx context.Context) error {
	if len(ar.batch) > 0 && ar.write != nil {
		if err := ar.write(ctx, ar.batch); err != nil {
			return err
		}
	}
	ar.batch, ar.chunks = ar.batch[:0], 0
	return nil
}

// Refencer returns what fences a document's chunks again from their text
// for a door other than the pipeline (import, restore): the one fence
// (pipeline.Refence), naming the tier in force under the installations
// configured — never above what they declare, whatever the stamp says.
func Refencer(insts []ingestd.Installation) func(*ingestd.Document, []ingestd.Chunk) {
	decls := provenance.Declare(insts)
	return func(d *ingestd.Document, chunks []ingestd.Chunk) {
		pipeline.Refence(d, decls.InForce(ingestd.TierFacts{Installation: d.Installation, SourceKind: d.SourceKind, Tier: d.Tier, Meta: d.Meta}), chunks)
	}
}

func embedderMismatch(theirs, ours string) error {
	return ingestd.Errorf(ingestd.ECONFLICT, "the archive's vectors were made by %s; this deployment embeds with %s, and vectors of two embedders "+
		"are never mixed: configure the exporting deployment's embedder, or import with --reindex to re-embed those chunks with %s", theirs, ours, ours)
}

func keyMismatch(theirs, ours string) error {
	return ingestd.Errorf(ingestd.ECONFLICT, "the archive's erasure tombstones were made with erasure key %s; this deployment's key is %s, "+
		"with which they would match nothing: give this deployment the exporting one's key (erasure.key_env, or its data_dir/erasure.key) and import again", theirs, ours)
}

// Reembed embeds every chunk whose vector the daemon's embedder did not
// make, in batches of batch, telling progress the running total, and
// returns how many it embedded.
func (d *Daemon) Reembed(ctx context.Context, batch int, progress func(int)) (int, error) {
	id := d.embedder.ID()
	total, after := 0, ""
	for {
		chunks, err := d.store.ChunksToEmbed(ctx, id, after, batch)
		if err != nil {
			return total, err
		}
		if len(chunks) == 0 {
			return total, nil
		}
		texts := make([]string, len(chunks))
		for i, c := range chunks {
			texts[i] = c.Text
		}
		vecs, err := d.embedder.Embed(ctx, texts)
		if err != nil {
			return total, err
		}
		m := make(map[string][]float32, len(chunks))
		for i, c := range chunks {
			m[c.ID] = vecs[i]
		}
		if err := d.store.SetEmbeddings(ctx, id, m); err != nil {
			return total, err
		}
		total += len(chunks)
		after = chunks[len(chunks)-1].ID
		progress(total)
	}
}

// plural is "1 document", "2 documents".
func plural[N int | int64](n N, noun string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
