package extract

import (
	"context"
	"encoding/xml"
	"io"
	"strconv"
	"strings"
)

// ODT (OpenDocument text, ODF 1.2/1.3) is read with archive/zip and
// encoding/xml: content.xml for the text (headings are text:h with their
// outline level; lists take bullet or number from their list style in
// content.xml or styles.xml), meta.xml for the title and author. Tracked
// deletions, annotations, page headers and footers, and generated indexes
// (a table of contents repeats the headings) are left out; text boxes are
// read after the paragraph that anchors them.

type odt struct {
	a *archive
	flow
	listKinds map[string]map[int]bool // list style -> level (1-based) -> numbered
	notes     int
	curStyle  string // the list style being read
}

func extractODT(ctx context.Context, r io.ReaderAt, size int64, lim *Limits, b *builder) error {
	a, err := openArchive(ctx, r, size, lim, b, "ODT")
	if err != nil {
		return err
	}
	if !a.has("content.xml") {
		if a.has("word/document.xml") {
			return errorf("not an ODT: the archive is a DOCX file")
		}
		return errorf("not an ODT: no content.xml in the archive")
	}
	if a.has("mimetype") {
		if mt, err := a.readAll("mimetype"); err != nil {
			return err
		} else if s := strings.TrimSpace(string(mt)); s != MediaTypeODT {
			b.defect("mimetype is %q, not %s; read as text", cutUTF8(s, 100), MediaTypeODT)
		}
	}
	o := &odt{a: a, flow: newFlow(b), listKinds: map[string]map[int]bool{}}
	for _, aux := range []struct {
		name string
		read func(string) error
	}{
		{"meta.xml", o.readMeta},
		{"styles.xml", o.readListStyles},
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
	return o.readContent("content.xml")
}

func (o *odt) readMeta(name string) error {
	var creator, initial string
	err := o.a.eachStart(name, func(x *xmlReader, se xml.StartElement) error {
		field := map[string]*string{"title": &o.b.d.Title, "initial-creator": &initial, "creator": &creator}[se.Name.Local]
		if field == nil {
			return nil
		}
		s, err := x.text()
		if err == nil {
			*field = s // an element cut short sets nothing
		}
		return err
	})
	if err != nil {
		return err // the author only from a whole part
	}
	o.b.d.Author = initial
	if strings.TrimSpace(initial) == "" {
		o.b.d.Author = creator
	}
	return nil
}

// readListStyles reads the list styles of styles.xml; content.xml's
// automatic list styles are read as they come, before the body.
func (o *odt) readListStyles(name string) error {
	return o.a.eachStart(name, func(_ *xmlReader, se xml.StartElement) error {
		o.listStyleElement(se)
		return nil
	})
}

// listStyleElement records list-style levels as they are met.
func (o *odt) listStyleElement(se xml.StartElement) {
	switch se.Name.Local {
	case "list-style":
		o.curStyle = attr(se, "name")
		if o.listKinds[o.curStyle] == nil {
			o.listKinds[o.curStyle] = map[int]bool{}
		}
	case "list-level-style-number", "list-level-style-bullet", "list-level-style-image":
		lvl, _ := strconv.Atoi(attr(se, "level"))
		if m := o.listKinds[o.curStyle]; m != nil && lvl > 0 {
			m[lvl] = se.Name.Local == "list-level-style-number" && attr(se, "num-format") != ""
		}
	}
}

func (o *odt) readContent(name string) error {
	rc, err := o.a.open(name)
	if err != nil {
		return err
	}
	defer rc.Close()
	x := o.a.xml(name, rc)
	for {
		t, err := x.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if fatal(err) {
				return err
			}
			o.b.defect("%v", err)
			break
		}
		se, ok := t.(xml.StartElement)
		if !ok {
			continue
		}
		if se.Name.Local == "text" && se.Name.Space == nsOffice {
			if err := o.walk(x, "text", listCtx{}); err != nil {
				if fatal(err) {
					return err
				}
				o.b.defect("%v", err)
			}
			break
		}
		o.listStyleElement(se)
	}
	o.flushNotes()
	return nil
}

const nsOffice = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"

// listCtx is where the walk is inside lists: the style in force and the
// nesting depth (0 = not in a list).
type listCtx struct {
	style string
	depth int
}

// walk reads block content up to the end of the element just started.
func (o *odt) walk(x *xmlReader, end string, lc listCtx) error {
	return children(x, end, func(t xml.StartElement) error { return o.block(x, t, lc) })
}

