package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ingestd/ingestd/internal/private"
	"github.com/ingestd/ingestd/store/sqlite/internal/binio"
	"github.com/ingestd/ingestd/store/sqlite/internal/textindex"
	"github.com/ingestd/ingestd/store/sqlite/internal/vecindex"
)

// The in-memory indexes are saved beside the database file (its path plus
// ".index") so that the next process loads them in one read instead of
// rebuilding them from every row: tokenising and quantising 100k chunks
// takes seconds, reading their snapshot a fraction of that.
//
// A snapshot is a cache, never the truth. It records the store's id and
// how far it saw the file (the newest chunk seq and changes-log id); it is
// used only when the changes log still holds everything after that point
// (nothing was pruned past it) and the file has not gone back behind it,
// and the load then catches up from there like any search does. After the
// catch-up the number of chunks must match the table's; any doubt — a
// missing, torn, corrupt, foreign or stale file, other mirrored metadata
// keys — means a full load from the rows, after which a fresh snapshot is
// written in the background.
//
// It is written after a full load, when the indexes changed by a tenth
// since the last one (at most every snapshotEvery), and on Close; always
// to a temporary file renamed into place, so a reader sees a whole
// snapshot or the previous one.
const (
	snapshotMagic = "ingestd in-memory index snapshot"
	// snapshotVersion changes with the layout and with the text index's
	// terms: a change to the tokenizer or to internal/lexnorm's tables
	// must bump it, or a snapshot would hold terms a query no longer
	// produces. 2: terms normalised by lexnorm. 3: each embedder's
	// vectors in two parts (rejected documents apart), postings carry
	// their row's text length. 4: each document's readers.
	snapshotVersion = 4
	// snapshotEvery is the least time between two snapshots written
	// because the indexes changed.
	snapshotEvery = 5 * time.Minute
)

func (s *Store) snapshotPath() string { return s.path + ".index" }

// errStale is a snapshot that does not fit the database.
var errStale = errors.New("stale")

// writeSnapshot saves the indexes. It holds v.mu for reading while it
// writes: searches go on, catch-ups wait.
func (v *vectors) writeSnapshot() (err error) {
	path := v.s.snapshotPath()
	f, err := private.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write index snapshot: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	start := time.Now()
	v.mu.RLock()
	w := binio.NewWriter(f)
	w.String(snapshotMagic)
	w.Int(snapshotVersion)
	w.I64(v.s.id)
	w.I64(v.maxSeq)
	w.I64(v.lastChange)
	w.Strings(v.keys)
	w.Strings(v.names)
	w.Int(len(v.docs))
	for _, d := range v.docs {
		w.String(d.id)
		w.String(d.parent)
		binio.Slice(w, []int32{d.inst, d.kind, d.tier, d.status})
		binio.Slice(w, d.meta)
		mapped := int32(0)
		if d.mapped {
			mapped = 1
		}
		binio.Slice(w, append([]int32{mapped}, d.readers...))
	}
	embs := make([]string, 0, len(v.byEmb))
	for name := range v.byEmb {
		embs = append(embs, name)
	}
	slices.Sort(embs)
	w.Int(len(embs))
	for _, name := range embs {
		e := v.byEmb[name]
		w.String(name)
		w.I64(e.lastSeq)
		for _, x := range e.parts {
			x.Write(w)
		}
	}
	v.text.Write(w)
	rows, lastChange := v.text.Len(), v.lastChange
	v.mu.RUnlock()
	if err := w.Finish(); err != nil {
		return fmt.Errorf("write index snapshot: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write index snapshot: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write index snapshot: %w", err)
	}
	// An erasure committed after these indexes were caught up (by
	// another process: this one reloads within Erase) must find no
	// snapshot of the rows it erased. It marks the changes log pruned past
	// every reader; a snapshot behind that mark is not put in place, and is
	// removed again if the erasure committed while it was being renamed
	// (the erasure removes or rewrites the snapshot only after its commit,
	// so one of the two always sees the other).
	if err := v.checkNotPruned(lastChange); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write index snapshot: %w", err)
	}
	if err := v.checkNotPruned(lastChange); err != nil {
		os.Remove(path)
		return err
	}
	v.s.log.Debug("index snapshot written", "path", path, "chunks", rows, "took", time.Since(start))
	return nil
}

