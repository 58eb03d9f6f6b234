package textindex

import (
	"math"
	"slices"
)

// BM25 parameters.
const (
	k1 = 1.2
	b  = 0.75
)

// slack inflates every upper bound a little, so that a bound summed in
// another order than the exact score can never prune a row that ties.
const slack = 1 + 1e-9

const noRow = math.MaxUint32

// Result is one ranked row.
type Result struct {
	Key   int64
	Group int32
	Score float64 // higher is better
}

// stats are the collection statistics of one search.
type stats struct {
	avg [NumFields]float64 // per field, rounded to an integer; at least 1
}

// cursor walks one query term's postings.
type cursor struct {
	t    *term
	id   uint32
	idf  [NumFields]float64
	ub   float64 // bound on the term's weighted BM25 in any row
	i    int     // current posting
	bIdx int     // block whose bound is cached in bUB, -1 for none
	bUB  float64
	// textOnly[tf][lb] is postingBound of a posting with the term tf
	// times (1 to textOnlyTF) in the text and not in the title or heading
	// (most postings), lb its packed text length.
	textOnly *[textOnlyTF + 1][256]float64
}

func (c *cursor) row() uint32 {
	if c.i < len(c.t.rows) {
		return c.t.rows[c.i]
	}
	return noRow
}

// seek moves to the first posting at or after row d.
func (c *cursor) seek(d uint32) {
	rows := c.t.rows
	if c.i >= len(rows) || rows[c.i] >= d {
		return
	}
	bi := c.i / blockSize
	for bi < len(c.t.blocks) && c.t.blocks[bi].last < d {
		bi++
	}
	if bi == len(c.t.blocks) {
		c.i = len(rows)
		return
	}
	lo := max(c.i, bi*blockSize)
	hi := min((bi+1)*blockSize, len(rows))
	// The row sought is most often a few postings on: look there first.
	for end := min(lo+4, hi); lo < end; lo++ {
		if rows[lo] >= d {
			c.i = lo
			return
		}
	}
	j, _ := slices.BinarySearch(rows[lo:hi], d)
	c.i = lo + j
}

// contrib is one field's share of a term's score. Every path computes it
// with this one expression, so that bounds and scores agree bit for bit.
func contrib(w, idf, tf, l, al float64) float64 {
	return w * idf * tf * (k1 + 1) / (tf + k1*(1-b+b*l/al))
}

// bound is the highest contrib summed over fields given, per field, the
// highest tf and the shortest length of the rows it covers.
func (c *cursor) bound(st *stats, maxTF, minLen [NumFields]uint32) float64 {
	s := 0.0
	for f := 0; f < NumFields; f++ {
		if maxTF[f] == 0 {
			continue
		}
		s += contrib(weights[f], c.idf[f], float64(maxTF[f]), float64(minLen[f]), st.avg[f])
	}
	return s * slack
}

func (c *cursor) blockBound(st *stats, bi int) float64 {
	if c.bIdx != bi {
		bl := &c.t.blocks[bi]
		c.bIdx, c.bUB = bi, c.bound(st, bl.maxTF, bl.minLen)
	}
	return c.bUB
}