// block handles one block-level element whose start was just read.
func (o *odt) block(x *xmlReader, se xml.StartElement, lc listCtx) error {
	switch se.Name.Local {
	case "h":
		text, nested, err := o.inline(x, "h")
		if err != nil {
			return err
		}
		lvl, _ := strconv.Atoi(attr(se, "outline-level"))
		o.heading(max(lvl, 1), text)
		return o.emitNested(nested)
	case "p":
		text, nested, err := o.inline(x, "p")
		if err != nil {
			return err
		}
		if lc.depth > 0 {
			o.listItem(lc, text)
		} else {
			o.paragraph(text)
		}
		return o.emitNested(nested)
	case "list":
		inner := listCtx{style: lc.style, depth: lc.depth + 1}
		if s := attr(se, "style-name"); s != "" {
			inner.style = s
		}
		if lc.depth == 0 && attr(se, "continue-numbering") != "true" && attr(se, "continue-list") == "" {
			o.restart(inner.style)
		}
		return o.walk(x, "list", inner)
	case "list-item", "list-header", "section", "index-body", "deletion-wrapper":
		return o.walk(x, se.Name.Local, lc)
	case "frame":
		// A frame anchored to the page: its text boxes' paragraphs.
		var parts []string
		err := o.collect(x, "frame", &parts)
		for _, p := range parts {
			o.paragraph(p)
		}
		return err
	case "table":
		o.endList() // an empty table ends a list too
		return o.table(x, o.row)
	case "tracked-changes", "table-of-content", "alphabetical-index", "illustration-index",
		"table-index", "object-index", "user-index", "bibliography", "annotation", "sequence-decls",
		"variable-decls", "user-field-decls", "forms":
		return x.skip()
	}
	return x.skip()
}

// listItem emits one list item at the list's depth.
func (o *odt) listItem(lc listCtx, text string) {
	if strings.TrimSpace(text) == "" {
		return
	}
	level := min(lc.depth, 10)
	marker := "-"
	if o.listKinds[lc.style][level] {
		marker = o.number(lc.style, level)
	}
	o.item(level-1, marker, text)
}

// emitNested emits paragraphs found inside frames of the paragraph just
// emitted.
func (o *odt) emitNested(nested []string) error {
	for _, s := range nested {
		o.paragraph(s)
	}
	return nil
}

// inline reads the text of a text:p or text:h up to its end, with the
// paragraphs of any text box inside it returned separately.
func (o *odt) inline(x *xmlReader, end string) (string, []string, error) {
	var sb strings.Builder
	var nested []string
	for depth := 1; depth > 0; {
		t, err := x.next()
		if err != nil {
			return sb.String(), nested, err
		}
		switch t := t.(type) {
		case xml.CharData:
			sb.Write(t)
		case xml.EndElement:
			depth--
		case xml.StartElement:
			depth++
			switch t.Name.Local {
			case "s":
				n, _ := strconv.Atoi(attr(t, "c"))
				sb.WriteString(strings.Repeat(" ", max(1, min(n, 64))))
			case "tab":
				sb.WriteByte('\t')
			case "line-break":
				sb.WriteByte('\n')
			case "note":
				depth--
				cite, body, err := o.note(x)
				if err != nil {
					return sb.String(), nested, err
				}
				o.notes++
				if cite == "" {
					cite = strconv.Itoa(o.notes)
				}
				sb.WriteString("[^" + cite + "]")
				o.keepNote("[^" + cite + "]: " + body)
			case "text-box":
				depth--
				var inner []string
				err := o.collect(x, "text-box", &inner)
				nested = append(nested, inner...)
				if err != nil {
					return sb.String(), nested, err
				}
			case "annotation", "tracked-changes", "change", "ruby-text", "title", "desc":
				depth--
				if err := x.skip(); err != nil {
					return sb.String(), nested, err
				}
			}
		}
	}
	return sb.String(), nested, nil
}

// note reads a text:note (start just read): its citation and its body.
func (o *odt) note(x *xmlReader) (cite, body string, err error) {
	err = children(x, "note", func(t xml.StartElement) error {
		switch t.Name.Local {
		case "note-citation":
			var err error
			cite, err = x.text()
			return err
		case "note-body":
			var parts []string
			err := o.collect(x, "note-body", &parts)
			body = strings.Join(parts, " ")
			return err
		}
		return nil
	})
	if err != nil {
		return cite, body, err
	}
	return oneLine(cite), oneLine(body), nil
}

// collect reads the paragraphs (and flattened tables) inside the element
// just started, as plain strings.
func (o *odt) collect(x *xmlReader, end string, out *[]string) error {
	return children(x, end, func(t xml.StartElement) error {
		switch t.Name.Local {
		case "p", "h":
			s, nested, err := o.inline(x, t.Name.Local)
			if s = strings.TrimSpace(s); s != "" {
				*out = append(*out, s)
			}
			*out = append(*out, nested...)
			return err
		case "table":
			return o.table(x, func(row []string) { *out = append(*out, strings.Join(row, " ")) })
		case "annotation", "tracked-changes", "table-of-content":
			return x.skip()
		}
		return nil
	})
}

// table reads a table:table (start just read) and calls row per row. A
// covered cell (part of a merged one) adds nothing; repeated rows and
// columns are read once.
func (o *odt) table(x *xmlReader, row func([]string)) error {
	var cells []string
	for {
		t, err := x.next()
		if err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.EndElement:
			switch t.Name.Local {
			case "table":
				return nil
			case "table-row":
				row(cells)
				cells = nil
			}
		case xml.StartElement:
			switch t.Name.Local {
			case "table-cell":
				var parts []string
				err := o.collect(x, "table-cell", &parts)
				cells = append(cells, oneLine(strings.Join(parts, " ")))
				if err != nil {
					return err
				}
			case "covered-table-cell", "table-column", "table-columns", "table-source":
				if err := x.skip(); err != nil {
					return err
				}
			}
		}
	}
}
