package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/sqlite/internal/textindex"
	"github.com/ingestd/ingestd/store/sqlite/internal/vecindex"
)

// SearchVector ranks chunks by cosine similarity to v, best first. Only
// vectors of one embedder are compared: f.EmbedderID, or when empty the
// embedder of the most recently written vector with len(v) dimensions.
// The in-memory index is loaded on the first call and catches up with
// every commit (this process's or another's) before each search. Returns
// EINVALID for an empty v or limit < 1.
func (s *Store) SearchVector(ctx context.Context, v []float32, f ingestd.Filter, limit int) ([]ingestd.Hit, error) {
	if limit <= 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "limit %d: must be positive", limit)
	}
	if len(v) == 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "empty query vector")
	}
	if err := s.vec.sync(ctx); err != nil {
		return nil, err
	}
	for k := rescoreCandidates(limit); ; k *= 4 {
		cands, unseen := s.vec.search(v, f, k)
		hits, err := s.rescore(ctx, v, cands, limit)
		if err != nil {
			return nil, err
		}
		// The answer is exact when no row the index left out can reach
		// the limit-th exact score (or tie with it); else ask again for
		// more candidates, at worst every row.
		if len(hits) >= limit && unseen < hits[limit-1].Score || math.IsInf(unseen, -1) {
			return hits, nil
		}
	}
}

// rescoreCandidates is how many of the index's best estimates are rescored
// exactly to return limit hits at first: the exact top 10 was inside the
// top 20 estimates for every query measured (package vecindex's
// TestRecall), and SearchVector asks for more when the error bound says a
// row outside them could still be in.
func rescoreCandidates(limit int) int { return 2*limit + 8 }

// chunkIDsSQL reads chunk ids by seq; the seqs travel as a JSON array.
const chunkIDsSQL = `SELECT seq, id FROM chunks WHERE seq IN (SELECT value FROM json_each(?))`

// withChunkIDs fills in the chunk ids of hits, which the in-memory indexes
// know only by seq, keeping their order; a chunk deleted meanwhile is
// dropped.
func (s *Store) withChunkIDs(ctx context.Context, hits []vecHit) ([]ingestd.Hit, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	seqs := make([]int64, len(hits))
	for i, h := range hits {
		seqs[i] = h.seq
	}
	st, err := s.stmt(ctx, chunkIDsSQL)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, seqsJSON(seqs))
	if err != nil {
		return nil, unavailable("read chunk ids%s", "", err)
	}
	defer rows.Close()
	ids := make(map[int64]string, len(hits))
	for rows.Next() {
		var seq int64
		var id string
		if err := rows.Scan(&seq, &id); err != nil {
			return nil, fmt.Errorf("read chunk ids: %w", err)
		}
		ids[seq] = id
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("read chunk ids%s", "", err)
	}
	out := make([]ingestd.Hit, 0, len(hits))
	for _, h := range hits {
		if id, ok := ids[h.seq]; ok {
			h.hit.ChunkID = id
			out = append(out, h.hit)
		}
	}
	return out, nil
}

// vectorsSQL reads stored vectors by seq; the seqs travel as a JSON array.
const vectorsSQL = `SELECT seq, id, embedding FROM chunks WHERE seq IN (SELECT value FROM json_each(?))`

// rescore replaces the index's estimates with the exact cosine of q and
// each candidate's stored vector and returns the best limit, ties by lower
// chunk id (ingestd.SortHits). A candidate deleted meanwhile, or whose
// vector is gone, is dropped.
//
// It reads only the candidates that can be among the best limit: one
// whose estimate plus its error bound is below the limit-th best estimate
// less its bound is beaten by at least limit others whatever their exact
// scores, so the answer is the one rescoring every candidate gives. When a
// candidate it read is gone, it reads the others too.
func (s *Store) rescore(ctx context.Context, q []float32, cands []vecHit, limit int) ([]ingestd.Hit, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	read, rest := rescoreSplit(cands, limit)
	hits, err := s.rescoreRows(ctx, q, read)
	if err == nil && len(hits) < len(read) && len(rest) > 0 {
		var more []vecHit
		more, err = s.rescoreRows(ctx, q, rest)
		hits = append(hits, more...)
	}
	if err != nil {
		return nil, err
	}
	out := make([]ingestd.Hit, len(hits))
	for i, h := range hits {
		out[i] = h.hit
	}
	ingestd.SortHits(out)
	return out[:min(limit, len(out))], nil
}

