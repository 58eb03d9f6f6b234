package extract

import (
	"context"
	"encoding/xml"
	"io"
	"path"
	"strconv"
	"strings"
)

// DOCX (Office Open XML WordprocessingML, ECMA-376) is read with
// archive/zip and encoding/xml: the main document part, and beside it the
// styles (which paragraph styles are headings), the numbering (bullets or
// numbers), the footnotes and endnotes, and docProps/core.xml (title and
// author). Elements are matched by local name, so Transitional and Strict
// namespaces read alike. Deleted text (tracked changes), field codes, the
// duplicate fallback of alternate content, comments, and page headers and
// footers are left out.

type docxStyle struct {
	name     string
	basedOn  string
	outline  int // w:outlineLvl + 1; 0 when none
	numID    string
	numLevel int
}

type docx struct {
	a *archive
	flow
	styles map[string]docxStyle
	numFmt map[string]map[int]string // numId -> level -> w:numFmt
	notes  map[string]string         // "f3" / "e1" -> note text
}

func extractDOCX(ctx context.Context, r io.ReaderAt, size int64, lim *Limits, b *builder) error {
	a, err := openArchive(ctx, r, size, lim, b, "DOCX")
	if err != nil {
		return err
	}
	main := a.relTarget("_rels/.rels", "", "/officeDocument")
	if main == "" || !a.has(main) {
		main = "word/document.xml"
	}
	if !a.has(main) {
		return errNotDOCX(a)
	}
	d := &docx{a: a, flow: newFlow(b), styles: map[string]docxStyle{}, numFmt: map[string]map[int]string{},
		notes: map[string]string{}}
	rels := path.Join(path.Dir(main), "_rels", path.Base(main)+".rels")
	dir := path.Dir(main)
	part := func(typ, def string) string {
		if t := a.relTarget(rels, dir, typ); t != "" {
			return t
		}
		return path.Join(dir, def)
	}
	// Auxiliary parts: a broken one costs its feature, not the document.
	for _, aux := range []struct {
		name string
		read func(string) error
	}{
		{part("/styles", "styles.xml"), d.readStyles},
		{part("/numbering", "numbering.xml"), d.readNumbering},
		{part("/footnotes", "footnotes.xml"), func(p string) error { return d.readNotes(p, "footnote", "f") }},
		{part("/endnotes", "endnotes.xml"), func(p string) error { return d.readNotes(p, "endnote", "e") }},
		{"docProps/core.xml", d.readCore},
	} {
		if !a.has(aux.name) {
			continue
		}
		if err := aux.read(aux.name); err != nil {
			if fatal(err) {
				return err
			}
			b.defect("%v", err)
		}
	}
	return d.readBody(main)
}

func errNotDOCX(a *archive) error {
	if a.has("content.xml") {
		return errorf("not a DOCX: the archive is an OpenDocument file")
	}
	return errorf("not a DOCX: no word/document.xml in the archive")
}

// relTarget returns the target, as an archive path, of the first
// relationship in the rels part whose Type ends with typeSuffix. Targets
// are relative to dir unless they start with "/".
func (a *archive) relTarget(rels, dir, typeSuffix string) string {
	var target string
	_ = a.eachStart(rels, func(_ *xmlReader, se xml.StartElement) error {
		if se.Name.Local != "Relationship" || !strings.HasSuffix(attr(se, "Type"), typeSuffix) || attr(se, "TargetMode") == "External" {
			return nil
		}
		target = attr(se, "Target")
		if strings.HasPrefix(target, "/") {
			target = path.Clean(target[1:])
		} else {
			target = path.Clean(path.Join(dir, target))
		}
		return errStop
	})
	return target
}

func (d *docx) readCore(name string) error {
	return d.a.eachStart(name, func(x *xmlReader, se xml.StartElement) error {
		field := map[string]*string{"title": &d.b.d.Title, "creator": &d.b.d.Author}[se.Name.Local]
		if field == nil {
			return nil
		}
		s, err := x.text()
		if err == nil {
			*field = s // an element cut short sets nothing
		}
		return err
	})
}

func (d *docx) readStyles(name string) error {
	var id string
	var st docxStyle
	return d.a.eachToken(name, func(x *xmlReader, t xml.Token) error {
		switch t := t.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "style":
				id, st = attr(t, "styleId"), docxStyle{}
			case "name":
				st.name = attr(t, "val")
			case "basedOn":
				st.basedOn = attr(t, "val")
			case "outlineLvl":
				if n, err := strconv.Atoi(attr(t, "val")); err == nil && n >= 0 && n < 9 {
					st.outline = n + 1
				}
			case "numId":
				st.numID = attr(t, "val")
			case "ilvl":
				st.numLevel, _ = strconv.Atoi(attr(t, "val"))
			case "rPr", "tblPr", "tcPr", "trPr", "tblStylePr":
				return x.skip()
			}
		case xml.EndElement:
			if t.Name.Local == "style" && id != "" {
				d.styles[id] = st
				id = ""
			}
		}
		return nil
	})
}

