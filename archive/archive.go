// Package archive reads and writes ingestd's portable archive: everything a
// store holds (ingestd.Archiver's records) as a stream of JSON lines, one
// record a line, compressed with zstd (or gzip, or not at all). A store of
// either kind writes it (`ingestd export`) and a store of either kind loads
// it (`ingestd import`).
//
// The stream, format "ingestd-archive" version 1:
//
//	{"manifest": {"format", "version", "created_at", "ingestd", "store": {"driver", "schema_version"},
//	              "embedder": {"id", "dims"}, "erasure_key_id", "counts": {...}}}
//	{"installation": {"id", "kind", "tier"}}                                       each installation
//	{"tombstone": {"key", "key_id", "kind", "installation", "created_at"}}         each erasure tombstone
//	{"document": {"id", "installation", "external_id", ..., "tier", "status", "deleted_at",
//	              "chunks": [{"id", "ordinal", "heading_path", "text", "fenced", "tokens",
//	                          "embedding", "embedder_id", "locator"}], "links": [{"to", "relation"}]}}
//	{"cursor": {"installation", "key", "value"}}                                   each sync cursor
//	{"end": {"counts": {...}}}                                                     what was written
//
// A vector is the base64 of its float32s, little-endian: exact, so an
// import needs no embedder. A tier is written as stored ("" for
// undeclared, a value this build does not know verbatim); what an import
// makes of it is the importer's decision. The manifest's counts are those
// of the snapshot the export read; the end record's are what the stream
// holds, and a reader refuses a stream that ends before it or does not
// hold what it says (a truncated file). A reader refuses a version newer
// than it knows, and one beyond its Limits (a record too long or of too
// many objects, a decompression bomb) while it reads it. It never
// interprets content: text travels as it was stored, fenced text
// included; what an import makes of it is the importer's decision.
package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/ingestd/ingestd"
)

// Format and Version name the stream; a reader refuses a newer Version.
const (
	Format  = "ingestd-archive"
	Version = 1
)

// Compressions a Writer can write; a Reader detects each.
const (
	Zstd = "zstd"
	Gzip = "gzip"
	None = "none"
)

// Manifest is the stream's first record.
type Manifest struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	// Ingestd is the version of the binary that wrote it.
	Ingestd string    `json:"ingestd"`
	Store   StoreInfo `json:"store"`
	// Embedder is the embedder the exporting deployment was configured
	// with; Counts.Embedders says which embedders made the vectors.
	Embedder EmbedderInfo `json:"embedder"`
	// ErasureKeyID names the erasure key the tombstones were made with.
	ErasureKeyID string                 `json:"erasure_key_id"`
	Counts       ingestd.ArchiveSummary `json:"counts"`
}

// StoreInfo names the store an archive was exported from.
type StoreInfo struct {
	Driver        string `json:"driver"`
	SchemaVersion int    `json:"schema_version"`
}

// EmbedderInfo names an embedder.
type EmbedderInfo struct {
	ID   string `json:"id"`
	Dims int    `json:"dims"`
}

// line is one record as it is written: exactly one field set.
type line struct {
	Manifest     *Manifest     `json:"manifest,omitempty"`
	Installation *installation `json:"installation,omitempty"`
	Tombstone    *tombstone    `json:"tombstone,omitempty"`
	Document     *document     `json:"document,omitempty"`
	Cursor       *cursor       `json:"cursor,omitempty"`
	End          *end          `json:"end,omitempty"`
}

type installation struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`
	Tier string `json:"tier,omitempty"`
}

type tombstone struct {
	Key          string    `json:"key"`
	KeyID        string    `json:"key_id"`
	Kind         string    `json:"kind"`
	Installation string    `json:"installation,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
}

type document struct {
	ID           string            `json:"id"`
	Installation string            `json:"installation"`
	ExternalID   string            `json:"external_id"`
	SourceKind   string            `json:"source_kind"`
	ItemKind     string            `json:"item_kind,omitempty"`
	URI          string            `json:"uri,omitempty"`
	Title        string            `json:"title,omitempty"`
	Author       string            `json:"author,omitempty"`
	CreatedAt    *time.Time        `json:"created_at,omitempty"`
	UpdatedAt    *time.Time        `json:"updated_at,omitempty"`
	ContentHash  string            `json:"content_hash"`
	Tier         string            `json:"tier,omitempty"`
	Status       string            `json:"status"`
	ParentID     string            `json:"parent_id,omitempty"`
	Meta         map[string]string `json:"meta,omitempty"`
	IngestedAt   *time.Time        `json:"ingested_at,omitempty"`
	DeletedAt    *time.Time        `json:"deleted_at,omitempty"`
	Chunks       []chunk           `json:"chunks,omitempty"`
	Links        []link            `json:"links,omitempty"`
}