// rescoreSplit splits the candidates into those that may be among the
// best limit by exact score and those that cannot (see rescore).
func rescoreSplit(cands []vecHit, limit int) (read, rest []vecHit) {
	if len(cands) <= limit {
		return cands, nil
	}
	lows := make([]float64, len(cands))
	for i, c := range cands {
		lows[i] = c.hit.Score - c.err
	}
	slices.SortFunc(lows, func(a, b float64) int { return cmp.Compare(b, a) })
	floor := lows[limit-1] // limit candidates score at least this
	for _, c := range cands {
		if c.hit.Score+c.err < floor {
			rest = append(rest, c)
		} else {
			read = append(read, c)
		}
	}
	return read, rest
}

// rescoreRows reads the candidates' stored vectors and returns them with
// their exact cosine to q, in no order; those gone are left out.
func (s *Store) rescoreRows(ctx context.Context, q []float32, cands []vecHit) ([]vecHit, error) {
	seqs := make([]int64, len(cands))
	for i, c := range cands {
		seqs[i] = c.seq
	}
	st, err := s.stmt(ctx, vectorsSQL)
	if err != nil {
		return nil, err
	}
	rs, err := st.QueryContext(ctx, seqsJSON(seqs))
	if err != nil {
		return nil, unavailable("read vectors%s", "", err)
	}
	defer rs.Close()
	qn := 0.0
	for _, f := range q {
		qn += float64(f) * float64(f)
	}
	qn = math.Sqrt(qn)
	type exactHit struct {
		id    string
		score float64
	}
	exact := make(map[int64]exactHit, len(cands))
	for rs.Next() {
		var seq int64
		var id string
		var emb sql.RawBytes
		if err := rs.Scan(&seq, &id, &emb); err != nil {
			return nil, fmt.Errorf("read vectors: %w", err)
		}
		if len(emb) != 4*len(q) {
			continue
		}
		var dot, vn float64
		for i, f := range q {
			x := float64(math.Float32frombits(binary.LittleEndian.Uint32(emb[4*i:])))
			dot += float64(f) * x
			vn += x * x
		}
		if vn > 0 {
			exact[seq] = exactHit{id, dot / (qn * math.Sqrt(vn))}
		}
	}
	if err := rs.Err(); err != nil {
		return nil, unavailable("read vectors%s", "", err)
	}
	hits := make([]vecHit, 0, len(cands))
	for _, c := range cands {
		if e, ok := exact[c.seq]; ok {
			c.hit.ChunkID, c.hit.Score = e.id, e.score
			hits = append(hits, c)
		}
	}
	return hits, nil
}

// docMeta is what a filter looks at, as small ints, and the rest of the
// document's tier facts: its parent and the values of the mirrored
// metadata keys.
type docMeta struct {
	id               string
	inst, kind, tier int32 // indexes into vectors.names
	status           int32
	parent           string  // "" for none
	meta             []int32 // per vectors.keys, an index into names or -1; nil when none is present
	// mapped is false for an unmapped document (ingestd.Readers), which
	// no person reads; readers are its principals, indexes into names.
	mapped  bool
	readers []int32
}

// readerFacts is the document's stored readers.
func (v *vectors) readerFacts(d docMeta) ingestd.Readers {
	if !d.mapped {
		return ingestd.Readers{}
	}
	ps := make([]ingestd.Principal, len(d.readers))
	for i, n := range d.readers {
		ps[i] = ingestd.Principal(v.names[n])
	}
	return ingestd.ReadersOf(ps...)
}

