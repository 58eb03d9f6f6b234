package extract

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/ascii85"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"unicode"

	"github.com/carlos7ags/folio/core"
	"github.com/carlos7ags/folio/reader"
)

// The PDF parser builds the whole page list when it opens a file and
// walks the page tree by path: a tree that lists one node many times is
// expanded every time (a 12 KB file that lists a node of 1,000 pages
// 1,000 times makes a million pages; one more level makes a billion, and
// the process runs out of memory before any limit of ours is consulted).
// So before the parser sees a file, census scans it — top-level objects
// and the objects inside object streams, decrypting those when the file is
// encrypted with the empty password — counts its objects, and computes
// from the page-tree nodes how many pages and nodes a walk would visit.
// A page tree with a cycle, deeper than 256 levels, or that would visit
// more than the limits allow is refused here.

// census is what a scan of the raw file found.
type census struct {
	objects  map[int]struct{}    // object numbers defined
	nodes    map[int][]int       // page-tree node -> kids (object numbers; <0 for inline dicts)
	arrays   map[int][]int       // array objects of references, for Kids given by reference
	kidsRef  map[int]int         // node whose Kids is a reference -> the array object
	objStms  []objStm            // object streams to read
	encrypt  *core.PdfDictionary // the encryption dictionary, when found
	encRef   int                 // its object number when it was indirect
	encDicts map[int]*core.PdfDictionary
	fileID   []byte
	nextNeg  int // next synthetic number for an inline node
	inflated int64
	lim      *Limits
	ctx      context.Context // checked every ctxEvery objects
}

type objStm struct {
	num, gen int
	dict     *core.PdfDictionary
	raw      []byte
}

// maxTreeDepth matches the parser's own cap on page-tree depth.
const maxTreeDepth = 256

func takeCensus(ctx context.Context, data []byte, lim *Limits) (*census, error) {
	c := &census{objects: map[int]struct{}{}, nodes: map[int][]int{}, arrays: map[int][]int{},
		kidsRef: map[int]int{}, encDicts: map[int]*core.PdfDictionary{}, nextNeg: -1, lim: lim, ctx: ctx}
	if err := c.scan(data); err != nil {
		return nil, err
	}
	dec, err := c.decryptor()
	if err != nil {
		return nil, err
	}
	for _, s := range c.objStms {
		if err := c.readObjStm(s, dec); err != nil {
			return nil, err
		}
	}
	return c, c.checkTree()
}

func (c *census) tooMany() error {
	return &LimitError{Limit: "MaxObjects", Max: int64(c.lim.MaxObjects), What: fmt.Sprintf("PDF of more than %d objects", c.lim.MaxObjects)}
}

// scan reads every "N G obj" at the top level of the file.
func (c *census) scan(data []byte) error {
	tok := reader.NewTokenizer(data)
	var prev [2]reader.Token
	for !tok.AtEnd() {
		t := tok.Next()
		if t.Type == reader.TokenEOF {
			break
		}
		if t.Type == reader.TokenKeyword && t.Value == "trailer" {
			if d, err := reader.NewParser(tok).ParseObject(); err == nil {
				if dict, ok := d.(*core.PdfDictionary); ok {
					c.trailer(dict)
				}
			}
			prev = [2]reader.Token{}
			continue
		}
		if t.Type != reader.TokenKeyword || t.Value != "obj" ||
			prev[0].Type != reader.TokenNumber || !prev[0].IsInt || prev[0].Int < 0 || prev[0].Int > 1<<31 ||
			prev[1].Type != reader.TokenNumber || !prev[1].IsInt || prev[1].Int < 0 || prev[1].Int > 1<<31 {
			prev[0], prev[1] = prev[1], t
			continue
		}
		num, gen := int(prev[0].Int), int(prev[1].Int)
		prev = [2]reader.Token{}
		if len(c.objects)%ctxEvery == 0 {
			if err := c.ctx.Err(); err != nil {
				return err
			}
		}
		start := tok.Pos()
		obj, err := reader.NewParser(tok).ParseObject()
		if err != nil {
			tok.SetPos(start)
			continue
		}
		c.objects[num] = struct{}{}
		if len(c.objects) > c.lim.MaxObjects {
			return c.tooMany()
		}
		if s, ok := obj.(*core.PdfStream); ok {
			if name(s.Dict.Get("Type")) == "ObjStm" {
				c.objStms = append(c.objStms, objStm{num: num, gen: gen, dict: s.Dict, raw: streamBytes(data, start, tok.Pos(), s.Dict)})
			}
			if name(s.Dict.Get("Type")) == "XRef" {
				c.trailer(s.Dict)
			}
			continue
		}
		c.object(num, obj)
	}
	return nil
}

