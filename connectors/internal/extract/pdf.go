package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/carlos7ags/folio/core"
	"github.com/carlos7ags/folio/reader"

	"github.com/ingestd/ingestd"
)

// PDF text comes from the text layer (no OCR) through folio's reader
// (github.com/carlos7ags/folio, Apache-2.0): it decodes fonts (ToUnicode
// CMaps, standard and embedded encodings, CID fonts) and reports each run
// of text with its position and size. From those runs this file rebuilds
// lines in reading order, paragraphs (a vertical gap wider than the line
// spacing), and headings (lines set larger than the document's body text
// become "#" lines). Each page is one section, "p. N".
//
// Hardening around the parser: the census (pdfcensus.go) runs first; the
// parser's own memory limits are set from Limits; the content of a page
// is measured before it is interpreted; a panic while opening the file is
// an error, and one while reading a page costs that page (a Defect).

func extractPDF(ctx context.Context, r io.ReaderAt, size int64, lim *Limits, b *builder) error {
	data := make([]byte, size)
	if _, err := r.ReadAt(data, 0); err != nil && !(err == io.EOF && size > 0) {
		return ingestd.Errorf(ingestd.EINVALID, "read: %v", err)
	}
	if _, err := takeCensus(ctx, data, lim); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	pr, err := parsePDF(data, lim)
	if err != nil {
		return pdfError(err, lim)
	}
	title, author, _, _, _ := pr.Info()
	b.d.Title, b.d.Author = title, author
	n := pr.PageCount()
	b.d.Pages = n
	if n > lim.MaxPages {
		return &LimitError{Limit: "MaxPages", Max: int64(lim.MaxPages), What: fmt.Sprintf("PDF of %d pages", n)}
	}
	// Each page is reduced to its lines at once (the runs of a page cost
	// far more memory than its text); the sizes of all the text are
	// counted to tell body text from headings once every page is read.
	pages := make([][]line, n)
	sizes := map[float64]int{} // rounded size -> characters
	var content, text int64
	for i := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		if text > lim.MaxTextBytes {
			break // the builder cuts the text there and says so
		}
		lines, size, err := pageLines(pr, i, lim, sizes)
		content += size
		if content > lim.MaxDecompressedBytes {
			b.d.Truncated = true
			b.defect("pages %d to %d not read: their content goes over the MaxDecompressedBytes limit of %d", i+1, n, lim.MaxDecompressedBytes)
			break
		}
		if err != nil {
			b.defect("p. %d: %v", i+1, err)
			continue
		}
		for _, l := range lines {
			text += int64(len(l.text)) + 1
		}
		pages[i] = lines
	}
	body := bodySize(sizes)
	levels := headingSizes(sizes, body)
	for i, lines := range pages {
		b.page(i + 1)
		layoutPage(b, lines, body, levels)
		if b.full {
			break
		}
	}
	return nil
}

// parsePDF opens a PDF with the parser's own limits set from ours.
func parsePDF(data []byte, lim *Limits) (*reader.PdfReader, error) {
	return reader.ParseWithOptions(data, reader.ReadOptions{
		MemoryLimits: reader.MemoryLimits{
			MaxStreamSize:  lim.MaxStreamBytes,
			MaxTotalAlloc:  lim.MaxDecompressedBytes,
			MaxObjectCount: lim.MaxObjects,
		},
	})
}

// pageLines returns the lines of page i, counting the characters of each
// text size into sizes, and the bytes of content the page draws. Invisible
// text (render mode 3) is kept: it is the text layer of a scanned page,
// and text a reader cannot see is still text a model would read.
//
// The content is measured before it is interpreted — the page's content
// streams and every form XObject it can reach, each once — because the
// parser holds some hundred bytes per byte of content it interprets: a
// 16 KB file whose 8 MiB page draws one string 645,277 times makes it
// allocate 1.8 GB.
func pageLines(pr *reader.PdfReader, i int, lim *Limits, sizes map[float64]int) (lines []line, size int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			lines, err = nil, ingestd.Errorf(ingestd.EINVALID, "parser panicked: %v", p)
		}
	}()
	p, err := pr.Page(i)
	if err != nil {
		return nil, 0, err
	}
	size, err = contentSize(pr, p, lim)
	if err != nil {
		return nil, size, err
	}
	if size > lim.MaxPageContentBytes {
		return nil, size, &LimitError{Limit: "MaxPageContentBytes", Max: lim.MaxPageContentBytes, What: fmt.Sprintf("page content of %d bytes", size)}
	}
	spans, err := p.TextSpans()
	if err != nil {
		return nil, size, pdfError(err, lim)
	}
	for _, s := range spans {
		sizes[roundSize(s.Height)] += len(strings.Fields(s.Text))
	}
	return buildLines(spans), size, nil
}

