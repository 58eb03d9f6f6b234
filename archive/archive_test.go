package archive_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/archive"
)

var t0 = time.Date(2026, 5, 6, 7, 8, 9, 123456789, time.UTC)

// records is one of every kind, with the values a careless encoding would
// lose: a NaN-free but awkward vector, a document without a vector, an
// unknown tier, a tombstoned document, non-ASCII text.
func records() []ingestd.ArchiveRecord {
	doc := &ingestd.ArchivedDocument{
		Document: ingestd.Document{ID: "d1", Installation: "support", ExternalID: "<m@x>", SourceKind: "imap", ItemKind: "mail",
			URI: "imap://x", Title: "Grüße <b>", Author: "A <a@x>", CreatedAt: t0, UpdatedAt: t0.Add(time.Hour), ContentHash: "h1",
			Tier: "partner-internal", Status: ingestd.StatusActive, ParentID: "d0", Meta: map[string]string{"mailbox": "INBOX"}, IngestedAt: t0},
		Chunks: []ingestd.Chunk{
			{ID: "c1", DocumentID: "d1", Ordinal: 0, HeadingPath: []string{"A", "B"}, Text: "text \u2028 with <tags> & \"quotes\"", Fenced: "<<f>>", Tokens: 5,
				Embedding: []float32{0.1, -0, float32(math.SmallestNonzeroFloat32), math.MaxFloat32, -1}, EmbedderID: "lexical-v1/5", Tier: "partner-internal", Locator: "p. 3"},
			{ID: "c2", DocumentID: "d1", Ordinal: 1, Text: "no vector", Fenced: "x", Tier: "partner-internal"},
		},
		Links: []ingestd.Link{{From: "d1", To: "d0", Relation: "parent"}},
	}
	gone := &ingestd.ArchivedDocument{Document: ingestd.Document{ID: "d2", Installation: "support", ExternalID: "<n@x>", SourceKind: "imap",
		ContentHash: "h2", Status: ingestd.StatusDeleted, IngestedAt: t0}, DeletedAt: t0.Add(2 * time.Hour)}
	return []ingestd.ArchiveRecord{
		{Installation: &ingestd.Installation{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal}},
		{Tombstone: &ingestd.Tombstone{Key: "k", KeyID: "kid", Kind: ingestd.TombstoneAuthor, CreatedAt: t0}},
		{Document: doc},
		{Document: gone},
		{Cursor: &ingestd.Cursor{Installation: "support", Key: "mailbox:INBOX", Value: `{"last_uid":4}`}},
	}
}

func mustWrite(t *testing.T, compression string, recs []ingestd.ArchiveRecord) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := archive.NewWriter(&buf, archive.Manifest{CreatedAt: t0, Embedder: archive.EmbedderInfo{ID: "lexical-v1/5", Dims: 5}}, compression)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll(b []byte) (archive.Manifest, []ingestd.ArchiveRecord, error) {
	r, err := archive.NewReader(bytes.NewReader(b))
	if err != nil {
		return archive.Manifest{}, nil, err
	}
	defer r.Close()
	var out []ingestd.ArchiveRecord
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r.Manifest(), out, nil
		}
		if err != nil {
			return r.Manifest(), out, err
		}
		out = append(out, rec)
	}
}

func TestRoundTrip(t *testing.T) {
	want := records()
	for _, c := range []string{archive.Zstd, archive.Gzip, archive.None} {
		t.Run(c, func(t *testing.T) {
			b := mustWrite(t, c, want)
			m, got, err := readAll(b)
			if err != nil {
				t.Fatal(err)
			}
			if m.Format != archive.Format || m.Version != archive.Version || !m.CreatedAt.Equal(t0) || m.Embedder.ID != "lexical-v1/5" {
				t.Fatalf("manifest %+v", m)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("read back:\n%s\nwant:\n%s", show(got), show(want))
			}
			if c == archive.None && !bytes.HasPrefix(b, []byte(`{"manifest":`)) {
				t.Fatalf("an uncompressed archive starts %q", b[:20])
			}
		})
	}
}

func show(recs []ingestd.ArchiveRecord) string {
	var b strings.Builder
	for _, r := range recs {
		switch {
		case r.Document != nil:
			fmt.Fprintf(&b, "%+v\n", *r.Document)
		case r.Installation != nil:
			fmt.Fprintf(&b, "%+v\n", *r.Installation)
		case r.Tombstone != nil:
			fmt.Fprintf(&b, "%+v\n", *r.Tombstone)
		case r.Cursor != nil:
			fmt.Fprintf(&b, "%+v\n", *r.Cursor)
		}
	}
	return b.String()
}

// TestRefuses: what is not a whole archive of a version this build reads
// is refused with what is wrong, and nothing of it passes for complete.
func TestRefuses(t *testing.T) {
	whole := mustWrite(t, archive.None, records())
	lines := strings.SplitAfter(string(whole), "\n")
	for _, tt := range []struct {
		name, data, want string
	}{
		{"not an archive", `{"hello": 1}` + "\n", "not an ingestd archive"},
		{"not JSON", "PK\x03\x04zip", "archive line 1"},
		{"cut inside a record", strings.Join(lines[:3], "") + lines[3][:len(lines[3])/2], "truncated"},
		{"newer version", strings.Replace(lines[0], `"version":1`, `"version":2`, 1), "this build reads up to version 1"},
		{"truncated", strings.Join(lines[:4], ""), "truncated"},
		{"a record dropped", strings.Join(append(lines[:3:3], lines[4:]...), ""), "damaged"},
		{"a bad vector", strings.Replace(string(whole), `"embedder_id"`, `"embedding":"!!","embedder_id"`, 1), "embedding is not base64"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := readAll([]byte(tt.data))
			if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want EINVALID with %q", err, tt.want)
			}
		})
	}
	// A compressed archive cut short is refused too.
	z := mustWrite(t, archive.Zstd, records())
	if _, _, err := readAll(z[:len(z)/2]); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Fatalf("half a zstd archive: %v, want EINVALID", err)
	}
	if _, err := archive.NewWriter(io.Discard, archive.Manifest{}, "lz4"); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Fatalf("unknown compression: %v", err)
	}
}
