// Package textindex is the SQLite store's full-text index: an in-memory
// inverted index over chunk rows ranked by BM25 over three fields (text,
// title, heading; weights 1, 0.5, 0.5) — per-field BM25 with k1 1.2, b
// 0.75, Lucene's idf and per-field document frequencies and average
// lengths (rounded to integers), times the share of the query's terms a
// row holds. It began as the twin of an FTS4 table and still scores as
// FTS4's matchinfo('pcnalx') would, with SQLite's porter tokenizer plus
// lexnorm's number words and synonyms (given the same rows, none with a
// number word or synonym, the same scores bit for bit); the store builds
// it from the chunks' own text and saves it with Write (snapshot.go).
//
// Search finds the top k without scoring every posting of common terms:
// MaxScore over per-term upper bounds, with per-block (64 postings) bounds
// to skip runs of the essential lists. Removal is lazy: a removed row is
// tombstoned and its statistics withdrawn at once; postings are compacted
// when tombstones pass a quarter of the rows.
//
// It knows nothing of documents or tiers: callers give every row a small
// integer group and pass which groups a search may return. It never
// touches storage. An Index is not safe for concurrent mutation;
// concurrent Search calls are safe when no mutation runs beside them.
package textindex

import (
	"encoding/binary"
	"slices"
	"strings"
)

// Fields of a row, in score order, and their weights (a word in the
// chunk's own text counts most).
const (
	FieldText = iota
	FieldTitle
	FieldHeading
	NumFields
)

// weights are the per-field BM25 weights.
var weights = [NumFields]float64{1.0, 0.5, 0.5}

// blockSize is how many postings share one block bound.
const blockSize = 64

// Index is an inverted index. The zero value is not usable: call New.
type Index struct {
	dict  map[string]uint32 // term -> term id
	terms []*term

	// Rows, by row number (insertion order; compaction renumbers).
	keys   []int64
	groups []int32
	lens   []uint32 // NumFields per row: tokens in each field
	fwdOff []int    // row's term ids in fwd: fwd[fwdOff[r]:fwdOff[r+1]]
	fwd    []byte   // varint deltas of each row's sorted term ids
	dead   []uint64 // tombstones, one bit per row
	pos    map[int64]uint32

	live  int                         // rows not removed
	nDead int                         // tombstoned rows
	total [NumFields]uint64           // tokens in each field over live rows
	tfBig map[tfKey][NumFields]uint32 // the tfs of postings whose packed byte is tfEscape
	raw   map[string]uint32           // words as written -> term id, to skip stemming; at most maxRaw
	add   addScratch                  // reused by Add
}

// term is one posting list: rows ascending, one packed byte of tfs per
// posting (packTF) and one of the row's text length (packLen), block
// bounds, live counts.
type term struct {
	rows   []uint32
	tfs    []uint8 // packTF of the posting's tfs
	lens   []uint8 // packLen of the row's text length
	blocks []block
	df     [NumFields]uint32 // live rows with the term in each field
	n      uint32            // live rows with the term in any field
	maxTF  [NumFields]uint32 // over every posting ever added since the last compaction
	minLen [NumFields]uint32 // of the field, over postings with the term in it
}

// block bounds the postings [i*blockSize, (i+1)*blockSize) of a term:
// the last row, and per field the highest tf and shortest field length.
type block struct {
	last   uint32
	maxTF  [NumFields]uint32
	minLen [NumFields]uint32
}

type tfKey struct {
	term, row uint32
}

// A posting's tfs in the text, title and heading fields are packed in one
// byte: text in the low five bits, title in the next two, heading in the
// top one. A posting whose tfs do not fit (text over 31, title over 2,
// heading over 1: rare, since titles and headings are short and chunks a
// few hundred words) is tfEscape, which no fitting posting packs to (its
// title bits would be 3), and keeps its tfs in Index.tfBig.
const tfEscape = 0xff

func packTF(tf [NumFields]uint32) (uint8, bool) {
	if tf[FieldText] > 31 || tf[FieldTitle] > 2 || tf[FieldHeading] > 1 {
		return tfEscape, false
	}
	return uint8(tf[FieldText] | tf[FieldTitle]<<5 | tf[FieldHeading]<<7), true
}

