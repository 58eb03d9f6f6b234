package extract

import (
	"archive/zip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ingestd/ingestd"
)

// archive is a DOCX or ODT zip opened under Limits: the entry count is
// checked on open, and every entry read counts against the decompressed
// budget and its own compression ratio.
type archive struct {
	zr      *zip.Reader
	lim     *Limits
	ctx     context.Context
	b       *builder
	files   map[string]*zip.File
	inflate int64 // decompressed bytes read so far, all entries
	tokens  int64 // XML tokens read so far, all parts
}

// ratioFloor is how many bytes of one entry are read before its
// compression ratio is checked: small parts compress very well honestly.
const ratioFloor = 1 << 20

func openArchive(ctx context.Context, r io.ReaderAt, size int64, lim *Limits, b *builder, kind string) (*archive, error) {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "not a %s: not a zip archive (%v)", kind, err)
	}
	if n := len(zr.File); n > lim.MaxZipEntries {
		return nil, &LimitError{Limit: "MaxZipEntries", Max: int64(lim.MaxZipEntries), What: fmt.Sprintf("zip of %d entries", n)}
	}
	a := &archive{zr: zr, lim: lim, ctx: ctx, b: b, files: make(map[string]*zip.File, len(zr.File))}
	for _, f := range zr.File {
		name := strings.TrimPrefix(f.Name, "/")
		if _, dup := a.files[name]; dup {
			b.defect("zip entry %q appears twice; the first is read", name)
			continue
		}
		a.files[name] = f
	}
	return a, nil
}

// has reports whether the archive has an entry of that name.
func (a *archive) has(name string) bool { _, ok := a.files[name]; return ok }

// open returns a reader of the named entry that stops with a *LimitError
// when the entry or the document goes over its decompression limits.
func (a *archive) open(name string) (io.ReadCloser, error) {
	f, ok := a.files[name]
	if !ok {
		return nil, ingestd.Errorf(ingestd.EINVALID, "no %s in the archive", name)
	}
	rc, err := f.Open()
	if err != nil {
		return nil, ingestd.Errorf(ingestd.EINVALID, "open %s: %v", name, err)
	}
	return &entryReader{rc: rc, a: a, name: name, compressed: int64(f.CompressedSize64)}, nil
}

type entryReader struct {
	rc         io.ReadCloser
	a          *archive
	name       string
	compressed int64
	n          int64
}

func (e *entryReader) Read(p []byte) (int, error) {
	lim := e.a.lim
	if rest := lim.MaxDecompressedBytes - e.a.inflate; int64(len(p)) > rest+1 {
		p = p[:rest+1] // one byte over tells the limit apart from the end
	}
	n, err := e.rc.Read(p)
	e.n += int64(n)
	e.a.inflate += int64(n)
	if e.a.inflate > lim.MaxDecompressedBytes {
		return n, &LimitError{Limit: "MaxDecompressedBytes", Max: lim.MaxDecompressedBytes,
			What: fmt.Sprintf("zip entries decompressing to more than %d bytes (at %s)", lim.MaxDecompressedBytes, e.name)}
	}
	if e.n > ratioFloor && e.n > lim.MaxCompressionRatio*max(e.compressed, 1) {
		return n, &LimitError{Limit: "MaxCompressionRatio", Max: lim.MaxCompressionRatio,
			What: fmt.Sprintf("zip entry %s inflating %d compressed bytes to more than %d", e.name, e.compressed, e.n)}
	}
	if err != nil && err != io.EOF {
		err = ingestd.Errorf(ingestd.EINVALID, "read %s: %v", e.name, err)
	}
	return n, err
}

func (e *entryReader) Close() error { return e.rc.Close() }