// Search returns the k best rows for the query words whose group is
// allowed (allowed[group]; nil allows every group), best first, ties by
// lower key. Each word is one token as Tokenize splits text (store/sqlite
// splits queries that way); it is stemmed here. Words no live row holds
// are ignored; a word given twice counts twice.
//
// The score is BM25 summed over the words and fields, times the share of
// the (held) words the row contains. Returns nil when no word is held.
func (x *Index) Search(words []string, allowed []bool, k int) []Result {
	if k <= 0 || x.live == 0 {
		return nil
	}
	var buf []byte
	cur := make([]cursor, 0, len(words))
	for _, w := range words {
		buf = appendStem(buf[:0], w)
		id, ok := x.dict[string(buf)]
		if !ok || x.terms[id].n == 0 {
			continue
		}
		cur = append(cur, cursor{t: x.terms[id], id: id, bIdx: -1})
	}
	p := len(cur)
	if p == 0 {
		return nil
	}
	// Score order: rarest first.
	slices.SortStableFunc(cur, func(a, b cursor) int { return int(a.t.n) - int(b.t.n) })

	n := float64(uint32(x.live))
	var st stats
	for f := 0; f < NumFields; f++ {
		// The average field length as FTS4's matchinfo 'a' gives it:
		// (tokens + rows/2) / rows, in integers.
		al := float64(uint32((uint64(uint32(x.total[f])) + uint64(x.live)/2) / uint64(x.live)))
		if al <= 0 {
			al = 1
		}
		st.avg[f] = al
	}
	for i := range cur {
		c := &cur[i]
		for f := 0; f < NumFields; f++ {
			df := float64(c.t.df[f])
			c.idf[f] = math.Log(1 + (n-df+0.5)/(df+0.5))
		}
		c.ub = c.bound(&st, c.t.maxTF, c.t.minLen)
		c.textOnly = new([textOnlyTF + 1][256]float64)
		for tf := 1; tf <= textOnlyTF; tf++ {
			for lb := range c.textOnly[tf] {
				c.textOnly[tf][lb] = contrib(weights[FieldText], c.idf[FieldText], float64(tf), float64(unpackLen(uint8(lb))), st.avg[FieldText]) * slack
			}
		}
	}

	// MaxScore: ord lists the terms by bound, ascending; the first nonEss
	// of them cannot, together, lift a row above the threshold, so only
	// rows of the others (the essential terms) are candidates.
	ord := make([]int, p)
	for i := range ord {
		ord[i] = i
	}
	slices.SortStableFunc(ord, func(a, b int) int {
		switch {
		case cur[a].ub < cur[b].ub:
			return -1
		case cur[a].ub > cur[b].ub:
			return 1
		}
		return 0
	})
	prefix := make([]float64, p+1)
	for j, i := range ord {
		prefix[j+1] = prefix[j] + cur[i].ub
	}
	fp := float64(p)
	h := topHeap{k: k}
	tfs := make([][NumFields]uint32, p)
	at := make([]int, p) // per term, its posting at the row under test + 1; 0 when absent
	nonEss := 0
	// The last block check that passed: for these essential terms and
	// threshold, every row up to passedEnd may beat the threshold.
	passedEss, passedTheta, passedEnd := -1, 0.0, uint32(0)
	for {
		full := len(h.items) == k
		theta, thetaP := 0.0, 0.0 // thetaP is theta*p: bounds times m are compared with it
		if full {
			theta = h.items[0].score
			thetaP = theta * fp
			// A row holding only the first m terms scores at most
			// prefix[m] * m/p.
			for nonEss < p && prefix[nonEss+1]*float64(nonEss+1) < thetaP {
				nonEss++
			}
		}
		if nonEss == p {
			break
		}
		d := uint32(noRow)
		for _, i := range ord[nonEss:] {
			d = min(d, cur[i].row())
		}
		if d == noRow {
			break
		}
		if full && (nonEss != passedEss || theta != passedTheta || d > passedEnd) {
			// Every row up to end holds essential terms only from their
			// cursors' current blocks: skip them all when those blocks
			// cannot beat the threshold.
			bound, end := prefix[nonEss], uint32(noRow)
			for _, i := range ord[nonEss:] {
				c := &cur[i]
				if c.i >= len(c.t.rows) {
					continue
				}
				bi := c.i / blockSize
				bound += c.blockBound(&st, bi)
				end = min(end, c.t.blocks[bi].last)
			}
			if bound < theta {
				for _, i := range ord[nonEss:] {
					cur[i].seek(end + 1)
				}
				continue
			}
			passedEss, passedTheta, passedEnd = nonEss, theta, end
		}
		// The row is bounded before it is scored: each term it holds
		// counts its posting's bound (postingBound), which reads nothing
		// of the row itself, and only a row whose bounds can beat the
		// threshold reads its lengths to be scored exactly. Essential
		// terms at d: note their postings and move past d. (A term's
		// entry in at is set before it is read; a pruned row reads none.)
		m, bnd := 0, 0.0
		for _, i := range ord[nonEss:] {
			c := &cur[i]
			at[i] = 0
			if c.row() != d {
				continue
			}
			bnd += x.postingBound(c, &st, c.i)
			at[i] = c.i + 1
			m++
			c.i++
		}
		// Non-essential terms, the most promising first, while the row
		// can still beat the threshold.
		rest, restN, pruned := prefix[nonEss], nonEss, false
		for j := nonEss - 1; j >= 0; j-- {
			if full && (bnd+rest)*float64(m+restN) < thetaP {
				pruned = true
				break
			}
			c := &cur[ord[j]]
			at[ord[j]] = 0
			c.seek(d)
			if c.row() == d {
				bnd += x.postingBound(c, &st, c.i)
				at[ord[j]] = c.i + 1
				m++
			}
			rest -= c.ub
			restN--
		}
		if pruned || full && bnd*float64(m) < thetaP || x.isDead(d) {
			continue
		}
		if allowed != nil {
			g := x.groups[d]
			if g < 0 || int(g) >= len(allowed) || !allowed[g] {
				continue
			}
		}
		for i := range cur {
			tfs[i] = [NumFields]uint32{}
			if at[i] != 0 {
				tfs[i] = x.tfs(cur[i].t, cur[i].id, at[i]-1)
			}
		}
		h.push(scoredRow{score: x.score(cur, &st, d, tfs), key: x.keys[d], row: d})
	}
	out := h.sorted()
	res := make([]Result, len(out))
	for i, r := range out {
		res[i] = Result{Key: r.key, Group: x.groups[r.row], Score: r.score}
	}
	return res
}