type chunk struct {
	ID          string   `json:"id"`
	Ordinal     int      `json:"ordinal"`
	HeadingPath []string `json:"heading_path,omitempty"`
	Text        string   `json:"text"`
	Fenced      string   `json:"fenced"`
	Tokens      int      `json:"tokens,omitempty"`
	Embedding   string   `json:"embedding,omitempty"`
	EmbedderID  string   `json:"embedder_id,omitempty"`
	Locator     string   `json:"locator,omitempty"`
}

type link struct {
	To       string `json:"to"`
	Relation string `json:"relation"`
}

type cursor struct {
	Installation string `json:"installation"`
	Key          string `json:"key"`
	Value        string `json:"value"`
}

type end struct {
	Counts ingestd.ArchiveSummary `json:"counts"`
}

// Writer writes an archive. It is not safe for concurrent use.
type Writer struct {
	comp    io.WriteCloser // nil for None
	buf     *bufio.Writer
	out     *countingWriter // under enc: the bytes of each record
	enc     *json.Encoder
	counts  ingestd.ArchiveSummary
	largest RecordSize
}

// RecordSize is how large a record is, in what Limits bound.
type RecordSize struct {
	Bytes   int
	Objects int
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += n
	return n, err
}

// NewWriter writes the manifest (Format and Version filled in) to w,
// compressed as compression says ("" is Zstd). Close writes the end
// record and flushes; it does not close w.
func NewWriter(w io.Writer, m Manifest, compression string) (*Writer, error) {
	wr := &Writer{counts: ingestd.ArchiveSummary{Embedders: map[string]int{}}}
	switch compression {
	case Zstd, "":
		z, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderCRC(true))
		if err != nil {
			return nil, err
		}
		wr.comp = z
	case Gzip:
		wr.comp = gzip.NewWriter(w)
	case None:
	default:
		return nil, ingestd.Errorf(ingestd.EINVALID, "compression %q: want zstd, gzip or none", compression)
	}
	if wr.comp != nil {
		wr.buf = bufio.NewWriterSize(wr.comp, 1<<20)
	} else {
		wr.buf = bufio.NewWriterSize(w, 1<<20)
	}
	wr.out = &countingWriter{w: wr.buf}
	wr.enc = json.NewEncoder(wr.out)
	wr.enc.SetEscapeHTML(false)
	m.Format, m.Version = Format, Version
	m.CreatedAt = m.CreatedAt.UTC()
	if err := wr.enc.Encode(line{Manifest: &m}); err != nil {
		return nil, err
	}
	return wr, nil
}

// Write writes one record; a Summary is the manifest's business and is
// skipped.
func (w *Writer) Write(r ingestd.ArchiveRecord) error {
	var l line
	c := &w.counts
	switch {
	case r.Summary != nil:
		return nil
	case r.Installation != nil:
		in := r.Installation
		l.Installation = &installation{ID: in.ID, Kind: in.Kind, Tier: string(in.Tier)}
		c.Installations++
	case r.Tombstone != nil:
		t := r.Tombstone
		l.Tombstone = &tombstone{Key: t.Key, KeyID: t.KeyID, Kind: t.Kind, Installation: t.Installation, CreatedAt: t.CreatedAt.UTC()}
		c.Tombstones++
	case r.Cursor != nil:
		l.Cursor = &cursor{Installation: r.Cursor.Installation, Key: r.Cursor.Key, Value: r.Cursor.Value}
		c.Cursors++
	case r.Document != nil:
		l.Document = encodeDocument(r.Document)
		c.Documents++
		c.Chunks += len(r.Document.Chunks)
		c.Links += len(r.Document.Links)
		for _, ch := range r.Document.Chunks {
			id := ch.EmbedderID
			if len(ch.Embedding) == 0 {
				id = ""
			}
			c.Embedders[id]++
		}
	default:
		return ingestd.Errorf(ingestd.EINVALID, "an archive record with nothing in it")
	}
	before := w.out.n
	if err := w.enc.Encode(l); err != nil {
		return err
	}
	size := RecordSize{Bytes: w.out.n - before - 1, Objects: 2}
	if d := l.Document; d != nil {
		size.Objects += len(d.Chunks) + len(d.Links)
		if len(d.Meta) > 0 {
			size.Objects++
		}
	}
	w.largest.Bytes, w.largest.Objects = max(w.largest.Bytes, size.Bytes), max(w.largest.Objects, size.Objects)
	return nil
}