// docColumns are what addDocs reads of a document: its filter fields, its
// parent, and a JSON object of its values of the mirrored keys.
func (v *vectors) docColumns() string {
	const base = "id, installation, source_kind, tier, status, coalesce(parent_id, ''), readers, "
	if len(v.keys) == 0 {
		return base + "'{}'"
	}
	keys, _ := json.Marshal(v.keys)
	return base + "(SELECT json_group_object(j.key, j.value) FROM json_each(documents.meta) j WHERE j.key IN (SELECT value FROM json_each(" +
		sqlString(string(keys)) + ")))"
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// embIndex is the vector index of one embedder, in parts: the rows of
// rejected documents apart from the others. A search scans only the parts
// that hold a row its filter allows, so the rejected block's search reads
// only the rejected rows (one document in thirty on the benchmark corpus)
// and the primary blocks' search never reads them.
type embIndex struct {
	parts   [numParts]*vecindex.Index
	lastSeq int64 // the newest chunk added, to pick the default embedder
}

// The parts of an embIndex.
const (
	partMain     = iota // documents of any status but rejected
	partRejected        // rejected documents
	numParts
)

func newEmbIndex(dims int) *embIndex {
	e := &embIndex{}
	for p := range e.parts {
		e.parts[p] = vecindex.New(dims)
	}
	return e
}

func (e *embIndex) dims() int { return e.parts[0].Dims() }

func (e *embIndex) len() int {
	n := 0
	for _, x := range e.parts {
		n += x.Len()
	}
	return n
}

func (e *embIndex) free() {
	for _, x := range e.parts {
		if x != nil {
			x.Free()
		}
	}
}

// add puts the chunk's vector in the part, out of any other.
func (e *embIndex) add(seq int64, slot int32, part int, v []float32) bool {
	for p, x := range e.parts {
		if p != part {
			x.Remove(seq)
		}
	}
	return e.parts[part].Add(seq, slot, v)
}

func (e *embIndex) remove(seq int64) bool {
	for _, x := range e.parts {
		if x.Remove(seq) {
			return true
		}
	}
	return false
}

// move moves the rows of the marked document slots out of part from into
// part to.
func (e *embIndex) move(slots []bool, from, to int) {
	for _, key := range e.parts[from].KeysOf(slots) {
		e.parts[from].MoveTo(e.parts[to], key)
	}
}

// search searches the parts marked in parts and merges their answers.
func (e *embIndex) search(q []float32, allowed []bool, parts [numParts]bool, limit int) []vecindex.Result {
	var res []vecindex.Result
	for p, x := range e.parts {
		if parts[p] && x.Len() > 0 {
			res = append(res, x.Search(q, allowed, limit, nil)...)
		}
	}
	slices.SortFunc(res, func(a, b vecindex.Result) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.Key, b.Key))
	})
	return res[:min(limit, len(res))]
}

// errBound bounds the error of any row's estimate for q in the parts
// marked in parts (vecindex.Index.ErrBound).
func (e *embIndex) errBound(q []float32, parts [numParts]bool) float32 {
	var b float32
	for p, x := range e.parts {
		if parts[p] && x.Len() > 0 {
			b = max(b, x.ErrBound(q))
		}
	}
	return b
}

// partOf is the part of an embIndex that holds the chunks of a document.
func (v *vectors) partOf(d docMeta) int { return partIn(d, v.rejectedName()) }

// partIn is partOf given the index of the name "rejected" (-1 for none).
func partIn(d docMeta, rejected int32) int {
	if d.status == rejected {
		return partRejected
	}
	return partMain
}

// rejectedName is the index of the status name "rejected" in v.names, or
// -1 when no document was ever rejected.
func (v *vectors) rejectedName() int32 {
	if i, ok := v.nameIdx[string(ingestd.StatusRejected)]; ok {
		return i
	}
	return -1
}

// vectors is the in-memory chunk index: every chunk (id and document slot),
// the filter fields of every document as small ints, one vector index per
// embedder and the full-text index (package store/sqlite/internal/textindex) that
// SearchText answers from. Both indexes follow the database through the
// same catch-up.
type vectors struct {
	s    *Store
	keys []string // the metadata keys the mirror keeps, sorted (Options.MetaKeys)

	syncMu      sync.Mutex // one catch-up at a time; guards the fields below it
	db          *sql.DB    // one dedicated connection, for PRAGMA data_version
	loaded      bool
	dataVersion int64
	maxSeq      int64 // also guarded by mu: a snapshot reads them with the indexes
	lastChange  int64
	// snapPending counts what the indexes took in since the last snapshot
	// (chunks and documents added, changed or removed); snapAt is when it
	// was written; snapRunning is whether a write is under way.
	snapPending int
	fromSnap    bool // the last full load came from a snapshot
	snapAt      time.Time
	snapRunning bool
	snapWG      sync.WaitGroup

	mu      sync.RWMutex // searches read, catch-ups write
	names   []string
	nameIdx map[string]int32
	docs    []docMeta
	docSlot map[string]int32
	byEmb   map[string]*embIndex
	text    *textindex.Index // every chunk's text, title and heading path, by seq
	docsGen int              // bumped when docs change, to drop cached filters
	moved   []int32          // documents whose part changed, for moveParts

	filterMu sync.Mutex
	filters  []cachedFilter // most recently used first, at most maxCachedFilters
}

// cachedFilter is the answer of allowed for one filter while docsGen
// stays gen.
type cachedFilter struct {
	key  string
	gen  int
	rows allowedRows
}

// allowedRows is which document slots pass a filter (allow[slot]),
// whether every slot does, and which parts of an embIndex hold an allowed
// document.
type allowedRows struct {
	allow []bool
	all   bool
	parts [numParts]bool
}