// textOnlyTF is the highest text tf of the postings whose bounds a
// search tabulates.
const textOnlyTF = 3

// postingBound bounds the contribution of posting i of the cursor's term
// without reading its row: the text field's from the length the posting
// carries (a lower bound of it), the title's and heading's from the
// shortest of the posting's block. It is never below the contribution
// score computes.
func (x *Index) postingBound(c *cursor, st *stats, i int) float64 {
	if b := c.t.tfs[i]; b <= textOnlyTF { // packTF of a text-only posting is its tf
		return c.textOnly[b][c.t.lens[i]]
	}
	tf := x.tfs(c.t, c.id, i)
	s := 0.0
	if tf[FieldText] != 0 {
		s += contrib(weights[FieldText], c.idf[FieldText], float64(tf[FieldText]), float64(unpackLen(c.t.lens[i])), st.avg[FieldText])
	}
	bl := &c.t.blocks[i/blockSize]
	for f := FieldText + 1; f < NumFields; f++ {
		if tf[f] != 0 {
			s += contrib(weights[f], c.idf[f], float64(tf[f]), float64(bl.minLen[f]), st.avg[f])
		}
	}
	return s * slack
}

// score is the exact score of row d given each term's tfs there, summed
// by term in query order, then by field.
func (x *Index) score(cur []cursor, st *stats, d uint32, tfs [][NumFields]uint32) float64 {
	score, matched := 0.0, 0
	for i := range cur {
		hit := false
		for f := 0; f < NumFields; f++ {
			tf := float64(tfs[i][f])
			if tf == 0 {
				continue
			}
			score += contrib(weights[f], cur[i].idf[f], tf, float64(x.lens[int(d)*NumFields+f]), st.avg[f])
			hit = true
		}
		if hit {
			matched++
		}
	}
	return score * float64(matched) / float64(len(cur))
}

type scoredRow struct {
	score float64
	key   int64
	row   uint32
}

// better orders rows: higher score first, then lower key.
func better(a, b scoredRow) bool {
	return a.score > b.score || (a.score == b.score && a.key < b.key)
}

// topHeap keeps the k best rows: a heap with the worst at the root.
type topHeap struct {
	k     int
	items []scoredRow
}

func (h *topHeap) push(r scoredRow) {
	if len(h.items) < h.k {
		h.items = append(h.items, r)
		i := len(h.items) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !better(h.items[p], h.items[i]) {
				break
			}
			h.items[p], h.items[i] = h.items[i], h.items[p]
			i = p
		}
		return
	}
	if !better(r, h.items[0]) {
		return
	}
	h.items[0] = r
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h.items) {
			return
		}
		m := l
		if rr := l + 1; rr < len(h.items) && better(h.items[l], h.items[rr]) {
			m = rr
		}
		if !better(h.items[i], h.items[m]) {
			return
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
}

func (h *topHeap) sorted() []scoredRow {
	out := slices.Clone(h.items)
	slices.SortFunc(out, func(a, b scoredRow) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	})
	return out
}