// contentSize returns the bytes of content page p draws: its content
// streams, and the forms its resources name, and theirs, each once. It
// stops counting past MaxPageContentBytes.
func contentSize(pr *reader.PdfReader, p *reader.PageInfo, lim *Limits) (int64, error) {
	var total int64
	streamOf := func(o core.PdfObject) (*core.PdfStream, error) {
		obj, err := pr.ResolveObject(o)
		if err != nil {
			return nil, pdfError(err, lim)
		}
		st, _ := obj.(*core.PdfStream)
		return st, nil
	}
	if c := p.Dict().Get("Contents"); c != nil {
		obj, err := pr.ResolveObject(c)
		if err != nil {
			return 0, pdfError(err, lim)
		}
		switch o := obj.(type) {
		case *core.PdfStream:
			total += int64(len(o.Data))
		case *core.PdfArray:
			// Each element counts every time it is listed: the parser
			// concatenates them all.
			for _, e := range o.All() {
				st, err := streamOf(e)
				if err != nil {
					return total, err
				}
				if st != nil {
					total += int64(len(st.Data))
				}
				if total > lim.MaxPageContentBytes {
					return total, nil
				}
			}
		}
	}
	res, err := p.Resources()
	if err != nil {
		return total, pdfError(err, lim)
	}
	forms := map[int]bool{}                          // form objects counted
	dicts := map[*core.PdfDictionary]bool{res: true} // resource dictionaries queued
	queue := []*core.PdfDictionary{res}
	for len(queue) > 0 && total <= lim.MaxPageContentBytes {
		xo, err := pr.ResolveObject(queue[0].Get("XObject"))
		queue = queue[1:]
		if err != nil {
			return total, pdfError(err, lim)
		}
		names, ok := xo.(*core.PdfDictionary)
		if !ok {
			continue
		}
		for _, v := range names.All() {
			ref, ok := v.(*core.PdfIndirectReference)
			if !ok || forms[ref.Num()] {
				continue // a form is a stream, so always indirect
			}
			forms[ref.Num()] = true
			st, err := streamOf(ref)
			if err != nil {
				return total, err
			}
			if st == nil || name(st.Dict.Get("Subtype")) != "Form" {
				continue
			}
			total += int64(len(st.Data))
			if fr, err := pr.ResolveObject(st.Dict.Get("Resources")); err == nil {
				if d, ok := fr.(*core.PdfDictionary); ok && !dicts[d] {
					dicts[d] = true
					queue = append(queue, d)
				}
			}
		}
	}
	return total, nil
}

// pdfError turns a parser error into ours: the limits it enforced for us
// become *LimitError, encryption becomes ErrEncrypted, the rest EINVALID.
func pdfError(err error, lim *Limits) error {
	var le *LimitError
	var ae *ingestd.Error
	switch msg := err.Error(); {
	case errors.As(err, &le), errors.As(err, &ae):
		return err
	case errors.Is(err, core.ErrInvalidPassword):
		return fmt.Errorf("%w with a password", ErrEncrypted)
	case errors.Is(err, core.ErrUnsupportedEncryption):
		return fmt.Errorf("%w (%v)", ErrEncrypted, err)
	case errors.Is(err, reader.ErrMemoryLimitExceeded) && strings.Contains(msg, "objects"):
		return &LimitError{Limit: "MaxObjects", Max: int64(lim.MaxObjects), What: "PDF cross-reference table"}
	case errors.Is(err, reader.ErrMemoryLimitExceeded) && strings.Contains(msg, "total allocation"):
		return &LimitError{Limit: "MaxDecompressedBytes", Max: lim.MaxDecompressedBytes, What: "PDF streams decompressing to more bytes"}
	case errors.Is(err, reader.ErrMemoryLimitExceeded):
		return &LimitError{Limit: "MaxStreamBytes", Max: lim.MaxStreamBytes, What: "PDF stream decompressing to more bytes"}
	case errors.Is(err, reader.ErrFormBudgetExceeded):
		return ingestd.Errorf(ingestd.EINVALID, "form XObjects draw each other more than the parser allows")
	}
	return ingestd.Errorf(ingestd.EINVALID, "%v", err)
}

// line is one line of text rebuilt from runs that share a baseline.
type line struct {
	text   string
	y      float64 // baseline, PDF units (up is larger)
	size   float64 // the size of most of its characters
	x, end float64 // left and right edges
	bullet bool    // starts with a bullet or "1."
	table  bool    // has a gap several spaces wide: a table row
}