func unpackTF(b uint8) [NumFields]uint32 {
	return [NumFields]uint32{uint32(b & 31), uint32(b >> 5 & 3), uint32(b >> 7)}
}

// packLen packs a text length in a byte that unpackLen turns into a lower
// bound of it: exact below 128, then in steps of 4 up to 636. A posting
// carries it so that a search can bound the posting's score without
// reading the row's lengths (a cache miss a posting on a large index).
func packLen(l uint32) uint8 {
	if l < 128 {
		return uint8(l)
	}
	return uint8(128 + min((l-128)/4, 127))
}

func unpackLen(b uint8) uint32 {
	if b < 128 {
		return uint32(b)
	}
	return 128 + 4*uint32(b-128)
}

// maxRaw bounds the cache of words as written.
const maxRaw = 1 << 18

type addScratch struct {
	stem  []byte
	slot  []int32 // term id -> index in ids+1, valid when stamp matches
	stamp []uint32
	gen   uint32
	ids   []uint32
	tf    [][NumFields]uint32
}

// New returns an empty index.
func New() *Index {
	return &Index{dict: map[string]uint32{}, pos: map[int64]uint32{}, fwdOff: []int{0}, tfBig: map[tfKey][NumFields]uint32{}, raw: map[string]uint32{}}
}

// Len is the number of rows (not removed).
func (x *Index) Len() int { return x.live }

// Group returns the group of the row with the key, and whether the index
// holds it.
func (x *Index) Group(key int64) (int32, bool) {
	row, ok := x.pos[key]
	if !ok {
		return 0, false
	}
	return x.groups[row], true
}

// Terms is the number of distinct terms held (some may have no live row
// until the next compaction).
func (x *Index) Terms() int { return len(x.terms) }

// Add inserts the row with the key, or replaces it. fields are the text,
// title and heading (any missing field is empty); they are tokenized here
// and not kept.
func (x *Index) Add(key int64, group int32, fields ...string) {
	if _, ok := x.pos[key]; ok {
		x.Remove(key)
	}
	s := &x.add
	s.gen++
	if s.gen == 0 { // wrapped: stale stamps could collide
		clear(s.stamp)
		s.gen = 1
	}
	s.ids, s.tf = s.ids[:0], s.tf[:0]
	var lens [NumFields]uint32
	for f := 0; f < NumFields && f < len(fields); f++ {
		words(fields[f], func(w string) {
			lens[f]++
			id, ok := x.raw[w]
			if !ok {
				s.stem = appendStem(s.stem[:0], w)
				if id, ok = x.dict[string(s.stem)]; !ok {
					id = uint32(len(x.terms))
					x.dict[string(s.stem)] = id
					x.terms = append(x.terms, &term{})
				}
				if len(x.raw) < maxRaw {
					x.raw[strings.Clone(w)] = id
				}
			}
			if int(id) >= len(s.slot) {
				n := max(2*len(s.slot), int(id)+1, 1024)
				s.slot = slices.Grow(s.slot, n-len(s.slot))[:n]
				s.stamp = slices.Grow(s.stamp, n-len(s.stamp))[:n]
			}
			if s.stamp[id] != s.gen {
				s.stamp[id] = s.gen
				s.slot[id] = int32(len(s.ids))
				s.ids = append(s.ids, id)
				s.tf = append(s.tf, [NumFields]uint32{})
			}
			s.tf[s.slot[id]][f]++
		})
	}
	row := uint32(len(x.keys))
	x.keys = append(x.keys, key)
	x.groups = append(x.groups, group)
	x.lens = append(x.lens, lens[:]...)
	if int(row)/64 >= len(x.dead) {
		x.dead = append(x.dead, 0)
	}
	x.pos[key] = row
	x.live++
	for f := range lens {
		x.total[f] += uint64(lens[f])
	}
	for i, id := range s.ids {
		x.terms[id].push(x, id, row, s.tf[i], lens)
	}
	// Forward list: sorted term ids as varint deltas, for Remove.
	slices.Sort(s.ids)
	prev := uint32(0)
	for _, id := range s.ids {
		x.fwd = binary.AppendUvarint(x.fwd, uint64(id-prev))
		prev = id
	}
	x.fwdOff = append(x.fwdOff, len(x.fwd))
}