// maxCachedFilters is how many filters allowed remembers. One retrieval
// asks for at least two (the primary blocks' and the rejected block's),
// more with exclude_untrusted or grounding auto; each costs a byte a
// document.
const maxCachedFilters = 8

func newVectors(s *Store, metaKeys []string) *vectors {
	v := &vectors{s: s, keys: slices.Compact(slices.Sorted(slices.Values(metaKeys)))}
	v.reset()
	return v
}

// reset empties the indexes. Callers hold v.mu (or own v alone).
func (v *vectors) reset() {
	for _, e := range v.byEmb {
		e.free() // its blocks live outside the Go heap
	}
	v.names = nil
	v.nameIdx = map[string]int32{}
	v.docs = nil
	v.docSlot = map[string]int32{}
	v.byEmb = map[string]*embIndex{}
	v.text = textindex.New()
	v.moved = nil
	v.docsGen++
}

// close saves a snapshot of the indexes if they took anything in since
// the last one, then frees them.
func (v *vectors) close(ctx context.Context) error {
	v.snapWG.Wait()
	v.syncMu.Lock()
	defer v.syncMu.Unlock()
	var err error
	if v.loaded && v.snapPending > 0 && ctx.Err() == nil {
		if err = v.writeSnapshot(); err != nil {
			v.s.log.Warn("store.index_snapshot_failed", "error", err.Error())
		}
	}
	v.mu.Lock()
	for _, e := range v.byEmb {
		e.free()
	}
	v.byEmb = map[string]*embIndex{}
	v.mu.Unlock()
	if v.db != nil {
		return v.db.Close()
	}
	return nil
}

func (v *vectors) name(s string) int32 {
	if i, ok := v.nameIdx[s]; ok {
		return i
	}
	i := int32(len(v.names))
	v.names = append(v.names, s)
	v.nameIdx[s] = i
	return i
}

// sync brings the indexes up to date with the database: a full load the
// first time (or when the changes log was pruned past what this process
// saw), else only what changed since the last catch-up. It costs one PRAGMA
// when nothing was committed since.
func (v *vectors) sync(ctx context.Context) error {
	v.syncMu.Lock()
	defer v.syncMu.Unlock()
	if v.db == nil {
		db, err := sql.Open(driverName, v.s.path+"?_busy_timeout=5000&_query_only=1")
		if err != nil {
			return fmt.Errorf("open vector sync connection: %w", err)
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxIdleTime(0)
		db.SetConnMaxLifetime(0)
		v.db = db
	}
	var dv int64
	if err := v.db.QueryRowContext(ctx, "PRAGMA data_version").Scan(&dv); err != nil {
		return unavailable("read data version of %s", v.s.path, err)
	}
	if v.loaded && dv == v.dataVersion {
		return nil
	}
	tx, err := v.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return unavailable("begin vector sync of %s", v.s.path, err)
	}
	defer tx.Rollback()
	full := !v.loaded
	if !full {
		var pruned sql.NullInt64
		if err := tx.QueryRowContext(ctx, "SELECT value FROM store_state WHERE key = 'changes_pruned_through'").Scan(&pruned); err != nil && err != sql.ErrNoRows {
			return unavailable("read changes state of %s", v.s.path, err)
		}
		full = pruned.Int64 > v.lastChange
	}
	if full {
		start := time.Now()
		from, err := v.loadSnapshot(ctx, tx)
		if err != nil {
			return err
		}
		v.fromSnap = from
		if !from {
			if err := v.load(ctx, tx); err != nil {
				return err
			}
			v.snapPending = max(v.snapPending, 1)
			v.snapAt = time.Time{} // write one now
		}
		v.s.log.Info("store.index_loaded", "chunks", v.text.Len(), "from_snapshot", from, "took", time.Since(start).Round(time.Millisecond).String())
	} else if err := v.catchUp(ctx, tx); err != nil {
		return err
	}
	v.dataVersion = dv
	v.loaded = true
	if v.snapPending > 0 && !v.snapRunning && time.Since(v.snapAt) >= snapshotEvery &&
		(v.snapAt.IsZero() || v.snapPending >= max(1000, v.text.Len()/10)) {
		v.snapWG.Add(1)
		go func() {
			defer v.snapWG.Done()
			if err := v.saveSnapshot(); err != nil {
				v.s.log.Warn("store.index_snapshot_failed", "error", err.Error())
			}
		}()
	}
	return nil
}