// bodySize returns the text size covering the most characters in the
// document: the size of its running text.
func bodySize(sizes map[float64]int) float64 {
	best, n := 0.0, -1
	for size, c := range sizes {
		if c > n || c == n && size < best {
			best, n = size, c
		}
	}
	return best
}

// headingSizes maps each text size clearly above the body size to a
// heading level, largest first ("#"), at most three levels.
func headingSizes(sizes map[float64]int, body float64) map[float64]int {
	var big []float64
	for s, n := range sizes {
		if s >= body*1.15 && n > 0 {
			big = append(big, s)
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(big)))
	levels := map[float64]int{}
	for i, s := range big {
		levels[s] = min(i+1, 3)
	}
	return levels
}

func roundSize(h float64) float64 {
	if math.IsNaN(h) || math.IsInf(h, 0) || h <= 0 {
		return 0
	}
	return math.Round(h*2) / 2
}

// layoutPage writes the text of one page: lines top to bottom, joined into
// paragraphs, with headings, list items and table rows on their own.
//
// A paragraph ends where the gap to the next line is clearly wider than
// the page's usual line spacing — unless the line runs to the right
// margin and does not end a sentence (a line with taller glyphs, CJK in a
// Latin font, is spaced wider without ending anything); where the text
// size changes; before a bullet or a numbered item; around a table row (a
// line with a gap several spaces wide).
func layoutPage(b *builder, lines []line, body float64, levels map[float64]int) {
	if len(lines) == 0 {
		return
	}
	spacing := lineSpacing(lines)
	right, bulletX := math.Inf(-1), math.Inf(1)
	for _, l := range lines {
		right = max(right, l.end)
		if l.bullet {
			bulletX = min(bulletX, l.x)
		}
	}
	var para []line
	flush := func() {
		if len(para) == 0 {
			return
		}
		texts := make([]string, len(para))
		for i, l := range para {
			texts[i] = l.text
		}
		first := para[0]
		lvl, heading := levels[roundSize(first.size)]
		switch {
		case heading && len(para) <= 2 && len(strings.Join(texts, " ")) < 200:
			b.headingLine(lvl, strings.Join(texts, " "))
		case first.table:
			b.paragraph(strings.Join(texts, "\n"))
		case first.bullet:
			text := joinLines(texts)
			marker, rest := "-", strings.TrimLeft(text, bullets+" ")
			if !strings.ContainsAny(firstRune(text), bullets) {
				i := strings.IndexAny(text, ".)")
				marker, rest = text[:i+1], strings.TrimLeft(text[i+1:], " ")
			}
			depth := int(math.Round((first.x - bulletX) / max(body*1.5, 1)))
			b.listItem(max(0, min(depth, 6)), marker, rest)
		default:
			b.paragraph(joinLines(texts))
		}
		para = para[:0]
	}
	for i, l := range lines {
		if i > 0 {
			prev := lines[i-1]
			gap := prev.y - l.y
			size := max(prev.size, l.size, 1)
			full := prev.end >= right-2*size
			ends := strings.ContainsAny(lastRune(prev.text), ".!?:;。！？：；")
			wide := gap > spacing*1.25
			var newPara bool
			if len(para) > 0 && para[0].table {
				// A table block takes every line that follows closely,
				// the second line of a wrapped cell included.
				newPara = wide || gap < -size
				l.table = !newPara || l.table
			} else {
				newPara = wide && (!full || ends || gap > spacing*1.4) ||
					gap > spacing*2.2 || gap < -size || // a wide gap, a jump back up (a new column)
					math.Abs(prev.size-l.size) > 0.1*size || l.bullet || l.table
			}
			if newPara {
				flush()
			}
		}
		para = append(para, l)
	}
	flush()
}

// lineSpacing returns the usual distance between the baselines of a
// paragraph's lines on a page: the lowest tenth of the gaps between
// neighbouring lines of one size less than two and a half sizes apart
// (paragraph breaks are wider), leaving out table rows when there are
// other lines, or 1.2 times the size when there is none.
func lineSpacing(lines []line) float64 {
	var gaps, rows []float64
	for i := 1; i < len(lines); i++ {
		a, b := lines[i-1], lines[i]
		g := a.y - b.y
		if math.Abs(a.size-b.size) < 0.1*a.size && g > 0.8*a.size && g < 2.5*a.size {
			if a.table || b.table {
				rows = append(rows, g)
			} else {
				gaps = append(gaps, g)
			}
		}
	}
	if len(gaps) == 0 {
		gaps = rows
	}
	if len(gaps) == 0 {
		return 1.2 * max(lines[0].size, 1)
	}
	sort.Float64s(gaps)
	return gaps[len(gaps)/10]
}

