// Package extract turns rich documents — PDF (the text layer), DOCX and
// ODT — into readable text split into sections, each with a locator a
// reader can follow back to the source: the page of a PDF ("p. 3"), the
// heading path of a DOCX or ODT ("Refunds > Steps").
//
// Everything it reads comes from outside and may be hostile, so
// every cost is bounded by Limits: input size, pages, objects, decompressed
// bytes, zip entries and compression ratio, XML depth and tokens, extracted
// text, and the context's deadline. Going over a limit is a *LimitError
// that names the limit; a file that cannot be read is an EINVALID error
// naming what was wrong; a panic inside a third-party parser is recovered
// and reported the same way. Partial problems (one unreadable page, an XML
// syntax error half-way through) keep what was read and are listed in
// Doc.Defects. Extract never opens anything but the bytes it is given:
// XML entities are not resolved and no external reference is followed.
//
// The package decides nothing from the content it reads (provenance never
// reads content): its callers give the result the tier of its parent.
package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/ingestd/ingestd"
)

// Format is a rich-document format Extract can read.
type Format string

// Formats. Unknown means Detect did not recognise the input.
const (
	Unknown Format = ""
	PDF     Format = "pdf"
	DOCX    Format = "docx"
	ODT     Format = "odt"
)

// Doc is the text of one document, in reading order.
type Doc struct {
	Format Format
	Title  string // from the document's metadata; may be empty
	Author string // from the document's metadata; may be empty
	// Pages is the number of pages of a PDF (0 for DOCX and ODT).
	Pages int
	// Sections hold the text in order. Chunk boundaries should follow
	// section boundaries so that every chunk has one locator.
	Sections []Section
	// Defects lists what was wrong and recovered from, in the order it was
	// met: an unreadable page, a truncated text, an XML syntax error...
	Defects []string
	// Truncated is true when the text stopped at Limits.MaxTextBytes.
	Truncated bool
}

// Section is a run of text that shares one locator: a PDF page, or the
// part of a DOCX/ODT between two headings.
type Section struct {
	// Locator says where the text is, for a person: "p. 3" for a PDF page,
	// the heading path "Refunds > Steps" for a DOCX or ODT section, and ""
	// for text before a document's first heading.
	Locator string
	// Page is the 1-based page of a PDF section; 0 otherwise.
	Page int
	// Headings is the heading path of a DOCX or ODT section, outermost
	// first; nil for a PDF page and for text before the first heading.
	Headings []string
	// Text is readable Markdown-like text: paragraphs separated by a blank
	// line, headings as "#" lines, list items as "- " or "1. ", table rows
	// as "| a | b |". It is valid UTF-8.
	Text string
}

// Text returns every section's text joined by a blank line.
func (d *Doc) Text() string {
	parts := make([]string, 0, len(d.Sections))
	for _, s := range d.Sections {
		if s.Text != "" {
			parts = append(parts, s.Text)
		}
	}
	return strings.Join(parts, "\n\n")
}

// Limits bound what one Extract call may cost. A zero field takes its
// default; a negative field is an error (there is no "unlimited").
type Limits struct {
	// MaxInputBytes is the largest input accepted. Default 64 MiB.
	MaxInputBytes int64
	// MaxTextBytes caps the extracted text; past it the text is cut at a
	// character boundary, Doc.Truncated is set and a Defect says so.
	// Default 8 MiB.
	MaxTextBytes int64
	// MaxPages is the largest page count of a PDF. A PDF whose page tree
	// holds more pages (counting a node once per place it is listed, so a
	// tree that lists one node a million times counts a million) is
	// refused before it is parsed. Default 5,000.
	MaxPages int
	// MaxObjects is the largest number of objects in a PDF. Default 500,000.
	MaxObjects int
	// MaxDecompressedBytes caps the bytes decompressed from one document:
	// PDF streams, or the zip entries read from a DOCX or ODT. Default
	// 256 MiB.
	MaxDecompressedBytes int64
	// MaxStreamBytes caps one decompressed PDF stream. Default 32 MiB.
	MaxStreamBytes int64
	// MaxPageContentBytes caps the content one PDF page draws: its content
	// streams (each as often as it is listed) and the forms it can reach.
	// The parser holds some hundred bytes per byte it interprets, so this
	// bounds the memory of one page; a page over it is skipped with a
	// Defect. The content of all pages together counts against
	// MaxDecompressedBytes; the pages past it are not read (a Defect, and
	// Doc.Truncated). Default 2 MiB.
	MaxPageContentBytes int64
	// MaxZipEntries is the largest number of entries in a DOCX or ODT.
	// Default 5,000.
	MaxZipEntries int
	// MaxCompressionRatio is the largest ratio of decompressed to
	// compressed bytes of one zip entry, checked once the entry has given
	// more than 1 MiB. Default 200.
	MaxCompressionRatio int64
	// MaxXMLDepth is the deepest element nesting of an XML part. Default 256.
	MaxXMLDepth int
	// MaxXMLTokens is the largest number of XML tokens read from one
	// document. Default 20,000,000.
	MaxXMLTokens int64
}