// loadSnapshot replaces the indexes with the snapshot's and catches them
// up with tx, reporting whether it did. A snapshot that is missing, stale
// or damaged, or that does not hold as many chunks as the table once
// caught up, is not used (and the indexes are left for a full load).
func (v *vectors) loadSnapshot(ctx context.Context, tx *sql.Tx) (bool, error) {
	sn, err := v.readSnapshot(ctx, tx)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil && ingestd.ErrorCode(err) == ingestd.EUNAVAILABLE:
		return false, err
	case err != nil:
		v.s.log.Info("store.index_snapshot_unused", "reason", err.Error())
		return false, nil
	}
	v.use(sn)
	if err := v.catchUp(ctx, tx); err != nil {
		return false, err
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM chunks").Scan(&n); err != nil {
		return false, unavailable("count chunks of %s", v.s.path, err)
	}
	if n != v.text.Len() {
		v.s.log.Warn("store.index_snapshot_unused", "reason", fmt.Sprintf("caught up to %d chunks, the table holds %d", v.text.Len(), n))
		return false, nil
	}
	return true, nil
}

// load replaces the indexes with everything the snapshot holds.
func (v *vectors) load(ctx context.Context, tx *sql.Tx) error {
	var maxSeq, lastChange sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT (SELECT max(seq) FROM chunks), (SELECT max(id) FROM changes)").Scan(&maxSeq, &lastChange); err != nil {
		return unavailable("read index marks of %s", v.s.path, err)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.reset()
	rows, err := tx.QueryContext(ctx, "SELECT "+v.docColumns()+" FROM documents WHERE status != 'deleted'")
	if err != nil {
		return unavailable("load documents of %s", v.s.path, err)
	}
	if err := v.addDocs(rows); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM chunks").Scan(&n); err != nil {
		return unavailable("count chunks of %s", v.s.path, err)
	}
	rows, err = tx.QueryContext(ctx, "SELECT "+indexColumns+" FROM chunks c JOIN documents d ON d.id = c.document_id ORDER BY c.seq")
	if err != nil {
		return unavailable("load vectors of %s", v.s.path, err)
	}
	if err := v.addChunks(rows, n); err != nil {
		return err
	}
	v.text.Trim()
	v.maxSeq, v.lastChange = maxSeq.Int64, lastChange.Int64
	return nil
}

// catchUp applies what was committed since the last sync.
func (v *vectors) catchUp(ctx context.Context, tx *sql.Tx) error {
	seqs, docs, lastChange, err := v.changesSince(ctx, tx)
	if err != nil {
		return err
	}
	var maxSeq sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT max(seq) FROM chunks").Scan(&maxSeq); err != nil {
		return unavailable("read index marks of %s", v.s.path, err)
	}

	v.mu.Lock()
	defer v.mu.Unlock()
	// Documents whose filter fields changed, and documents of new chunks.
	if len(docs) > 0 {
		if err := inBatches(docs, func(batch []string) error {
			rows, err := tx.QueryContext(ctx, "SELECT "+v.docColumns()+" FROM documents WHERE id IN ("+
				placeholders(len(batch))+")", anys(batch)...)
			if err != nil {
				return unavailable("read changed documents of %s", v.s.path, err)
			}
			return v.addDocs(rows)
		}); err != nil {
			return err
		}
	}
	// Chunks deleted or re-embedded: drop them, then add back those that
	// still exist.
	if len(seqs) > 0 {
		for _, seq := range seqs {
			v.removeChunk(seq)
		}
		strs := make([]string, 0, len(seqs))
		for _, seq := range seqs {
			if seq <= v.maxSeq { // newer ones are read below
				strs = append(strs, fmt.Sprint(seq))
			}
		}
		if err := inBatches(strs, func(batch []string) error {
			rows, err := tx.QueryContext(ctx, `SELECT `+indexColumns+` FROM chunks c JOIN documents d ON d.id = c.document_id
				WHERE c.seq IN (`+strings.Join(batch, ",")+`)`)
			if err != nil {
				return unavailable("read changed chunks of %s", v.s.path, err)
			}
			return v.addChunks(rows, 0)
		}); err != nil {
			return err
		}
	}
	if maxSeq.Int64 > v.maxSeq {
		// New chunks may belong to documents not seen yet.
		rows, err := tx.QueryContext(ctx, `SELECT `+v.docColumns()+` FROM documents
			WHERE id IN (SELECT DISTINCT document_id FROM chunks WHERE seq > ?)`, v.maxSeq)
		if err != nil {
			return unavailable("read new documents of %s", v.s.path, err)
		}
		if err := v.addDocs(rows); err != nil {
			return err
		}
		rows, err = tx.QueryContext(ctx, `SELECT `+indexColumns+` FROM chunks c JOIN documents d ON d.id = c.document_id
			WHERE c.seq > ? ORDER BY c.seq`, v.maxSeq)
		if err != nil {
			return unavailable("read new chunks of %s", v.s.path, err)
		}
		if err := v.addChunks(rows, 0); err != nil {
			return err
		}
		v.snapPending += int(maxSeq.Int64 - v.maxSeq)
		v.maxSeq = maxSeq.Int64
	}
	v.moveParts()
	v.lastChange = lastChange
	v.snapPending += len(seqs) + len(docs)
	return nil
}