// object records what matters of one object: a page-tree node, an array
// of references, an encryption dictionary.
func (c *census) object(num int, obj core.PdfObject) {
	delete(c.nodes, num) // a later definition replaces an earlier one
	delete(c.arrays, num)
	delete(c.kidsRef, num)
	switch o := obj.(type) {
	case *core.PdfDictionary:
		if o.Get("Filter") != nil && o.Get("O") != nil && o.Get("U") != nil {
			c.encDicts[num] = o
		}
		c.node(num, o)
	case *core.PdfArray:
		var refs []int
		for _, e := range o.All() {
			if r, ok := e.(*core.PdfIndirectReference); ok {
				refs = append(refs, r.Num())
			}
		}
		c.arrays[num] = refs
	}
}

// node records d as a page-tree node when the parser would walk it as one:
// a dictionary with /Kids that is not a /Page.
func (c *census) node(num int, d *core.PdfDictionary) {
	kids := d.Get("Kids")
	if kids == nil || name(d.Get("Type")) == "Page" {
		return
	}
	switch k := kids.(type) {
	case *core.PdfIndirectReference:
		c.nodes[num] = nil
		c.kidsRef[num] = k.Num()
	case *core.PdfArray:
		list := make([]int, 0, k.Len())
		for _, e := range k.All() {
			switch e := e.(type) {
			case *core.PdfIndirectReference:
				list = append(list, e.Num())
			case *core.PdfDictionary:
				n := c.nextNeg
				c.nextNeg--
				list = append(list, n)
				c.node(n, e)
			}
		}
		c.nodes[num] = list
	}
}

// trailer notes the encryption dictionary and file identifier of a trailer
// or cross-reference stream dictionary.
func (c *census) trailer(d *core.PdfDictionary) {
	switch e := d.Get("Encrypt").(type) {
	case *core.PdfDictionary:
		c.encrypt = e
	case *core.PdfIndirectReference:
		c.encRef = e.Num()
		c.encrypt = nil
	}
	if ids, ok := d.Get("ID").(*core.PdfArray); ok && ids.Len() > 0 {
		if s, ok := ids.At(0).(*core.PdfString); ok {
			c.fileID = []byte(s.Text())
		}
	}
}

// decryptor returns nil for a file that is not encrypted, a decryptor for
// one encrypted with the empty password, or ErrEncrypted.
func (c *census) decryptor() (*core.Decryptor, error) {
	enc := c.encrypt
	if enc == nil && c.encRef > 0 {
		enc = c.encDicts[c.encRef]
	}
	if enc == nil {
		if c.encRef > 0 {
			return nil, fmt.Errorf("%w (its encryption dictionary cannot be read)", ErrEncrypted)
		}
		return nil, nil
	}
	d, err := core.NewDecryptor(enc, c.fileID, "")
	switch {
	case errors.Is(err, core.ErrInvalidPassword):
		return nil, fmt.Errorf("%w with a password", ErrEncrypted)
	case err != nil:
		return nil, fmt.Errorf("%w (%v)", ErrEncrypted, err)
	}
	return d, nil
}

// readObjStm reads the objects of one object stream.
func (c *census) readObjStm(s objStm, dec *core.Decryptor) error {
	raw := s.raw
	if dec != nil {
		var err error
		if raw, err = dec.DecryptBytes(s.num, s.gen, raw); err != nil {
			return nil // the parser will say what is wrong with it
		}
	}
	data, err := c.decode(s.num, raw, s.dict)
	if err != nil || data == nil {
		return err
	}
	n, first := intOf(s.dict.Get("N")), intOf(s.dict.Get("First"))
	if n <= 0 || first <= 0 || first > len(data) || n > len(data)/2 {
		return nil
	}
	tok := reader.NewTokenizer(data)
	type entry struct{ num, off int }
	entries := make([]entry, 0, n)
	for range n {
		a, b := tok.Next(), tok.Next()
		if a.Type != reader.TokenNumber || b.Type != reader.TokenNumber || !a.IsInt || !b.IsInt || a.Int < 0 || a.Int > 1<<31 {
			break
		}
		entries = append(entries, entry{int(a.Int), int(b.Int)})
	}
	for _, e := range entries {
		off := first + e.off
		if e.off < 0 || off >= len(data) {
			continue
		}
		tok.SetPos(off)
		obj, err := reader.NewParser(tok).ParseObject()
		if err != nil {
			continue
		}
		c.objects[e.num] = struct{}{}
		if len(c.objects) > c.lim.MaxObjects {
			return c.tooMany()
		}
		c.object(e.num, obj)
	}
	return nil
}