func (d *docx) readNumbering(name string) error {
	abstract := map[string]map[int]string{}
	numToAbstract := map[string]string{}
	var absID, numID string
	level := -1
	err := d.a.eachStart(name, func(x *xmlReader, se xml.StartElement) error {
		switch se.Name.Local {
		case "abstractNum":
			absID, numID, level = attr(se, "abstractNumId"), "", -1
			abstract[absID] = map[int]string{}
		case "num":
			numID, absID = attr(se, "numId"), ""
		case "abstractNumId":
			if numID != "" {
				numToAbstract[numID] = attr(se, "val")
			}
		case "lvl":
			level, _ = strconv.Atoi(attr(se, "ilvl"))
		case "numFmt":
			if absID != "" && level >= 0 {
				abstract[absID][level] = attr(se, "val")
			}
		case "lvlOverride", "rPr", "pPr":
			return x.skip()
		}
		return nil
	})
	if err != nil {
		return err
	}
	for num, abs := range numToAbstract {
		if f, ok := abstract[abs]; ok {
			d.numFmt[num] = f
		}
	}
	return nil
}

func (d *docx) readNotes(name, elem, prefix string) error {
	return d.a.eachStart(name, func(x *xmlReader, se xml.StartElement) error {
		if se.Name.Local != elem {
			return nil
		}
		if typ := attr(se, "type"); typ != "" && typ != "normal" {
			return x.skip()
		}
		var texts []string
		err := d.walk(x, se.Name.Local, func(p docxPara) {
			if s := strings.TrimSpace(p.text); s != "" {
				texts = append(texts, s)
			}
		})
		if err != nil {
			return err
		}
		d.notes[prefix+attr(se, "id")] = oneLine(strings.Join(texts, " "))
		return nil
	})
}

// docxPara is one paragraph as read, before it becomes a block.
type docxPara struct {
	style    string
	outline  int // from w:outlineLvl in the paragraph, +1; 0 none
	numID    string
	numLevel int
	hasNum   bool
	text     string
	row      []string // set instead of text for a table row
}

// readBody reads the main part and emits its blocks.
func (d *docx) readBody(name string) error {
	rc, err := d.a.open(name)
	if err != nil {
		return err
	}
	defer rc.Close()
	x := d.a.xml(name, rc)
	for {
		t, err := x.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if fatal(err) {
				return err
			}
			d.b.defect("%v", err)
			break
		}
		if se, ok := t.(xml.StartElement); ok && se.Name.Local == "body" {
			err := d.walk(x, "body", d.emit)
			if err != nil {
				if fatal(err) {
					return err
				}
				d.b.defect("%v", err)
			}
			break
		}
	}
	d.flushNotes()
	return nil
}

// walk reads up to the end of the element just started (named end) and
// calls emit for each paragraph and table row, in order. Paragraphs inside
// a paragraph (text boxes) are emitted after it.
func (d *docx) walk(x *xmlReader, end string, emit func(docxPara)) error {
	return children(x, end, func(t xml.StartElement) error {
		switch t.Name.Local {
		case "p":
			return d.para(x, emit)
		case "tbl":
			return d.table(x, emit)
		case "sectPr", "sdtPr", "del", "moveFrom", "Fallback", "tblPr", "tblGrid":
			return x.skip()
		}
		return nil
	})
}

// para reads one w:p (its start was just read) and emits it, then any
// paragraph nested in it.
func (d *docx) para(x *xmlReader, emit func(docxPara)) error {
	var p docxPara
	var sb strings.Builder
	var nested []docxPara
	inPPr := false
	for depth := 1; depth > 0; {
		t, err := x.next()
		if err != nil {
			p.text = sb.String()
			emit(p)
			return err
		}
		switch t := t.(type) {
		case xml.EndElement:
			depth--
			if t.Name.Local == "pPr" {
				inPPr = false
			}
		case xml.CharData:
			// only w:t and w:delText carry text; handled below
		case xml.StartElement:
			depth++
			name := t.Name.Local
			if inPPr {
				switch name {
				case "pStyle":
					p.style = attr(t, "val")
				case "outlineLvl":
					if n, err := strconv.Atoi(attr(t, "val")); err == nil && n >= 0 && n < 9 {
						p.outline = n + 1
					}
				case "numId":
					p.numID, p.hasNum = attr(t, "val"), true
				case "ilvl":
					p.numLevel, _ = strconv.Atoi(attr(t, "val"))
				case "rPr", "sectPr", "pPrChange":
					if err := x.skip(); err != nil {
						return err
					}
					depth--
				}
				continue
			}
			switch name {
			case "pPr":
				inPPr = true
			case "t":
				s, err := x.text()
				sb.WriteString(s)
				depth--
				if err != nil {
					return err
				}
			case "tab", "ptab":
				sb.WriteByte('\t')
			case "br", "cr":
				sb.WriteByte('\n')
			case "noBreakHyphen":
				sb.WriteByte('-')
			case "footnoteReference", "endnoteReference":
				id := "f" + attr(t, "id")
				if name == "endnoteReference" {
					id = "e" + attr(t, "id")
				}
				sb.WriteString("[^" + id + "]")
				if note, ok := d.notes[id]; ok {
					d.keepNote("[^" + id + "]: " + note)
				}
			case "p":
				depth--
				if err := d.para(x, func(q docxPara) { nested = append(nested, q) }); err != nil {
					return err
				}
			case "tbl":
				depth--
				if err := d.table(x, func(q docxPara) { nested = append(nested, q) }); err != nil {
					return err
				}
			case "delText", "instrText", "delInstrText", "del", "moveFrom", "Fallback", "rPr", "sdtPr", "rPrChange":
				depth--
				if err := x.skip(); err != nil {
					return err
				}
			}
		}
	}
	p.text = sb.String()
	emit(p)
	for _, q := range nested {
		emit(q)
	}
	return nil
}