// changesSince reads the changes log after the last one applied: the
// chunk seqs and document ids it names, and its last id.
func (v *vectors) changesSince(ctx context.Context, tx *sql.Tx) (seqs []int64, docs []string, lastChange int64, err error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, chunk_seq, document_id FROM changes WHERE id > ? ORDER BY id", v.lastChange)
	if err != nil {
		return nil, nil, 0, unavailable("read changes of %s", v.s.path, err)
	}
	lastChange = v.lastChange
	for rows.Next() {
		var id int64
		var seq sql.NullInt64
		var doc sql.NullString
		if err := rows.Scan(&id, &seq, &doc); err != nil {
			rows.Close()
			return nil, nil, 0, fmt.Errorf("read changes: %w", err)
		}
		lastChange = id
		if seq.Valid {
			seqs = append(seqs, seq.Int64)
		}
		if doc.Valid {
			docs = append(docs, doc.String)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, 0, fmt.Errorf("read changes: %w", err)
	}
	return seqs, docs, lastChange, nil
}

// addDocs records (or updates) the documents the rows hold; it closes rows.
// Callers hold v.mu.
func (v *vectors) addDocs(rows *sql.Rows) error {
	defer rows.Close()
	for rows.Next() {
		var id, inst, kind, status, parent, meta string
		var tier, readers sql.NullString
		if err := rows.Scan(&id, &inst, &kind, &tier, &status, &parent, &readers, &meta); err != nil {
			return fmt.Errorf("read documents: %w", err)
		}
		m := docMeta{id: id, inst: v.name(inst), kind: v.name(kind), tier: v.name(tier.String), status: v.name(status), parent: parent,
			mapped: readers.Valid}
		for _, p := range strings.Fields(readers.String) {
			m.readers = append(m.readers, v.name(p))
		}
		if meta != "{}" {
			var values map[string]string
			if err := json.Unmarshal([]byte(meta), &values); err != nil {
				return fmt.Errorf("read metadata of %s: %w", id, err)
			}
			m.meta = make([]int32, len(v.keys))
			for i, k := range v.keys {
				m.meta[i] = -1
				if val, ok := values[k]; ok {
					m.meta[i] = v.name(val)
				}
			}
		}
		if slot, ok := v.docSlot[id]; ok {
			if v.partOf(v.docs[slot]) != v.partOf(m) {
				v.moved = append(v.moved, slot)
			}
			v.docs[slot] = m
		} else {
			v.docSlot[id] = int32(len(v.docs))
			v.docs = append(v.docs, m)
		}
	}
	v.docsGen++
	return rows.Err()
}

// moveParts moves the vectors of the documents whose part changed
// (rejected, or no longer) to their new part. It reads every row's
// document of the parts they leave, once for all of them. Callers hold
// v.mu.
func (v *vectors) moveParts() {
	if len(v.moved) == 0 {
		return
	}
	var to [numParts][]bool // per part, the documents moving into it
	for _, slot := range v.moved {
		p := v.partOf(v.docs[slot])
		if to[p] == nil {
			to[p] = make([]bool, len(v.docs))
		}
		to[p][slot] = true
	}
	v.moved = v.moved[:0]
	for _, e := range v.byEmb {
		for p, slots := range to {
			if slots == nil {
				continue
			}
			for from := range e.parts {
				if from != p {
					e.move(slots, from, p)
				}
			}
		}
	}
}

// indexColumns are what addChunks reads of a chunk c and its document d.
// The title is the document's current one: a document whose title changes
// is written with new chunks.
const indexColumns = "c.seq, c.document_id, c.embedding, c.embedder_id, c.text, d.title, c.heading_path"

// addChunks records the chunks the rows hold (indexColumns), adds their
// vectors and indexes their text; it closes rows. Callers hold v.mu.
func (v *vectors) addChunks(rows *sql.Rows, hint int) error {
	defer rows.Close()
	var (
		seq                   int64
		doc                   string
		emb                   sql.RawBytes
		embedder              string
		text, title, headings string
		buf                   []float32
	)
	for rows.Next() {
		if err := rows.Scan(&seq, &doc, &emb, &embedder, &text, &title, &headings); err != nil {
			return fmt.Errorf("read chunks: %w", err)
		}
		slot, ok := v.docSlot[doc]
		if !ok {
			continue // a chunk of a deleted document, on its way out
		}
		v.text.Add(seq, slot, text, title, headings)
		if len(emb) < 4 {
			continue
		}
		buf = decodeInto(buf, emb)
		e := v.byEmb[embedder]
		if e == nil {
			e = newEmbIndex(len(buf))
			v.byEmb[embedder] = e
			if hint > 0 {
				e.parts[partMain].Grow(hint)
			}
		}
		if e.add(seq, slot, v.partOf(v.docs[slot]), buf) {
			e.lastSeq = max(e.lastSeq, seq)
		}
	}
	return rows.Err()
}

// removeChunk drops a chunk, its text and its vector. Callers hold v.mu.
func (v *vectors) removeChunk(seq int64) {
	if !v.text.Remove(seq) {
		return // every chunk held has its text indexed
	}
	for _, e := range v.byEmb {
		if e.remove(seq) {
			return
		}
	}
}

func decodeInto(dst []float32, b []byte) []float32 {
	n := len(b) / 4
	if cap(dst) < n {
		dst = make([]float32, n)
	}
	dst = dst[:n]
	for i := range dst {
		dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return dst
}

// vecHit is a hit of the vector index with its chunk's seq and, for an
// estimate of the vector index, the bound of the estimate's error.
type vecHit struct {
	seq int64
	hit ingestd.Hit
	err float64
}

// search runs one query against the index of the chosen embedder and
// returns the best limit chunks by the index's estimate, and unseen, a
// bound on the exact score of every allowed chunk it left out (-Inf when
// it left none out).
func (v *vectors) search(q []float32, f ingestd.Filter, limit int) (hits []vecHit, unseen float64) {
	v.mu.RLock()
	defer v.mu.RUnlock()
	var e *embIndex
	if f.EmbedderID != "" {
		e = v.byEmb[f.EmbedderID]
	} else {
		for _, c := range v.byEmb {
			if c.dims() == len(q) && c.len() > 0 && (e == nil || c.lastSeq > e.lastSeq) {
				e = c
			}
		}
	}
	if e == nil || e.dims() != len(q) {
		return nil, math.Inf(-1)
	}
	rows := v.allowed(f)
	allowed := rows.allow
	if rows.all {
		allowed = nil // every row passes: the scan skips the check
	}
	res := e.search(q, allowed, rows.parts, limit)
	hits = make([]vecHit, 0, len(res))
	for _, r := range res {
		hits = append(hits, vecHit{seq: r.Key, hit: ingestd.Hit{DocumentID: v.docs[r.Group].id, Score: float64(r.Score)}, err: float64(r.Err)})
	}
	if len(res) < limit {
		return hits, math.Inf(-1) // every allowed row is a candidate
	}
	// A row left out has an estimate at most the last candidate's.
	return hits, float64(res[len(res)-1].Score) + float64(e.errBound(q, rows.parts))
}

// searchText ranks chunks by the in-memory text index: the exact top limit
// inside the filter.
func (v *vectors) searchText(terms []string, f ingestd.Filter, limit int) []vecHit {
	v.mu.RLock()
	defer v.mu.RUnlock()
	rows := v.allowed(f)
	allowed := rows.allow
	if rows.all {
		allowed = nil
	}
	var hits []vecHit
	for _, r := range v.text.Search(terms, allowed, limit) {
		hits = append(hits, vecHit{seq: r.Key, hit: ingestd.Hit{DocumentID: v.docs[r.Group].id, Score: r.Score}})
	}
	return hits
}

// allowed returns which document slots pass f. It caches the answers for
// the last few filters until documents change. Callers hold v.mu for
// reading.
func (v *vectors) allowed(f ingestd.Filter) allowedRows {
	key := filterKey(f)
	v.filterMu.Lock()
	defer v.filterMu.Unlock()
	v.filters = slices.DeleteFunc(v.filters, func(c cachedFilter) bool { return c.gen != v.docsGen })
	for i, c := range v.filters {
		if c.key == key {
			copy(v.filters[1:i+1], v.filters[:i])
			v.filters[0] = c
			return c.rows
		}
	}
	match := func(set []string) []bool {
		if len(set) == 0 {
			return nil
		}
		ok := make([]bool, len(v.names))
		for _, s := range set {
			if i, found := v.nameIdx[s]; found {
				ok[i] = true
			}
		}
		return ok
	}
	statuses := f.Statuses
	if len(statuses) == 0 {
		statuses = []ingestd.Status{ingestd.StatusActive}
	}
	var stNames []string
	for _, st := range statuses {
		if st != ingestd.StatusDeleted {
			stNames = append(stNames, string(st))
		}
	}
	okStatus := match(stNames)
	if okStatus == nil {
		okStatus = make([]bool, len(v.names))
	}
	okInst := match(anyStrings(f.Installations))
	okKind := match(anyStrings(f.SourceKinds))
	okTier := match(anyStrings(f.Tiers))
	var okReader []bool // a person's principals; nil for the service view
	if f.Reader != nil {
		okReader = make([]bool, len(v.names))
		for _, p := range f.Reader.Principals {
			if i, found := v.nameIdx[string(p)]; found {
				okReader[i] = true
			}
		}
	}
	reads := func(d docMeta) bool {
		if okReader == nil {
			return true
		}
		for _, n := range d.readers { // none for an unmapped document
			if okReader[n] {
				return true
			}
		}
		return false
	}
	rows := allowedRows{allow: make([]bool, len(v.docs)), all: true}
	rejected := v.rejectedName()
	for i, d := range v.docs {
		ok := okStatus[d.status] &&
			(okInst == nil || okInst[d.inst]) &&
			(okKind == nil || okKind[d.kind]) &&
			(okTier == nil || okTier[d.tier]) &&
			reads(d)
		rows.allow[i] = ok
		rows.all = rows.all && ok
		if ok {
			rows.parts[partIn(d, rejected)] = true
		}
	}
	if len(v.filters) == maxCachedFilters {
		v.filters = v.filters[:maxCachedFilters-1]
	}
	v.filters = slices.Insert(v.filters, 0, cachedFilter{key: key, gen: v.docsGen, rows: rows})
	return rows
}

func anyStrings[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

func filterKey(f ingestd.Filter) string {
	var b strings.Builder
	var reader []string
	if f.Reader != nil {
		reader = append(anyStrings(f.Reader.Principals), "") // "" tells a person with no principal from the service view
	}
	for _, part := range [][]string{f.Installations, f.SourceKinds, anyStrings(f.Tiers), anyStrings(f.Statuses), reader} {
		for _, s := range part {
			b.WriteString(s)
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	return b.String()
}

// facts answers TierFacts from the in-memory document mirror once it is
// loaded, after the same catch-up a search makes, so the verdict of a
// retrieval reads the tiers its search saw without another query. It
// returns each answered document's parent id in parents (nil when none
// has one), and whether the facts carry their metadata (every key asked
// for is mirrored). Ids the mirror does not hold (or all of them, before the first load), and
// documents whose parent it does not hold (a deleted one), come back in
// missing for the caller to read from the database.
func (v *vectors) facts(ctx context.Context, ids, keys []string) (out map[string]ingestd.TierFacts, parents map[string]string, missing []string, withMeta bool, err error) {
	out = make(map[string]ingestd.TierFacts, len(ids))
	withMeta = true
	for _, k := range keys {
		if _, ok := slices.BinarySearch(v.keys, k); !ok {
			withMeta = false
		}
	}
	v.syncMu.Lock()
	loaded := v.loaded
	v.syncMu.Unlock()
	if !loaded {
		return out, parents, ids, withMeta, nil
	}
	if err := v.sync(ctx); err != nil {
		return nil, nil, nil, false, err
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	fact := func(d docMeta) ingestd.TierFacts {
		f := ingestd.TierFacts{Installation: v.names[d.inst], SourceKind: v.names[d.kind], Tier: ingestd.Tier(v.names[d.tier]),
			Readers: v.readerFacts(d)}
		if withMeta && d.meta != nil {
			for _, k := range keys {
				i, _ := slices.BinarySearch(v.keys, k)
				if d.meta[i] >= 0 {
					if f.Meta == nil {
						f.Meta = map[string]string{}
					}
					f.Meta[k] = v.names[d.meta[i]]
				}
			}
		}
		return f
	}
	for _, id := range ids {
		slot, ok := v.docSlot[id]
		if !ok {
			missing = append(missing, id)
			continue
		}
		d := v.docs[slot]
		f := fact(d)
		if d.parent != "" {
			ps, ok := v.docSlot[d.parent]
			if !ok {
				missing = append(missing, id)
				continue
			}
			pf := fact(v.docs[ps])
			f.Parent = &pf
			if parents == nil {
				parents = map[string]string{}
			}
			parents[id] = d.parent
		}
		out[id] = f
	}
	return out, parents, missing, withMeta, nil
}