// Defaults for Limits.
const (
	DefaultMaxInputBytes        = 64 << 20
	DefaultMaxTextBytes         = 8 << 20
	DefaultMaxPages             = 5000
	DefaultMaxObjects           = 500_000
	DefaultMaxDecompressedBytes = 256 << 20
	DefaultMaxStreamBytes       = 32 << 20
	DefaultMaxPageContentBytes  = 2 << 20
	DefaultMaxZipEntries        = 5000
	DefaultMaxCompressionRatio  = 200
	DefaultMaxXMLDepth          = 256
	DefaultMaxXMLTokens         = 20_000_000
)

// withDefaults returns a copy of l (nil means all defaults) with zero
// fields set to their defaults, or an error naming a negative field.
func (l *Limits) withDefaults() (Limits, error) {
	var o Limits
	if l != nil {
		o = *l
	}
	type field struct {
		name string
		v    *int64
		def  int64
	}
	pages, objects, entries, depth := int64(o.MaxPages), int64(o.MaxObjects), int64(o.MaxZipEntries), int64(o.MaxXMLDepth)
	fields := []field{
		{"MaxInputBytes", &o.MaxInputBytes, DefaultMaxInputBytes},
		{"MaxTextBytes", &o.MaxTextBytes, DefaultMaxTextBytes},
		{"MaxPages", &pages, DefaultMaxPages},
		{"MaxObjects", &objects, DefaultMaxObjects},
		{"MaxDecompressedBytes", &o.MaxDecompressedBytes, DefaultMaxDecompressedBytes},
		{"MaxStreamBytes", &o.MaxStreamBytes, DefaultMaxStreamBytes},
		{"MaxPageContentBytes", &o.MaxPageContentBytes, DefaultMaxPageContentBytes},
		{"MaxZipEntries", &entries, DefaultMaxZipEntries},
		{"MaxCompressionRatio", &o.MaxCompressionRatio, DefaultMaxCompressionRatio},
		{"MaxXMLDepth", &depth, DefaultMaxXMLDepth},
		{"MaxXMLTokens", &o.MaxXMLTokens, DefaultMaxXMLTokens},
	}
	for _, f := range fields {
		switch {
		case *f.v < 0:
			return Limits{}, ingestd.Errorf(ingestd.EINVALID, "extract: limit %s is negative (%d)", f.name, *f.v)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	o.MaxPages, o.MaxObjects, o.MaxZipEntries, o.MaxXMLDepth = int(pages), int(objects), int(entries), int(depth)
	return o, nil
}

// LimitError reports that a document went over one of Limits. Its code is
// ETOOLARGE (ingestd.ErrorCode), so it reads as a defect of the input, not
// a fault of the server.
type LimitError struct {
	Limit string // the Limits field, e.g. "MaxPages"
	Max   int64  // the limit in force
	What  string // what went over, e.g. "page tree lists 1000000 pages"
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s over the %s limit of %d", e.What, e.Limit, e.Max)
}

// Unwrap gives the application error, so ingestd.ErrorCode reads ETOOLARGE.
func (e *LimitError) Unwrap() error { return ingestd.Errorf(ingestd.ETOOLARGE, "%s", e.Error()) }

// ErrEncrypted is returned (wrapped) for a PDF that cannot be opened
// without a password. A PDF encrypted with an empty user password, which
// any viewer opens, is read.
var ErrEncrypted = ingestd.Errorf(ingestd.EINVALID, "document is encrypted")

// ErrUnknownFormat is returned (wrapped) by Extract for Unknown or any
// format it does not read.
var ErrUnknownFormat = ingestd.Errorf(ingestd.EINVALID, "not a PDF, DOCX or ODT document")

// Extract reads the document of the given format from r (size bytes) and
// returns its text in sections.
//
// Errors: a *LimitError (ETOOLARGE) when the input goes over a limit that
// makes reading it unsafe; ErrEncrypted for a PDF that needs a password;
// ErrUnknownFormat for a format it does not read; an EINVALID error naming
// the problem for input that is not a readable document, including a
// panic inside a parser; ctx.Err() (wrapped) when ctx ends first — ctx is
// checked between PDF pages, every few thousand PDF objects while they
// are counted and every few thousand XML tokens, so one step of bounded
// cost (opening a PDF, reading one page) may finish after the deadline. Going over MaxTextBytes is
// not an error: the text is cut and Doc.Defects says so.
func Extract(ctx context.Context, r io.ReaderAt, size int64, format Format, limits *Limits) (*Doc, error) {
	return extract(ctx, r, size, format, limits, readerOf(format), false)
}

// read is one format's reader: it reads r into b under lim.
type read func(ctx context.Context, r io.ReaderAt, size int64, lim *Limits, b *builder) error

// readerOf returns the reader of format, nil for a format Extract does
// not read.
func readerOf(format Format) read {
	switch format {
	case PDF:
		return extractPDF
	case DOCX:
		return extractDOCX
	case ODT:
		return extractODT
	}
	return nil
}

// extract is Extract with the reader given (nil: ErrUnknownFormat). A
// panic inside it is an EINVALID error, with the stack when stacks is
// set (tests, to find the panic).
func extract(ctx context.Context, r io.ReaderAt, size int64, format Format, limits *Limits, rd read, stacks bool) (doc *Doc, err error) {
	lim, err := limits.withDefaults()
	if err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, ingestd.Errorf(ingestd.EINVALID, "extract: negative size %d", size)
	}
	if size > lim.MaxInputBytes {
		return nil, &LimitError{Limit: "MaxInputBytes", Max: lim.MaxInputBytes, What: fmt.Sprintf("%s of %d bytes", format.name(), size)}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("extract %s: %w", format.name(), err)
	}
	defer func() {
		if p := recover(); p != nil {
			doc = nil
			err = ingestd.Errorf(ingestd.EINVALID, "extract %s: parser panicked: %v", format.name(), p)
			if stacks {
				err = fmt.Errorf("%w\n%s", err, debug.Stack())
			}
		}
	}()
	if rd == nil {
		return nil, fmt.Errorf("extract %q: %w", string(format), ErrUnknownFormat)
	}
	b := newBuilder(format, lim.MaxTextBytes)
	if err = rd(ctx, r, size, &lim, b); err != nil {
		err = fmt.Errorf("extract %s: %w", format.name(), err)
		if msg := err.Error(); msg != safeMessage(msg) {
			// A message that quotes the input (a parser's) is made safe
			// to store and show; the error chain is kept.
			err = &safeError{msg: safeMessage(msg), err: err}
		}
		return nil, err
	}
	return b.doc(), nil
}

// safeError shows a message made fit to store in place of err's own.
type safeError struct {
	msg string
	err error
}

func (e *safeError) Error() string { return e.msg }
func (e *safeError) Unwrap() error { return e.err }

// errorf returns an EINVALID error: the input is not a readable document.
func errorf(format string, args ...any) error {
	return ingestd.Errorf(ingestd.EINVALID, format, args...)
}

func (f Format) name() string {
	switch f {
	case PDF:
		return "PDF"
	case DOCX:
		return "DOCX"
	case ODT:
		return "ODT"
	}
	return "document"
}

// IsLimit reports whether err is a *LimitError for the named limit ("" for
// any limit).
func IsLimit(err error, limit string) bool {
	var le *LimitError
	return errors.As(err, &le) && (limit == "" || le.Limit == limit)
}