// bullets are the characters that start a bulleted line.
const bullets = "•◦▪‣·–"

func firstRune(s string) string {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}

func lastRune(s string) string {
	s = strings.TrimRight(s, " ")
	if s == "" {
		return ""
	}
	_, n := utf8.DecodeLastRuneInString(s)
	return s[len(s)-n:]
}

// joinLines joins the lines of a paragraph with spaces — none between
// two lines of CJK text, which has no spaces, nor after a hyphen that
// ends a line.
func joinLines(lines []string) string {
	var sb strings.Builder
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if sb.Len() > 0 {
			s := sb.String()
			last, _ := utf8.DecodeLastRuneInString(s)
			first, _ := utf8.DecodeRuneInString(l)
			switch {
			case last == '-' && len(s) > 1 && isLetter(s[len(s)-2]):
				// "muster-" + "versand": keep the hyphen, drop the break
				// (a hyphen the layout added cannot be told from one the
				// author wrote; keeping it loses nothing).
			case isCJK(last) || isCJK(first):
			default:
				sb.WriteByte(' ')
			}
		}
		sb.WriteString(l)
	}
	return sb.String()
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isCJK reports whether r belongs to a script written without spaces
// between words, or is CJK punctuation.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		r >= 0x3000 && r <= 0x303f || r >= 0xff00 && r <= 0xffef
}

// buildLines groups runs into lines by baseline (within a third of the
// text size), top to bottom, and each line's runs left to right, with a
// space where the gap between two runs is wider than a fraction of a space.
func buildLines(spans []reader.TextSpan) []line {
	ss := make([]reader.TextSpan, 0, len(spans))
	for _, s := range spans {
		if s.Text != "" && finite(s.X) && finite(s.Y) && finite(s.Width) && finite(s.Height) {
			ss = append(ss, s)
		}
	}
	if len(ss) == 0 {
		return nil
	}
	// Order by baseline, top first; cluster baselines.
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].Y > ss[j].Y })
	var groups [][]reader.TextSpan
	for _, s := range ss {
		tol := max(s.Height, 1) / 2
		if n := len(groups); n > 0 && math.Abs(groups[n-1][0].Y-s.Y) <= tol {
			groups[n-1] = append(groups[n-1], s)
			continue
		}
		groups = append(groups, []reader.TextSpan{s})
	}
	lines := make([]line, 0, len(groups))
	for _, g := range groups {
		sort.SliceStable(g, func(i, j int) bool { return g[i].X < g[j].X })
		var sb strings.Builder
		l := line{y: g[0].Y, x: g[0].X}
		end := math.Inf(-1)
		bySize := map[float64]int{}
		for _, s := range g {
			bySize[s.Height] += utf8.RuneCountInString(s.Text)
			if sb.Len() > 0 {
				gap := s.X - end
				space := s.SpaceWidth
				if space <= 0 {
					space = max(s.Height, 1) * 0.25
				}
				last := sb.String()[sb.Len()-1]
				if gap > space*0.4 && last != ' ' && !strings.HasPrefix(s.Text, " ") {
					if gap > space*3 {
						sb.WriteString("  ") // a wide gap: a table column
						l.table = true
					} else {
						sb.WriteByte(' ')
					}
				}
			}
			sb.WriteString(s.Text)
			end = max(end, s.X+s.Width)
		}
		l.end = end
		for size, n := range bySize {
			if n > bySize[l.size] || n == bySize[l.size] && size > l.size {
				l.size = size
			}
		}
		l.text = strings.Join(strings.FieldsFunc(sb.String(), func(r rune) bool { return r == '\n' || r == '\r' }), " ")
		l.text = strings.TrimRight(l.text, " ")
		t := strings.TrimLeft(l.text, " ")
		l.bullet = strings.ContainsAny(firstRune(t), bullets) || numbered(t)
		if strings.TrimSpace(l.text) != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// numbered reports whether t starts like a numbered list item: "1. ",
// "12) ".
func numbered(t string) bool {
	if len(t) > 2 && t[0] >= 'a' && t[0] <= 'z' && (t[1] == '.' || t[1] == ')') && !(len(t) > 3 && isLetter(t[2]) && t[3] == '.') {
		return true // "a." or "b)", but not "e.g."
	}
	i := 0
	for i < len(t) && i < 3 && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	// "1. Text", and "1.Text" as LibreOffice draws a list label, but not
	// "12.11.2026".
	return i > 0 && i+1 < len(t) && (t[i] == '.' || t[i] == ')') && (t[i+1] == ' ' || isLetter(t[i+1]))
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