// checkNotPruned returns errStale (wrapped) when the changes log was
// pruned, or marked by an erasure, past lastChange: a snapshot taken there
// could not be caught up, and may hold erased rows.
func (v *vectors) checkNotPruned(lastChange int64) error {
	var pruned sql.NullInt64
	err := v.db.QueryRow("SELECT value FROM store_state WHERE key = 'changes_pruned_through'").Scan(&pruned)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return unavailable("read changes state of %s", v.s.path, err)
	}
	if pruned.Int64 > lastChange {
		return fmt.Errorf("write index snapshot: %w: the changes log was pruned or erased through %d, the indexes saw %d", errStale, pruned.Int64, lastChange)
	}
	return nil
}

// snapshot is what readSnapshot read, not yet in use.
type snapshot struct {
	maxSeq, lastChange int64
	names              []string
	docs               []docMeta
	byEmb              map[string]*embIndex
	text               *textindex.Index
}

func (sn *snapshot) free() {
	for _, e := range sn.byEmb {
		e.free()
	}
}

// readSnapshot reads the snapshot and checks that tx's view of the
// database can be caught up from it. It returns errStale (wrapped) for a
// snapshot of another store, of other mirrored keys or that the changes
// log no longer covers, and binio.ErrCorrupt for a damaged file.
func (v *vectors) readSnapshot(ctx context.Context, tx *sql.Tx) (*snapshot, error) {
	f, err := os.Open(v.s.snapshotPath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	r := binio.NewReader(f, fi.Size())
	if magic := r.String(); r.Err() == nil && magic != snapshotMagic {
		return nil, fmt.Errorf("%w: not an index snapshot", binio.ErrCorrupt)
	}
	if ver := r.Int(); r.Err() == nil && ver != snapshotVersion {
		return nil, fmt.Errorf("%w: snapshot version %d, this build reads %d", errStale, ver, snapshotVersion)
	}
	id, maxSeq, lastChange := r.I64(), r.I64(), r.I64()
	keys := r.Strings()
	if err := r.Err(); err != nil {
		return nil, err
	}
	if id != v.s.id {
		return nil, fmt.Errorf("%w: a snapshot of another database", errStale)
	}
	if !slices.Equal(keys, v.keys) && !(len(keys) == 0 && len(v.keys) == 0) {
		return nil, fmt.Errorf("%w: mirrored metadata keys %v, want %v", errStale, keys, v.keys)
	}
	// The changes log must still hold everything after the snapshot, and
	// the file must not be behind it (restored from an older copy).
	var pruned, changesSeq, chunksSeq sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT value FROM store_state WHERE key = 'changes_pruned_through'),
		(SELECT seq FROM sqlite_sequence WHERE name = 'changes'), (SELECT seq FROM sqlite_sequence WHERE name = 'chunks')`).
		Scan(&pruned, &changesSeq, &chunksSeq); err != nil {
		return nil, unavailable("read index marks of %s", v.s.path, err)
	}
	if pruned.Int64 > lastChange || lastChange > changesSeq.Int64 || maxSeq > chunksSeq.Int64 {
		return nil, fmt.Errorf("%w: snapshot at change %d and chunk %d; the file has changes %d-%d and chunks up to %d",
			errStale, lastChange, maxSeq, pruned.Int64, changesSeq.Int64, chunksSeq.Int64)
	}
	sn := &snapshot{maxSeq: maxSeq, lastChange: lastChange, byEmb: map[string]*embIndex{}}
	ok := false
	defer func() {
		if !ok {
			sn.free()
		}
	}()
	sn.names = r.Strings()
	if err := v.readSnapshotDocs(r, sn); err != nil {
		return nil, err
	}
	if err := readSnapshotIndexes(r, sn); err != nil {
		return nil, err
	}
	if sn.text, err = textindex.Read(r); err != nil {
		return nil, err
	}
	if err := r.Finish(); err != nil {
		return nil, err
	}
	ok = true
	return sn, nil
}

// readSnapshotDocs reads the snapshot's documents into sn, checking that
// each names only names sn holds (binio.ErrCorrupt otherwise).
func (v *vectors) readSnapshotDocs(r *binio.Reader, sn *snapshot) error {
	nd := r.Len(8)
	sn.docs = make([]docMeta, 0, nd)
	for range nd {
		d := docMeta{id: r.String(), parent: r.String()}
		f := binio.ReadSlice[int32](r)
		d.meta = binio.ReadSlice[int32](r)
		rd := binio.ReadSlice[int32](r)
		if err := r.Err(); err != nil {
			return err
		}
		if len(f) != 4 || (d.meta != nil && len(d.meta) != len(v.keys)) || len(rd) == 0 || rd[0] != 0 && rd[0] != 1 || rd[0] == 0 && len(rd) > 1 {
			return fmt.Errorf("%w: document %s", binio.ErrCorrupt, d.id)
		}
		d.mapped, d.readers = rd[0] == 1, rd[1:]
		if len(d.readers) == 0 {
			d.readers = nil
		}
		for _, i := range d.readers {
			if i < 0 || i >= int32(len(sn.names)) {
				return fmt.Errorf("%w: document %s names %d of %d", binio.ErrCorrupt, d.id, i, len(sn.names))
			}
		}
		d.inst, d.kind, d.tier, d.status = f[0], f[1], f[2], f[3]
		for j, i := range append(f, d.meta...) {
			if i >= int32(len(sn.names)) || i < 0 && (j < len(f) || i < -1) { // a metadata value may be absent (-1)
				return fmt.Errorf("%w: document %s names %d of %d", binio.ErrCorrupt, d.id, i, len(sn.names))
			}
		}
		sn.docs = append(sn.docs, d)
	}
	return nil
}

// readSnapshotIndexes reads the snapshot's vector indexes, one per
// embedder, into sn; parts of one index must agree on dimensions.
func readSnapshotIndexes(r *binio.Reader, sn *snapshot) error {
	ne := r.Len(8)
	for range ne {
		name := r.String()
		e := &embIndex{lastSeq: r.I64()}
		if err := r.Err(); err != nil {
			return err
		}
		for p := range e.parts {
			var err error
			if e.parts[p], err = vecindex.Read(r); err != nil {
				e.free()
				return err
			}
			if p > 0 && e.parts[p].Dims() != e.parts[0].Dims() {
				e.free()
				return fmt.Errorf("%w: vector index parts of %d and %d dimensions", binio.ErrCorrupt, e.parts[0].Dims(), e.parts[p].Dims())
			}
		}
		sn.byEmb[name] = e
	}
	return nil
}

// use replaces the indexes with the snapshot's. Callers hold syncMu.
func (v *vectors) use(sn *snapshot) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.reset()
	v.names, v.docs, v.byEmb, v.text = sn.names, sn.docs, sn.byEmb, sn.text
	for i, n := range v.names {
		v.nameIdx[n] = int32(i)
	}
	v.docSlot = make(map[string]int32, len(v.docs))
	for i, d := range v.docs {
		v.docSlot[d.id] = int32(i)
	}
	v.maxSeq, v.lastChange = sn.maxSeq, sn.lastChange
}

// refreshSnapshot catches the indexes up and saves their snapshot when this
// process holds them and they took in anything since the last one. A
// process that never searched (a one-shot sync) leaves them unloaded: the
// next process to load them catches up from the last snapshot.
func (v *vectors) refreshSnapshot(ctx context.Context) error {
	v.syncMu.Lock()
	loaded := v.loaded
	v.syncMu.Unlock()
	if !loaded {
		return nil
	}
	if err := v.sync(ctx); err != nil {
		return err
	}
	v.snapWG.Wait()
	return v.saveSnapshot()
}

// saveSnapshot writes a snapshot if the indexes took in anything since the
// last one and no other write is under way. It holds syncMu only to look
// and to record, so searches and catch-ups go on meanwhile (a catch-up
// waits for the write's read lock on the indexes).
func (v *vectors) saveSnapshot() error {
	v.syncMu.Lock()
	if v.snapPending == 0 || v.snapRunning {
		v.syncMu.Unlock()
		return nil
	}
	pending := v.snapPending
	v.snapRunning, v.snapPending, v.snapAt = true, 0, time.Now()
	v.syncMu.Unlock()
	err := v.writeSnapshot()
	v.syncMu.Lock()
	v.snapRunning = false
	if err != nil {
		v.snapPending += pending
	}
	v.syncMu.Unlock()
	return err
}
