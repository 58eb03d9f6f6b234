package extract

import (
	"encoding/xml"
	"io"
	"strconv"
)

// The word-processor formats (DOCX, ODT) are read by one walk: children
// goes through an element's content, handing each child element to the
// format's own reader, and a flow turns the paragraphs, headings, list
// items and table rows the reader finds into the builder's blocks, with
// what both formats keep while they do: whether a list is open, a counter
// per list and level for numbered items, and the notes referenced since
// the last heading (written out before the next one).

// children reads up to the end of the element just started (named end)
// and calls start with each element that starts inside it that start does
// not consume itself (it may read on: an element's text, or skip it). The
// end of the input ends it without error.
func children(x *xmlReader, end string, start func(xml.StartElement) error) error {
	for {
		t, err := x.next()
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		switch t := t.(type) {
		case xml.EndElement:
			if t.Name.Local == end {
				return nil
			}
		case xml.StartElement:
			if err := start(t); err != nil {
				return err
			}
		}
	}
}

// flow emits a word-processor document's blocks into b.
type flow struct {
	b        *builder
	inList   bool
	counters map[string][]int // list -> counter per level
	pending  []string         // notes referenced since the last heading
}

func newFlow(b *builder) flow { return flow{b: b, counters: map[string][]int{}} }

// heading ends a list, writes the notes pending, then the heading.
func (f *flow) heading(level int, text string) {
	f.endList()
	f.flushNotes()
	f.b.heading(level, text)
}

// paragraph ends a list and writes text.
func (f *flow) paragraph(text string) {
	f.endList()
	f.b.paragraph(text)
}

// row ends a list and writes one table row.
func (f *flow) row(cells []string) {
	f.endList()
	f.b.tableRow(cells)
}

// item writes one list item at depth (0 for the outermost list).
func (f *flow) item(depth int, marker, text string) {
	f.inList = true
	f.b.listItem(depth, marker, text)
}

func (f *flow) endList() {
	if f.inList {
		f.inList = false
		f.b.endList()
	}
}

// keepNote keeps a note ("[^id]: text") for the next heading or the end.
func (f *flow) keepNote(s string) { f.pending = append(f.pending, s) }

// flushNotes writes the notes referenced since the last heading.
func (f *flow) flushNotes() {
	if len(f.pending) == 0 {
		return
	}
	f.endList()
	for _, n := range f.pending {
		f.b.paragraph(n)
	}
	f.pending = f.pending[:0]
}

// number counts the next item of list at level and returns its marker
// ("N."), restarting the deeper levels.
func (f *flow) number(list string, level int) string {
	c := f.counters[list]
	for len(c) <= level {
		c = append(c, 0)
	}
	c[level]++
	for i := level + 1; i < len(c); i++ {
		c[i] = 0
	}
	f.counters[list] = c
	return strconv.Itoa(c[level]) + "."
}

// restart starts list's numbering again.
func (f *flow) restart(list string) { delete(f.counters, list) }