// decode undoes the filters of an object stream — FlateDecode,
// ASCII85Decode and ASCIIHexDecode, in any chain, within the
// decompression limits. An object stream encoded otherwise is refused:
// the parser could read page-tree nodes in it that the census has not
// counted.
func (c *census) decode(num int, raw []byte, d *core.PdfDictionary) ([]byte, error) {
	var filters []string
	switch f := d.Get("Filter").(type) {
	case nil:
	case *core.PdfName:
		filters = []string{f.Value}
	case *core.PdfArray:
		for _, e := range f.All() {
			filters = append(filters, name(e))
		}
	default:
		filters = []string{"?"}
	}
	unreadable := func() error {
		return errorf("PDF object stream %d is encoded with %q, which is not read", num, filters)
	}
	if p := d.Get("DecodeParms"); p != nil {
		if _, isNull := p.(*core.PdfNull); !isNull {
			return nil, unreadable()
		}
	}
	max := min(c.lim.MaxStreamBytes, c.lim.MaxDecompressedBytes-c.inflated)
	data := raw
	for _, f := range filters {
		var r io.Reader
		switch f {
		case "FlateDecode", "Fl":
			zr, err := zlib.NewReader(bytes.NewReader(data))
			if err != nil {
				return nil, nil // unreadable by the parser too
			}
			r = zr
		case "ASCII85Decode", "A85":
			a := bytes.TrimSpace(data)
			a = bytes.TrimSuffix(bytes.TrimPrefix(a, []byte("<~")), []byte("~>"))
			r = ascii85.NewDecoder(bytes.NewReader(a))
		case "ASCIIHexDecode", "AHx":
			h := bytes.Map(func(r rune) rune {
				if r == '>' || unicode.IsSpace(r) {
					return -1
				}
				return r
			}, data)
			if len(h)%2 == 1 {
				h = append(h, '0')
			}
			r = hex.NewDecoder(bytes.NewReader(h))
		default:
			return nil, unreadable()
		}
		out, err := io.ReadAll(io.LimitReader(r, max+1))
		c.inflated += int64(len(out))
		if int64(len(out)) > max {
			return nil, &LimitError{Limit: "MaxStreamBytes", Max: c.lim.MaxStreamBytes, What: fmt.Sprintf("PDF object stream %d inflating to more bytes", num)}
		}
		if err != nil && len(out) == 0 {
			return nil, nil
		}
		data = out
	}
	return data, nil
}

// checkTree refuses a page tree that has a cycle, is too deep, or whose
// walk would visit more pages or nodes than the limits allow. Any node may
// be the root (the trailer is not trusted here), so every node is checked.
func (c *census) checkTree() error {
	const (
		white = iota
		grey
		black
	)
	maxPages := int64(c.lim.MaxPages)
	maxVisits := 4*maxPages + 10_000
	color := make(map[int]int, len(c.nodes))
	pages := make(map[int]int64, len(c.nodes))
	visits := make(map[int]int64, len(c.nodes))
	var walk func(n, depth int) error
	walk = func(n, depth int) error {
		if depth > maxTreeDepth {
			return errorf("PDF page tree is deeper than %d levels", maxTreeDepth)
		}
		color[n] = grey
		kids := c.nodes[n]
		if ref, ok := c.kidsRef[n]; ok {
			kids = c.arrays[ref]
		}
		var p, v int64 = 0, 1
		for _, k := range kids {
			if _, isNode := c.nodes[k]; !isNode {
				p, v = p+1, v+1
			} else {
				switch color[k] {
				case grey:
					return errorf("PDF page tree has a cycle through object %d", max(k, 0))
				case white:
					if err := walk(k, depth+1); err != nil {
						return err
					}
				}
				p, v = p+pages[k], v+visits[k]
			}
			if p > maxPages {
				return &LimitError{Limit: "MaxPages", Max: maxPages, What: fmt.Sprintf("PDF page tree listing at least %d pages", p)}
			}
			if v > maxVisits {
				return &LimitError{Limit: "MaxPages", Max: maxPages, What: fmt.Sprintf("PDF page tree of at least %d nodes to walk", v)}
			}
		}
		color[n] = black
		pages[n], visits[n] = p, v
		return nil
	}
	for _, n := range slices.Sorted(maps.Keys(c.nodes)) {
		if color[n] == white {
			if err := walk(n, 0); err != nil {
				return err
			}
		}
	}
	return nil
}

// streamBytes returns the raw bytes of the stream whose dictionary was
// parsed from objStart to end (just past "endstream").
func streamBytes(data []byte, objStart, end int, d *core.PdfDictionary) []byte {
	if end > len(data) || objStart >= end {
		return nil
	}
	i := bytes.Index(data[objStart:end], []byte("stream"))
	if i < 0 {
		return nil
	}
	s := objStart + i + len("stream")
	if s < len(data) && data[s] == '\r' {
		s++
	}
	if s < len(data) && data[s] == '\n' {
		s++
	}
	if n, ok := d.Get("Length").(*core.PdfNumber); ok {
		if l := n.IntValue(); l > 0 && s+l <= end {
			return data[s : s+l]
		}
	}
	e := bytes.LastIndex(data[s:end], []byte("endstream"))
	if e < 0 {
		return nil
	}
	return bytes.TrimRight(data[s:s+e], "\r\n")
}

func name(o core.PdfObject) string {
	if n, ok := o.(*core.PdfName); ok {
		return n.Value
	}
	return ""
}

func intOf(o core.PdfObject) int {
	if n, ok := o.(*core.PdfNumber); ok {
		return n.IntValue()
	}
	return 0
}