// push appends a posting of row (the newest row) to the term.
func (t *term) push(x *Index, id, row uint32, tf [NumFields]uint32, lens [NumFields]uint32) {
	if len(t.rows)%blockSize == 0 {
		t.blocks = append(t.blocks, block{minLen: [NumFields]uint32{^uint32(0), ^uint32(0), ^uint32(0)}})
		if len(t.rows) == 0 {
			t.minLen = [NumFields]uint32{^uint32(0), ^uint32(0), ^uint32(0)}
		}
	}
	t.rows = append(t.rows, row)
	t.lens = append(t.lens, packLen(lens[FieldText]))
	b := &t.blocks[len(t.blocks)-1]
	b.last = row
	t.n++
	packed, ok := packTF(tf)
	t.tfs = append(t.tfs, packed)
	if !ok {
		x.tfBig[tfKey{id, row}] = tf
	}
	for f, v := range tf {
		if v == 0 {
			continue
		}
		t.df[f]++
		t.maxTF[f] = max(t.maxTF[f], v)
		t.minLen[f] = min(t.minLen[f], lens[f])
		b.maxTF[f] = max(b.maxTF[f], v)
		b.minLen[f] = min(b.minLen[f], lens[f])
	}
}

// tfs are the term frequencies of posting i of term id in every field.
func (x *Index) tfs(t *term, id uint32, i int) [NumFields]uint32 {
	b := t.tfs[i]
	if b == tfEscape {
		return x.tfBig[tfKey{id, t.rows[i]}]
	}
	return unpackTF(b)
}

func (x *Index) isDead(row uint32) bool { return x.dead[row/64]&(1<<(row%64)) != 0 }

// Remove deletes the row with the key, reporting whether it was there. Its
// statistics leave the index at once; its postings at the next compaction.
func (x *Index) Remove(key int64) bool {
	row, ok := x.pos[key]
	if !ok {
		return false
	}
	delete(x.pos, key)
	x.dead[row/64] |= 1 << (row % 64)
	x.live--
	x.nDead++
	for f := 0; f < NumFields; f++ {
		x.total[f] -= uint64(x.lens[int(row)*NumFields+f])
	}
	fwd := x.fwd[x.fwdOff[row]:x.fwdOff[row+1]]
	id := uint32(0)
	for len(fwd) > 0 {
		d, n := binary.Uvarint(fwd)
		fwd = fwd[n:]
		id += uint32(d)
		t := x.terms[id]
		i, found := slices.BinarySearch(t.rows, row)
		if !found {
			continue
		}
		t.n--
		for f, v := range x.tfs(t, id, i) {
			if v != 0 {
				t.df[f]--
			}
		}
	}
	if x.nDead > 1024 && x.nDead > x.live/4 {
		x.Compact()
	}
	return true
}

// Compact drops the postings of removed rows and renumbers the rows. Remove
// calls it when tombstones pass a quarter of the rows.
func (x *Index) Compact() {
	if x.nDead == 0 {
		return
	}
	remap := make([]uint32, len(x.keys)) // old row -> new row + 1, 0 when dead
	n := uint32(0)
	for r := range x.keys {
		if !x.isDead(uint32(r)) {
			n++
			remap[r] = n
		}
	}
	keys, groups, lens := x.liveRows(remap, n)
	// Rebuild the postings; terms with no live row are dropped and the
	// term ids renumbered.
	oldTerms := x.terms
	idMap := make([]uint32, len(oldTerms)) // old id -> new id + 1
	dict := make(map[string]uint32, len(x.dict))
	for s, id := range x.dict {
		if oldTerms[id].n > 0 {
			dict[s] = 0 // numbered below, in old id order
		}
	}
	var terms []*term
	for id, t := range oldTerms {
		if t.n == 0 {
			continue
		}
		idMap[id] = uint32(len(terms)) + 1
		terms = append(terms, &term{})
	}
	for s := range dict {
		dict[s] = idMap[x.dict[s]] - 1
	}
	tfBig := map[tfKey][NumFields]uint32{}
	for id, t := range oldTerms {
		if idMap[id] == 0 {
			continue
		}
		nid := idMap[id] - 1
		nt := terms[nid]
		nt.rows = make([]uint32, 0, t.n)
		nt.tfs = make([]uint8, 0, t.n)
		nt.lens = make([]uint8, 0, t.n)
		nx := &Index{tfBig: tfBig}
		for i, r := range t.rows {
			if remap[r] == 0 {
				continue
			}
			nr := remap[r] - 1
			tf := x.tfs(t, uint32(id), i)
			var l [NumFields]uint32
			for f := 0; f < NumFields; f++ {
				l[f] = lens[int(nr)*NumFields+f]
			}
			nt.push(nx, nid, nr, tf, l)
		}
	}
	fwd, fwdOff := x.renumberForward(remap, idMap, n)
	pos := make(map[int64]uint32, n)
	for r, k := range keys {
		pos[k] = uint32(r)
	}
	x.dict, x.terms, x.tfBig = dict, terms, tfBig
	x.keys, x.groups, x.lens, x.fwd, x.fwdOff, x.pos = keys, groups, lens, fwd, fwdOff, pos
	x.dead = make([]uint64, (n+63)/64)
	x.nDead = 0
	x.add = addScratch{}
	x.raw = map[string]uint32{} // term ids changed
}

