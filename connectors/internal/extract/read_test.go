package extract

import (
	"context"
	"errors"
	"io"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
)

// hangingParses replaces Extract, for the test, with a parse that ignores
// its context and blocks until release is closed, and running with n
// slots. started receives once per parse begun.
func hangingParses(t *testing.T, n int) (release chan struct{}, started chan struct{}) {
	t.Helper()
	release, started = make(chan struct{}), make(chan struct{}, 16)
	oldExtract, oldRunning := extractFunc, running
	extractFunc = func(ctx context.Context, r io.ReaderAt, size int64, f Format, l *Limits) (*Doc, error) {
		started <- struct{}{}
		<-release
		return &Doc{Format: f}, nil
	}
	running = make(chan struct{}, n)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
		extractFunc, running = oldExtract, oldRunning
	})
	return release, started
}

// TestReadIsExtract: Read returns what Extract returns, under Config's
// limits.
func TestReadIsExtract(t *testing.T) {
	data := MustRead(t, filepath.Join("testdata", "fixtures", "handbook.pdf"))
	want := MustExtract(t, "handbook.pdf", data, nil)
	got, err := Config{}.Read(t.Context(), data, PDF, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if render(got) != render(want) {
		t.Fatalf("Read differs from Extract:\n%s", diff(render(want), render(got)))
	}
	if _, err := (Config{MaxPages: 2}).Read(t.Context(), data, PDF, 0); !IsLimit(err, "MaxPages") {
		t.Fatalf("a 3-page PDF with max_pages 2: err = %v, want the MaxPages limit", err)
	}
	if _, err := (Config{}).Read(t.Context(), data, PDF, int64(len(data)-1)); !IsLimit(err, "MaxInputBytes") {
		t.Fatalf("over the connector's size cap: err = %v, want the MaxInputBytes limit", err)
	}
}

// TestReadStopsWaitingAtTheDeadline: a parse that never looks at its
// context costs its caller the timeout, not forever; it keeps its slot
// until it returns, so parses left behind make later Reads wait (within
// their own deadline) instead of piling up; a caller's cancelled context
// is its own error, not a timeout.
func TestReadStopsWaitingAtTheDeadline(t *testing.T) {
	release, started := hangingParses(t, 1)
	const timeout = 20 * time.Millisecond

	_, err := Read(t.Context(), []byte("%PDF-1.7"), PDF, nil, timeout)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Waiting || ingestd.ErrorCode(err) != ingestd.ETOOLARGE {
		t.Fatalf("a parse that hangs: err = %v, want a *TimeoutError (ETOOLARGE)", err)
	}
	<-started
	if got := len(running); got != 1 {
		t.Fatalf("%d slots held while the abandoned parse runs, want 1", got)
	}

	// The only slot is held: the next Read gives up waiting for it.
	_, err = Read(t.Context(), []byte("%PDF-1.7"), PDF, nil, timeout)
	if !errors.As(err, &te) || !te.Waiting {
		t.Fatalf("no slot free: err = %v, want a waiting *TimeoutError", err)
	}

	// A cancelled caller gets its own error.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := Read(ctx, []byte("%PDF-1.7"), PDF, nil, timeout); !errors.Is(err, context.Canceled) || errors.As(err, &te) {
		t.Fatalf("cancelled: err = %v, want context.Canceled", err)
	}

	// Once the parse returns, its slot is free and Reads run again.
	close(release)
	running <- struct{}{} // blocks until the abandoned parse has let go
	<-running
	doc, err := Read(t.Context(), []byte("%PDF-1.7"), PDF, nil, time.Minute)
	if err != nil || doc.Format != PDF {
		t.Fatalf("after the parse returned: %v, %v", doc, err)
	}
}

// TestReadTimeoutOfExtract: when Extract itself notices the deadline
// (between pages) the caller gets the same *TimeoutError.
func TestReadTimeoutOfExtract(t *testing.T) {
	old := extractFunc
	t.Cleanup(func() { extractFunc = old })
	extractFunc = func(ctx context.Context, r io.ReaderAt, size int64, f Format, l *Limits) (*Doc, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	_, err := Read(t.Context(), []byte("PK\x03\x04"), DOCX, nil, 10*time.Millisecond)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Format != DOCX {
		t.Fatalf("err = %v, want a *TimeoutError for the DOCX", err)
	}
}

func TestConfigCheck(t *testing.T) {
	got, err := Config{MaxPages: 10}.Check("files.extract")
	if err != nil {
		t.Fatal(err)
	}
	want := Config{MaxPages: 10, MaxTextBytes: DefaultMaxTextBytes, MaxDecompressedBytes: DefaultMaxDecompressedBytes, Timeout: DefaultTimeout}
	if got != want {
		t.Fatalf("Check = %+v, want %+v", got, want)
	}
	for _, tt := range []struct {
		c   Config
		key string
	}{
		{Config{MaxPages: -1}, "files.extract.max_pages"},
		{Config{MaxTextBytes: -1}, "files.extract.max_text_bytes"},
		{Config{MaxDecompressedBytes: -1}, "files.extract.max_decompressed_bytes"},
		{Config{Timeout: -time.Second}, "files.extract.timeout"},
	} {
		_, err := tt.c.Check("files.extract")
		if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), tt.key) {
			t.Errorf("%+v: err = %v, want EINVALID naming %s", tt.c, err, tt.key)
		}
	}
}

func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		name string
		doc  Doc
		have string
		want map[string]string
	}{
		{"pdf", Doc{Format: PDF, Pages: 3, Sections: []Section{{Locator: "p. 1", Text: "x"}}, Defects: []string{"p. 2: unreadable"}}, "not UTF-8",
			map[string]string{"format": "pdf", "pages": "3", "defects": "not UTF-8; p. 2: unreadable"}},
		{"docx", Doc{Format: DOCX, Sections: []Section{{Text: "x"}}}, "",
			map[string]string{"format": "docx"}},
		{"no text", Doc{Format: PDF, Pages: 1, Sections: []Section{{Locator: "p. 1", Text: " \n"}}}, "",
			map[string]string{"format": "pdf", "pages": "1", "defects": "no text found (a scanned PDF has no text layer; there is no OCR)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			meta := map[string]string{}
			if tt.have != "" {
				meta["defects"] = tt.have
			}
			tt.doc.Describe(meta)
			if !maps.Equal(meta, tt.want) {
				t.Fatalf("meta %v, want %v", meta, tt.want)
			}
		})
	}
}
