package extract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ingestd/ingestd"
)

// Config is the `extract:` block of a files, imap or url installation: the
// limits of reading its PDF, DOCX and ODT documents that an operator may
// need to change. A zero field takes its default; the input size is the
// connector's own cap (max_file_bytes, max_attachment_bytes, max_bytes).
type Config struct {
	// MaxPages is the largest page count of a PDF read. Default
	// DefaultMaxPages.
	MaxPages int `yaml:"max_pages"`
	// MaxTextBytes caps the text kept of one document; past it the text
	// is cut and a defect says so. Default DefaultMaxTextBytes.
	MaxTextBytes int64 `yaml:"max_text_bytes"`
	// MaxDecompressedBytes caps what one document may inflate to: a PDF's
	// streams, a DOCX's or ODT's zip entries (a zip bomb stops here).
	// Default DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int64 `yaml:"max_decompressed_bytes"`
	// Timeout bounds the reading of one document. Default DefaultTimeout.
	Timeout time.Duration `yaml:"timeout"`
}

// DefaultTimeout is how long reading one document may take when the
// configuration says nothing: at the throughput measured on the fixtures
// (about 200 PDF pages/s) it is the time of a few thousand pages, so only
// a document built to be slow meets it.
const DefaultTimeout = 30 * time.Second

// Check returns c with its defaults applied, or an EINVALID error naming
// the key (under block, such as "files.extract") of a negative value.
func (c Config) Check(block string) (Config, error) {
	for _, f := range []struct {
		key string
		neg bool
	}{
		{"max_pages", c.MaxPages < 0},
		{"max_text_bytes", c.MaxTextBytes < 0},
		{"max_decompressed_bytes", c.MaxDecompressedBytes < 0},
		{"timeout", c.Timeout < 0},
	} {
		if f.neg {
			return Config{}, ingestd.Errorf(ingestd.EINVALID, "%s.%s must not be negative", block, f.key)
		}
	}
	if c.MaxPages == 0 {
		c.MaxPages = DefaultMaxPages
	}
	if c.MaxTextBytes == 0 {
		c.MaxTextBytes = DefaultMaxTextBytes
	}
	if c.MaxDecompressedBytes == 0 {
		c.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	return c, nil
}

// Read reads data, a document of format f, as Extract does, under c's
// limits with maxInput (> 0) as MaxInputBytes, within c.Timeout (zero
// fields: their defaults). See the package function Read for what a
// timeout does.
func (c Config) Read(ctx context.Context, data []byte, f Format, maxInput int64) (*Doc, error) {
	lim := &Limits{MaxPages: c.MaxPages, MaxTextBytes: c.MaxTextBytes, MaxDecompressedBytes: c.MaxDecompressedBytes}
	if maxInput > 0 {
		lim.MaxInputBytes = maxInput
	}
	return Read(ctx, data, f, lim, c.Timeout)
}

// TimeoutError is a document that was not read within its timeout. Its
// code is ETOOLARGE (ingestd.ErrorCode): the document costs more than the
// installation allows.
type TimeoutError struct {
	Format  Format
	Timeout time.Duration
	// Waiting is true when the time went waiting for earlier parses,
	// still running past their own deadlines, to finish.
	Waiting bool
}

func (e *TimeoutError) Error() string {
	if e.Waiting {
		return fmt.Sprintf("extract %s: not started within %s: earlier documents are still being read past their deadline", e.Format.name(), e.Timeout)
	}
	return fmt.Sprintf("extract %s: not finished within %s (extract.timeout)", e.Format.name(), e.Timeout)
}

// Unwrap gives the application error, so ingestd.ErrorCode reads ETOOLARGE.
func (e *TimeoutError) Unwrap() error { return ingestd.Errorf(ingestd.ETOOLARGE, "%s", e.Error()) }

// running holds a slot for every Extract under way — those a caller
// stopped waiting for included — so that no more than cap(running) parses
// run at once, however many a hostile input leaves behind.
var running = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// extractFunc is what Read runs: Extract, or in tests a parse that hangs.
var extractFunc = Extract

// Read extracts data, a document of format f, as Extract does, and returns
// within timeout (<= 0: DefaultTimeout) whatever the parser does.
//
// Extract looks at its context only between steps, and one step (opening
// a PDF, reading one page) cannot be interrupted, so Read runs it on a
// goroutine under a context with the deadline and stops waiting at the
// deadline with a *TimeoutError. The goroutine is not killed (Go cannot
// kill one): it runs on until Extract next looks at the context, which
// is cancelled by then — at the end of the step under way, whose cost the
// limits bound — and then returns, and its result is dropped. Until it
// returns it holds one of a fixed number of slots (max(2, GOMAXPROCS)),
// which every Read takes before it starts a parse: parses left behind can
// only make later Reads wait, within their own deadline (a *TimeoutError
// with Waiting set when none frees), never pile up without bound or hold
// a sync pass forever.
//
// When ctx ends first, Read returns ctx's error (wrapped).
func Read(ctx context.Context, data []byte, f Format, lim *Limits, timeout time.Duration) (*Doc, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	slots, extract := running, extractFunc
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel() // a parse left running sees it at its next check
	select {
	case slots <- struct{}{}:
	case <-dctx.Done():
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("extract %s: %w", f.name(), err)
		}
		return nil, &TimeoutError{Format: f, Timeout: timeout, Waiting: true}
	}
	type result struct {
		doc *Doc
		err error
	}
	done := make(chan result, 1) // buffered: a parse nobody waits for still ends
	go func() {
		defer func() { <-slots }()
		d, err := extract(dctx, bytes.NewReader(data), int64(len(data)), f, lim)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		if r.err != nil && ctx.Err() == nil && dctx.Err() != nil && errors.Is(r.err, context.DeadlineExceeded) {
			return nil, &TimeoutError{Format: f, Timeout: timeout}
		}
		return r.doc, r.err
	case <-dctx.Done():
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("extract %s: %w", f.name(), err)
		}
		return nil, &TimeoutError{Format: f, Timeout: timeout}
	}
}

// ItemSections returns the sections of d that hold text, as an item's
// sections: each chunk of the item then carries its page or heading path.
func (d *Doc) ItemSections() []ingestd.Section {
	out := make([]ingestd.Section, 0, len(d.Sections))
	for _, s := range d.Sections {
		if strings.TrimSpace(s.Text) != "" {
			out = append(out, ingestd.Section{Locator: s.Locator, Text: s.Text})
		}
	}
	return out
}

// Describe notes in an item's metadata what it says about d: "format"
// (pdf, docx, odt), "pages" for a PDF, and d's defects — and that it has
// no text, when it has none — appended to any already under "defects"
// with "; ".
func (d *Doc) Describe(meta map[string]string) {
	meta["format"] = string(d.Format)
	if d.Format == PDF {
		meta["pages"] = strconv.Itoa(d.Pages)
	}
	all := d.Defects
	if len(d.ItemSections()) == 0 {
		all = append(slices.Clip(all), "no text found (a scanned PDF has no text layer; there is no OCR)")
	}
	if len(all) > 0 {
		defects := strings.Join(all, "; ")
		if have := meta["defects"]; have != "" {
			defects = have + "; " + defects
		}
		meta["defects"] = defects
	}
}