// liveRows returns the keys, groups and field lengths of the rows remap
// keeps (n of them), in row order.
func (x *Index) liveRows(remap []uint32, n uint32) (keys []int64, groups []int32, lens []uint32) {
	keys = make([]int64, 0, n)
	groups = make([]int32, 0, n)
	lens = make([]uint32, 0, int(n)*NumFields)
	for r, k := range x.keys {
		if remap[r] != 0 {
			keys = append(keys, k)
			groups = append(groups, x.groups[r])
			lens = append(lens, x.lens[r*NumFields:(r+1)*NumFields]...)
		}
	}
	return keys, groups, lens
}

// renumberForward returns the forward lists of the rows remap keeps, with
// their term ids renumbered by idMap (old id -> new id + 1, 0 for a
// dropped term), and their offsets.
func (x *Index) renumberForward(remap, idMap []uint32, n uint32) ([]byte, []int) {
	var fwd []byte
	fwdOff := make([]int, 1, n+1)
	var ids []uint32
	for r := range x.keys {
		if remap[r] == 0 {
			continue
		}
		ids = ids[:0]
		b := x.fwd[x.fwdOff[r]:x.fwdOff[r+1]]
		id := uint32(0)
		for len(b) > 0 {
			d, k := binary.Uvarint(b)
			b = b[k:]
			id += uint32(d)
			if idMap[id] != 0 {
				ids = append(ids, idMap[id]-1)
			}
		}
		slices.Sort(ids)
		prev := uint32(0)
		for _, id := range ids {
			fwd = binary.AppendUvarint(fwd, uint64(id-prev))
			prev = id
		}
		fwdOff = append(fwdOff, len(fwd))
	}
	return fwd, fwdOff
}

// Trim releases the spare capacity of every growable array, which appends
// leave at up to a quarter or more of what they hold: call it after a bulk
// load. Later appends grow the arrays again.
func (x *Index) Trim() {
	for _, t := range x.terms {
		t.rows = slices.Clip(slices.Clone(t.rows))
		t.tfs = slices.Clip(slices.Clone(t.tfs))
		t.lens = slices.Clip(slices.Clone(t.lens))
		t.blocks = slices.Clip(slices.Clone(t.blocks))
	}
	x.keys = slices.Clip(slices.Clone(x.keys))
	x.groups = slices.Clip(slices.Clone(x.groups))
	x.lens = slices.Clip(slices.Clone(x.lens))
	x.fwdOff = slices.Clip(slices.Clone(x.fwdOff))
	x.fwd = slices.Clip(slices.Clone(x.fwd))
	x.dead = slices.Clip(slices.Clone(x.dead))
}

// Bytes estimates the memory the index holds, in bytes (slices by
// capacity, maps by a rough per-entry cost).
func (x *Index) Bytes() int {
	b := cap(x.keys)*8 + cap(x.groups)*4 + cap(x.lens)*4 + cap(x.fwdOff)*8 + cap(x.fwd) + cap(x.dead)*8
	b += len(x.pos) * 24
	b += len(x.tfBig) * 40
	for w := range x.raw {
		b += len(w) + 16 + 8
	}
	for s := range x.dict {
		b += len(s) + 16 + 8
	}
	for _, t := range x.terms {
		b += 8 + 152 + cap(t.rows)*4 + cap(t.tfs) + cap(t.lens) + cap(t.blocks)*28
	}
	return b
}