// readAll reads a small entry whole (metadata, styles), under the same
// limits as any other entry.
func (a *archive) readAll(name string) ([]byte, error) {
	rc, err := a.open(name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// xmlReader reads the tokens of one XML part under Limits: depth, the
// document's token budget and ctx (checked every ctxEvery tokens). It
// never resolves an entity: encoding/xml knows only the five predefined
// ones and does not read DTDs, so "&xxe;" stays an error or literal text.
type xmlReader struct {
	d     *xml.Decoder
	a     *archive
	part  string
	depth int
	count int64
}

const ctxEvery = 4096

func (a *archive) xml(part string, r io.Reader) *xmlReader {
	d := xml.NewDecoder(r)
	d.Strict = false // a stray "&" in text is kept, not fatal
	d.AutoClose = nil
	d.Entity = nil // predefined entities only
	d.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		// OOXML and ODF are UTF-8 or UTF-16; encoding/xml handles UTF-8
		// and refuses others, which is then a clear error.
		return nil, ingestd.Errorf(ingestd.EINVALID, "%s: unsupported XML encoding %.40q", part, label)
	}
	return &xmlReader{d: d, a: a, part: part}
}

// errStop ends a walk of eachToken or eachStart early, without error.
var errStop = errors.New("stop")

// eachToken reads part name under Limits and hands fn each of its tokens
// with the reader (fn may read on: an element's text, or skip it) until
// the part ends, fn returns errStop (nil), or an error (returned).
func (a *archive) eachToken(name string, fn func(x *xmlReader, t xml.Token) error) error {
	rc, err := a.open(name)
	if err != nil {
		return err
	}
	defer rc.Close()
	x := a.xml(name, rc)
	for {
		t, err := x.next()
		if err == io.EOF {
			return nil
		}
		if err == nil {
			err = fn(x, t)
		}
		if err == errStop {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// eachStart is eachToken for the start elements only.
func (a *archive) eachStart(name string, fn func(x *xmlReader, se xml.StartElement) error) error {
	return a.eachToken(name, func(x *xmlReader, t xml.Token) error {
		if se, ok := t.(xml.StartElement); ok {
			return fn(x, se)
		}
		return nil
	})
}

// next returns the next token (copied: it stays valid), io.EOF at the end,
// a *LimitError, ctx's error, or an EINVALID syntax error.
func (x *xmlReader) next() (xml.Token, error) {
	a := x.a
	if a.tokens++; a.tokens > a.lim.MaxXMLTokens {
		return nil, &LimitError{Limit: "MaxXMLTokens", Max: a.lim.MaxXMLTokens, What: fmt.Sprintf("XML of more than %d tokens (at %s)", a.lim.MaxXMLTokens, x.part)}
	}
	if x.count++; x.count%ctxEvery == 0 {
		if err := a.ctx.Err(); err != nil {
			return nil, err
		}
	}
	t, err := x.d.Token()
	if err != nil {
		var le *LimitError
		if err == io.EOF || errors.As(err, &le) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		var ie *ingestd.Error
		if errors.As(err, &ie) {
			// Ours (the CharsetReader's), without encoding/xml's wrapping,
			// which quotes the document's whole encoding label.
			return nil, ie
		}
		line, _ := x.d.InputPos()
		return nil, &syntaxError{fmt.Sprintf("%s: XML syntax error at line %d: %v", x.part, line, err)}
	}
	switch t := t.(type) {
	case xml.StartElement:
		if x.depth++; x.depth > a.lim.MaxXMLDepth {
			return nil, &LimitError{Limit: "MaxXMLDepth", Max: int64(a.lim.MaxXMLDepth), What: fmt.Sprintf("XML nested deeper than %d elements (at %s)", a.lim.MaxXMLDepth, x.part)}
		}
		return t.Copy(), nil
	case xml.EndElement:
		x.depth--
		return t, nil
	case xml.CharData:
		return t.Copy(), nil
	}
	return nil, nil // comments, processing instructions, directives: nothing to read
}

// skip discards the rest of the current element (its start was just read).
func (x *xmlReader) skip() error {
	for depth := 1; depth > 0; {
		t, err := x.next()
		if err != nil {
			return err
		}
		switch t.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	return nil
}

// text returns the character data of the current element and its
// children (its start was just read), reading up to its end.
func (x *xmlReader) text() (string, error) {
	var sb strings.Builder
	for depth := 1; depth > 0; {
		t, err := x.next()
		if err != nil {
			return sb.String(), err
		}
		switch t := t.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			sb.Write(t)
		}
	}
	return sb.String(), nil
}

// fatal reports whether err must stop the document (a limit, the context,
// a broken archive) rather than end one part with a defect (an XML syntax
// error: what was read so far is kept).
func fatal(err error) bool {
	if err == nil || err == io.EOF {
		return false
	}
	var le *LimitError
	if errors.As(err, &le) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var se *syntaxError
	return !errors.As(err, &se)
}

// syntaxError is malformed XML in one part. Its code is EINVALID.
type syntaxError struct{ msg string }

func (e *syntaxError) Error() string { return e.msg }
func (e *syntaxError) Unwrap() error { return ingestd.Errorf(ingestd.EINVALID, "%s", e.msg) }

func attr(se xml.StartElement, local string) string {
	for _, a := range se.Attr {
		if a.Name.Local == local {
			return a.Value
		}
	}
	return ""
}