// Counts is what was written so far.
func (w *Writer) Counts() ingestd.ArchiveSummary { return w.counts }

// Largest is the most bytes and the most objects of any record written
// so far: a Reader reads the archive within Limits at least as large.
func (w *Writer) Largest() RecordSize { return w.largest }

// Close writes the end record and flushes the stream.
func (w *Writer) Close() error {
	if err := w.enc.Encode(line{End: &end{Counts: w.counts}}); err != nil {
		return err
	}
	if err := w.buf.Flush(); err != nil {
		return err
	}
	if w.comp != nil {
		return w.comp.Close()
	}
	return nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func encodeDocument(ad *ingestd.ArchivedDocument) *document {
	d := &document{ID: ad.ID, Installation: ad.Installation, ExternalID: ad.ExternalID, SourceKind: ad.SourceKind,
		ItemKind: ad.ItemKind, URI: ad.URI, Title: ad.Title, Author: ad.Author, CreatedAt: timePtr(ad.CreatedAt),
		UpdatedAt: timePtr(ad.UpdatedAt), ContentHash: ad.ContentHash, Tier: string(ad.Tier), Status: string(ad.Status),
		ParentID: ad.ParentID, Meta: ad.Meta, IngestedAt: timePtr(ad.IngestedAt), DeletedAt: timePtr(ad.DeletedAt)}
	for _, c := range ad.Chunks {
		d.Chunks = append(d.Chunks, chunk{ID: c.ID, Ordinal: c.Ordinal, HeadingPath: c.HeadingPath, Text: c.Text, Fenced: c.Fenced,
			Tokens: c.Tokens, Embedding: encodeVector(c.Embedding), EmbedderID: c.EmbedderID, Locator: c.Locator})
	}
	for _, l := range ad.Links {
		d.Links = append(d.Links, link{To: l.To, Relation: l.Relation})
	}
	return d
}

func encodeVector(v []float32) string {
	if len(v) == 0 {
		return ""
	}
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func decodeVector(s string) ([]float32, error) {
	if s == "" {
		return nil, nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b)%4 != 0 {
		return nil, fmt.Errorf("embedding is not base64 of float32s")
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// Limits bound what a Reader decompresses and holds at once, so that an
// archive from outside cannot make it hold more than its limits however
// it was crafted: each is checked while the stream is read, before a
// record is decoded, and a stream beyond one is refused (EINVALID) naming
// the limit and the line.
type Limits struct {
	// MaxRecordBytes is the longest record, in bytes of its line: a
	// longer one is refused once this much of it was read. A document's
	// record holds its chunks' text, fenced text and vectors, about three
	// times its text with 384-dimension vectors.
	MaxRecordBytes int
	// MaxRecordObjects is the most JSON objects one record may hold (a
	// document's chunks and links are objects), counted before it is
	// decoded: each decodes into a few hundred bytes of values however
	// few bytes it takes in the line.
	MaxRecordObjects int
	// MaxRatio is how many times its compressed size a stream may
	// decompress to once it has decompressed RatioFloor bytes: ingestd's
	// archives compress 3 to 10 times; a decompression bomb, a
	// thousand.
	MaxRatio   int64
	RatioFloor int64
}

// DefaultLimits are what NewReader reads with: a document of about 10 MiB
// of text, and one of 20,000 chunks, fit; no record decodes to much more
// than 100 MB. A larger document needs limits raised for it (ingestd
// import --max-record-mib, --max-record-objects).
var DefaultLimits = Limits{
	MaxRecordBytes:   32 << 20,
	MaxRecordObjects: 1 << 15,
	MaxRatio:         100,
	RatioFloor:       32 << 20,
}

// Reader reads an archive. It is not safe for concurrent use.
type Reader struct {
	m      Manifest
	lim    Limits
	lines  *lineReader
	closer func()
	line   int
	counts ingestd.ArchiveSummary
	done   bool
	// in and out count the bytes read from the file and decompressed
	// from it; out is in when the stream is not compressed.
	in, out *counter
}

// Magic numbers of the compressions a Reader detects.
var (
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
	gzipMagic = []byte{0x1f, 0x8b}
)

// zstdMaxWindow is the largest zstd window a Reader accepts: Writer uses
// 8 MiB, the zstd tool's levels up to 19 at most that; a frame asking
// for more would make the decoder allocate it.
const zstdMaxWindow = 16 << 20

// NewReader reads the manifest from r with DefaultLimits. See
// NewLimitedReader.
func NewReader(r io.Reader) (*Reader, error) { return NewLimitedReader(r, DefaultLimits) }

// NewLimitedReader reads the manifest from r, decompressing zstd or gzip
// when the stream starts with their magic number, and reads every record
// within lim (a zero field takes DefaultLimits's). Returns EINVALID for a
// stream that is not an archive, whose version is newer than Version, or
// that goes beyond lim.
func NewLimitedReader(r io.Reader, lim Limits) (*Reader, error) {
	def := DefaultLimits
	if lim.MaxRecordBytes <= 0 {
		lim.MaxRecordBytes = def.MaxRecordBytes
	}
	if lim.MaxRecordObjects <= 0 {
		lim.MaxRecordObjects = def.MaxRecordObjects
	}
	if lim.MaxRatio <= 0 {
		lim.MaxRatio = def.MaxRatio
	}
	if lim.RatioFloor <= 0 {
		lim.RatioFloor = def.RatioFloor
	}
	in := &counter{r: r}
	br := bufio.NewReaderSize(in, 1<<16)
	head, _ := br.Peek(4)
	rd := &Reader{lim: lim, closer: func() {}, counts: ingestd.ArchiveSummary{Embedders: map[string]int{}}, in: in}
	var src io.Reader = br
	switch {
	case bytes.HasPrefix(head, zstdMagic):
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			return nil, ingestd.Errorf(ingestd.EINVALID, "archive: zstd: %v", err)
		}
		src, rd.closer = z, z.Close
	case bytes.HasPrefix(head, gzipMagic):
		g, err := gzip.NewReader(br)
		if err != nil {
			return nil, ingestd.Errorf(ingestd.EINVALID, "archive: gzip: %v", err)
		}
		src = g
	default:
		rd.in = nil // not compressed: no ratio to keep
	}
	rd.out = &counter{r: src}
	rd.lines = newLineReader(rd.out, lim.MaxRecordBytes)
	l, err := rd.next()
	if err != nil {
		rd.closer()
		return nil, err
	}
	if l.Manifest == nil || l.Manifest.Format != Format {
		rd.closer()
		return nil, ingestd.Errorf(ingestd.EINVALID, "not an ingestd archive: the first record is not a %s manifest", Format)
	}
	if l.Manifest.Version > Version || l.Manifest.Version < 1 {
		rd.closer()
		return nil, ingestd.Errorf(ingestd.EINVALID, "archive version %d: this build reads up to version %d (run a newer ingestd)", l.Manifest.Version, Version)
	}
	rd.m = *l.Manifest
	return rd, nil
}

// Manifest is the archive's manifest.
func (r *Reader) Manifest() Manifest { return r.m }

// Close releases the decompressor. It returns nil: it is an io.Closer,
// like Writer, so that the two close alike.
func (r *Reader) Close() error {
	r.closer()
	return nil
}

// counter counts the bytes read through it.
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// errTooLong is a line longer than lineReader.max.
var errTooLong = errors.New("line too long")

// lineReader returns the stream's lines one at a time, none longer than
// max: its buffer grows with the longest line, by doubling, up to max
// and a newline, and a longer line is refused once that much of it was
// read. A line returned is never copied.
type lineReader struct {
	r          io.Reader
	max        int
	buf        []byte
	start, end int   // buf[start:end] is read and not yet returned
	err        error // the error r returned, once it did
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: r, max: max, buf: make([]byte, min(1<<20, max+1))}
}

// next returns the next line without its newline, valid until the next
// call, and whether it had one (the last line of a file cut short has
// none); io.EOF at the end, errTooLong past max.
func (lr *lineReader) next() (_ []byte, whole bool, _ error) {
	scanned := 0 // of buf[start:end], bytes known to hold no newline
	for {
		if i := bytes.IndexByte(lr.buf[lr.start+scanned:lr.end], '\n'); i >= 0 {
			line := lr.buf[lr.start : lr.start+scanned+i]
			lr.start += scanned + i + 1
			return line, true, nil
		}
		scanned = lr.end - lr.start
		if scanned > lr.max {
			return nil, false, errTooLong
		}
		if lr.err != nil {
			if scanned == 0 {
				return nil, false, lr.err
			}
			line := lr.buf[lr.start:lr.end]
			lr.start = lr.end
			return line, false, nil
		}
		if lr.start > 0 { // make room: the line so far to the front
			lr.end = copy(lr.buf, lr.buf[lr.start:lr.end])
			lr.start = 0
		}
		if lr.end == len(lr.buf) {
			if len(lr.buf) > lr.max {
				return nil, false, errTooLong
			}
			n := 2 * len(lr.buf)
			if n >= lr.max {
				n = lr.max + 1 // a line of max bytes and its newline
			}
			grown := make([]byte, n)
			copy(grown, lr.buf[:lr.end])
			lr.buf = grown
		}
		n, err := lr.r.Read(lr.buf[lr.end:])
		lr.end += n
		if err != nil {
			lr.err = err
		}
	}
}

// objects counts the JSON objects in a line, outside strings: what
// decoding it makes values of. It jumps from quote to quote (strings are
// most of a record's bytes).
func objects(b []byte) int {
	n := 0
	for {
		q := bytes.IndexByte(b, '"')
		if q < 0 {
			return n + bytes.Count(b, []byte("{"))
		}
		n += bytes.Count(b[:q], []byte("{"))
		b = b[q+1:]
		for { // to the quote that ends the string: one not escaped
			e := bytes.IndexByte(b, '"')
			if e < 0 {
				return n
			}
			k := e
			for k > 0 && b[k-1] == '\\' {
				k--
			}
			b = b[e+1:]
			if (e-k)%2 == 0 {
				break
			}
		}
	}
}

func (r *Reader) next() (line, error) {
	var l line
	for {
		r.line++
		b, whole, err := r.lines.next()
		switch {
		case errors.Is(err, errTooLong):
			return l, ingestd.Errorf(ingestd.EINVALID, "archive line %d: a record longer than %s (Limits.MaxRecordBytes; ingestd import --max-record-mib raises it): refused", r.line, mib(r.lim.MaxRecordBytes))
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return l, ingestd.Errorf(ingestd.EINVALID, "archive ends at record %d without its end record: the file is truncated", r.line)
		case err != nil:
			return l, ingestd.Errorf(ingestd.EINVALID, "archive line %d: %v", r.line, err)
		}
		if r.in != nil && r.out.n > r.lim.RatioFloor && r.out.n > r.lim.MaxRatio*r.in.n {
			return l, ingestd.Errorf(ingestd.EINVALID, "archive line %d: %s decompressed from %s, more than %d times its size (Limits.MaxRatio): refused as a decompression bomb; "+
				"an archive that is one can be decompressed first and imported as it is", r.line, mib(int(r.out.n)), mib(int(r.in.n)), r.lim.MaxRatio)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if n := objects(b); n > r.lim.MaxRecordObjects {
			return l, ingestd.Errorf(ingestd.EINVALID, "archive line %d: a record of %d JSON objects, more than %d (Limits.MaxRecordObjects): refused", r.line, n, r.lim.MaxRecordObjects)
		}
		if err := json.Unmarshal(b, &l); err != nil {
			if !whole && r.line > 1 {
				return l, ingestd.Errorf(ingestd.EINVALID, "archive ends inside its line %d: the file is truncated", r.line)
			}
			return l, ingestd.Errorf(ingestd.EINVALID, "archive line %d: %v", r.line, err)
		}
		return l, nil
	}
}

// mib writes n bytes for a person: "32 MiB", or "1.5 KiB" below a MiB.
func mib(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// Next returns the next record, or io.EOF after the end record once the
// stream was found to hold what it says. Returns EINVALID for a record
// that does not decode, a stream cut short, or counts that differ.
func (r *Reader) Next() (ingestd.ArchiveRecord, error) {
	if r.done {
		return ingestd.ArchiveRecord{}, io.EOF
	}
	l, err := r.next()
	if err != nil {
		return ingestd.ArchiveRecord{}, err
	}
	c := &r.counts
	switch {
	case l.Installation != nil:
		c.Installations++
		in := l.Installation
		return ingestd.ArchiveRecord{Installation: &ingestd.Installation{ID: in.ID, Kind: in.Kind, Tier: ingestd.Tier(in.Tier)}}, nil
	case l.Tombstone != nil:
		c.Tombstones++
		t := l.Tombstone
		return ingestd.ArchiveRecord{Tombstone: &ingestd.Tombstone{Key: t.Key, KeyID: t.KeyID, Kind: t.Kind, Installation: t.Installation, CreatedAt: t.CreatedAt}}, nil
	case l.Cursor != nil:
		c.Cursors++
		return ingestd.ArchiveRecord{Cursor: &ingestd.Cursor{Installation: l.Cursor.Installation, Key: l.Cursor.Key, Value: l.Cursor.Value}}, nil
	case l.Document != nil:
		ad, err := decodeDocument(l.Document)
		if err != nil {
			return ingestd.ArchiveRecord{}, ingestd.Errorf(ingestd.EINVALID, "archive line %d (document %s): %v", r.line, l.Document.ID, err)
		}
		c.Documents++
		c.Chunks += len(ad.Chunks)
		c.Links += len(ad.Links)
		for _, ch := range ad.Chunks {
			id := ch.EmbedderID
			if len(ch.Embedding) == 0 {
				id = ""
			}
			c.Embedders[id]++
		}
		return ingestd.ArchiveRecord{Document: ad}, nil
	case l.End != nil:
		want := l.End.Counts
		if want.Embedders == nil {
			want.Embedders = map[string]int{}
		}
		if fmt.Sprint(want) != fmt.Sprint(r.counts) {
			return ingestd.ArchiveRecord{}, ingestd.Errorf(ingestd.EINVALID, "archive says it holds %+v but holds %+v: the file is damaged", want, r.counts)
		}
		r.done = true
		return ingestd.ArchiveRecord{}, io.EOF
	}
	return ingestd.ArchiveRecord{}, ingestd.Errorf(ingestd.EINVALID, "archive line %d is a record of no kind this build knows", r.line)
}

// Counts is what was read so far.
func (r *Reader) Counts() ingestd.ArchiveSummary { return r.counts }

func decodeDocument(d *document) (*ingestd.ArchivedDocument, error) {
	deref := func(t *time.Time) time.Time {
		if t == nil {
			return time.Time{}
		}
		return t.UTC()
	}
	ad := &ingestd.ArchivedDocument{
		Document: ingestd.Document{ID: d.ID, Installation: d.Installation, ExternalID: d.ExternalID, SourceKind: d.SourceKind,
			ItemKind: d.ItemKind, URI: d.URI, Title: d.Title, Author: d.Author, CreatedAt: deref(d.CreatedAt),
			UpdatedAt: deref(d.UpdatedAt), ContentHash: d.ContentHash, Tier: ingestd.Tier(d.Tier), Status: ingestd.Status(d.Status),
			ParentID: d.ParentID, Meta: d.Meta, IngestedAt: deref(d.IngestedAt)},
		DeletedAt: deref(d.DeletedAt),
	}
	for _, c := range d.Chunks {
		v, err := decodeVector(c.Embedding)
		if err != nil {
			return nil, fmt.Errorf("chunk %s: %w", c.ID, err)
		}
		ad.Chunks = append(ad.Chunks, ingestd.Chunk{ID: c.ID, DocumentID: d.ID, Ordinal: c.Ordinal, HeadingPath: c.HeadingPath,
			Text: c.Text, Fenced: c.Fenced, Tokens: c.Tokens, Embedding: v, EmbedderID: c.EmbedderID, Tier: ingestd.Tier(d.Tier), Locator: c.Locator})
	}
	for _, l := range d.Links {
		ad.Links = append(ad.Links, ingestd.Link{From: d.ID, To: l.To, Relation: l.Relation})
	}
	return ad, nil
}