// table reads one w:tbl (its start was just read) and emits its rows.
// A table inside a cell is flattened into the cell's text.
func (d *docx) table(x *xmlReader, emit func(docxPara)) error {
	var row []string
	var cell []string
	for depth := 1; depth > 0; {
		t, err := x.next()
		if err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.EndElement:
			depth--
			switch t.Name.Local {
			case "tc":
				row = append(row, strings.Join(cell, " "))
				cell = nil
			case "tr":
				emit(docxPara{row: row})
				row = nil
			}
		case xml.StartElement:
			depth++
			switch t.Name.Local {
			case "p":
				depth--
				if err := d.para(x, func(q docxPara) { cell = append(cell, q.cellText()) }); err != nil {
					return err
				}
			case "tbl":
				depth--
				if err := d.table(x, func(q docxPara) { cell = append(cell, q.cellText()) }); err != nil {
					return err
				}
			case "tblPr", "tblGrid", "trPr", "tcPr", "del", "Fallback", "sdtPr":
				depth--
				if err := x.skip(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (p docxPara) cellText() string {
	if p.row != nil {
		return strings.Join(p.row, " ")
	}
	return oneLine(p.text)
}

// emit turns one paragraph or row into a block of the document.
func (d *docx) emit(p docxPara) {
	if p.row != nil {
		d.row(p.row)
		return
	}
	if lvl := d.headingLevel(p); lvl > 0 {
		d.heading(lvl, p.text)
		return
	}
	numID, numLevel, hasNum := p.numID, p.numLevel, p.hasNum
	if !hasNum {
		if st, ok := d.styleChain(p.style, func(s docxStyle) bool { return s.numID != "" }); ok {
			numID, numLevel, hasNum = st.numID, st.numLevel, true
		}
	}
	if hasNum && numID != "0" && strings.TrimSpace(p.text) != "" {
		if marker := d.marker(numID, numLevel); marker != "" {
			d.item(numLevel, marker, p.text)
			return
		}
	}
	d.paragraph(p.text)
}

// marker returns "-" for a bullet, "N." for a numbered item (counting per
// list and level), or "" for a level without a marker.
func (d *docx) marker(numID string, level int) string {
	level = max(0, min(level, 8))
	fmtName := d.numFmt[numID][level]
	switch fmtName {
	case "none":
		return ""
	case "bullet":
		return "-"
	case "":
		if _, ok := d.numFmt[numID]; !ok {
			return "-" // numbering part missing: still a list
		}
	}
	return d.number(numID, level)
}

// headingLevel returns 1..9 for a heading paragraph, 0 otherwise: the
// paragraph's own outline level, else its style's (following basedOn),
// else a style named "heading N" or "Title".
func (d *docx) headingLevel(p docxPara) int {
	if p.outline > 0 {
		return p.outline
	}
	if st, ok := d.styleChain(p.style, func(s docxStyle) bool { return s.outline > 0 || headingName(s.name) > 0 }); ok {
		if st.outline > 0 {
			return st.outline
		}
		return headingName(st.name)
	}
	if _, known := d.styles[p.style]; !known {
		return headingName(p.style) // no styles part: "Heading1" by id
	}
	return 0
}

// styleChain follows basedOn from id and returns the first style for
// which ok holds.
func (d *docx) styleChain(id string, ok func(docxStyle) bool) (docxStyle, bool) {
	for i := 0; i < 16 && id != ""; i++ {
		st, found := d.styles[id]
		if !found {
			return docxStyle{}, false
		}
		if ok(st) {
			return st, true
		}
		id = st.basedOn
	}
	return docxStyle{}, false
}

// headingName returns N for a style named "heading N" (any case and
// spacing, as Word and LibreOffice write them), 1 for "Title", else 0.
func headingName(name string) int {
	n := strings.ToLower(strings.ReplaceAll(name, " ", ""))
	if n == "title" {
		return 1
	}
	if rest, ok := strings.CutPrefix(n, "heading"); ok && len(rest) == 1 && rest[0] >= '1' && rest[0] <= '9' {
		return int(rest[0] - '0')
	}
	return 0
}
