// Package storetest is the conformance suite every ingestd.Store passes.
// It speaks only the ingestd.Store interface, so store/sqlite and
// store/postgres run the same contract.
//
// It must never reach into a store's tables or import a store package.
//
// One file per store role: documents.go (ingestd.DocumentStore),
// searcher.go (ingestd.Searcher), runs.go (ingestd.RunStore), erasure.go
// (ingestd.Eraser), archive.go (ingestd.Archiver) and store.go (what
// ingestd.Store adds to them); this file holds Run and the fixtures the
// roles share.
package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
)

// Run runs every subtest against stores made by open. open returns a new,
// empty store for each subtest and arranges its closing (t.Cleanup), with
// the one fence's check as its FenceCheck; fence is the one fence (any
// origin), which the cases that import fence their chunks with.
func Run(t *testing.T, open func(t *testing.T) ingestd.Store, fence func(text string) string) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s ingestd.Store)
	}{
		// ingestd.DocumentStore (documents.go)
		{"PutDocument/New", testPutNew},
		{"PutDocument/Idempotent", testPutIdempotent},
		{"PutDocument/ChangedContentReplacesChunks", testPutReplaces},
		{"PutDocument/TierOrStatusChange", testPutTierStatus},
		{"PutDocument/SourceKindChange", testPutSourceKind},
		{"PutDocument/Invalid", testPutInvalid},
		{"PutDocuments", testPutDocuments},
		{"PutDocuments/AsTheDefault", testPutDocumentsAsDefault},
		{"Document/NotFound", testDocumentNotFound},
		{"DeleteDocument/Tombstone", testDelete},
		{"DeleteDocument/Resurrection", testResurrect},
		{"DeleteDocument/NotFound", testDeleteNotFound},
		{"SetStatus", testSetStatus},
		{"DocumentRefs", testDocumentRefs},
		{"Cursors", testCursors},

		// ingestd.Searcher (searcher.go)
		{"Filters/Text", func(t *testing.T, s ingestd.Store) { testFilters(t, s, searchText) }},
		{"Filters/Vector", func(t *testing.T, s ingestd.Store) { testFilters(t, s, searchVector) }},
		{"TierFacts", testTierFacts},
		{"TierFacts/Parents", testTierFactsParents},
		{"CountDocuments", testCountDocuments},
		{"CountDocuments/MetaAndParents", testCountDocumentsMeta},
		{"SearchText/Relevance", testSearchTextRelevance},
		{"SearchText/QuerySyntaxIsText", testSearchTextSyntax},
		{"SearchText/Limit", testSearchTextLimit},
		{"SearchText/NumberWordsAndSynonyms", testSearchTextFolds},
		{"SearchText/FilterBeyondBestHits", testSearchTextFilterDeep},
		{"SearchVector/Ordering", testSearchVectorOrdering},
		{"SearchVector/EmbedderSeparation", testSearchVectorEmbedders},
		{"SearchVector/SeesLaterWrites", testSearchVectorLaterWrites},
		{"Chunks", testChunks},
		{"DocumentChunks", testDocumentChunks},
		{"ExpansionChunks", testExpansionChunks},
		{"ExpansionChunks/AsTheDefault", testExpansionChunksAsDefault},
		{"Links", testLinks},

		// ingestd.RunStore (runs.go)
		{"Runs/RoundTrip", testRunsRoundTrip},
		{"Runs/Keep", testRunsKeep},
		{"Runs/Invalid", testRunsInvalid},
		{"RunStates", testRunStates},

		// the Store's own methods (store.go)
		{"EmbeddingCache", testEmbeddingCache},
		{"ChunksToEmbed", testChunksToEmbed},
		{"PutInstallations", testPutInstallations},
		{"Ping", testPing},

		// ingestd.Eraser (erasure.go)
		{"FindDocuments", testFindDocuments},
		{"Erase/RemovesEverything", testEraseRemoves},
		{"Erase/Tombstones", testEraseTombstones},
		{"Erase/Invalid", testEraseInvalid},
		{"Cursors/ByPrefix", testCursorsByPrefix},

		// ingestd.Archiver (archive.go): open makes the round trip's second
		// store; fence fences the chunks the cases import.
		{"Archive/RoundTrip", func(t *testing.T, s ingestd.Store) { testArchiveRoundTrip(t, s, open(t), fence) }},
		{"Archive/ImportReplaces", testImportReplaces},
		{"Archive/ImportInvalid", testImportInvalid},
		{"Archive/ImportRefusesUnfenced", func(t *testing.T, s ingestd.Store) { testImportRefusesUnfenced(t, s, fence) }},
	}
	tests = append(tests, orderTests(open)...)
	tests = append(tests, principalTests()...) // principals.go
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, open(t))
		})
	}
}

// MetaKeys are the metadata keys the suite asks TierFacts and
// CountDocuments for: a store that keeps some keys' values in memory runs
// the suite with them kept too.
var MetaKeys = []string{"author_association", "content_type", "mailbox"}

// Dims is the dimension of the vectors the suite writes.
const Dims = 8

const testEmbedder = "storetest/8"

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 890000000, time.UTC)

// Doc returns a document of the installation with the external id, kind
// "files", the tier and a content hash derived from hash.
func Doc(inst, ext string, tier ingestd.Tier, hash string) *ingestd.Document {
	return &ingestd.Document{
		ID:           ingestd.DocumentID(inst, ext),
		Installation: inst,
		ExternalID:   ext,
		SourceKind:   "files",
		ItemKind:     "file",
		URI:          "file:///" + inst + "/" + ext,
		Title:        "Title of " + ext,
		Author:       "someone",
		CreatedAt:    t0,
		UpdatedAt:    t0.Add(time.Hour),
		ContentHash:  ingestd.ContentHash(hash),
		Tier:         tier,
		Status:       ingestd.StatusActive,
		IngestedAt:   t0.Add(2 * time.Hour),
	}
}

// Chunks returns one chunk per text for doc, in order, each with the unit
// vector along axis (i + axis) % Dims as its embedding.
func Chunks(doc *ingestd.Document, axis int, texts ...string) []ingestd.Chunk {
	out := make([]ingestd.Chunk, len(texts))
	for i, text := range texts {
		out[i] = ingestd.Chunk{
			ID:          ingestd.ChunkID(doc.ID, text, 0),
			DocumentID:  doc.ID,
			Ordinal:     i,
			HeadingPath: []string{"Guide", fmt.Sprintf("Part %d", i)},
			Text:        text,
			Fenced:      "<<fenced>>" + text + "<<end>>",
			Tokens:      len(strings.Fields(text)),
			Embedding:   Axis((i + axis) % Dims),
			EmbedderID:  testEmbedder,
			Tier:        doc.Tier,
		}
	}
	return out
}

// Axis is the unit vector along axis i.
func Axis(i int) []float32 {
	v := make([]float32, Dims)
	v[i%Dims] = 1
	return v
}

// MustPut writes the document and fails the test on error; it returns
// whether the store reported a change.
func MustPut(tb testing.TB, s ingestd.Store, doc *ingestd.Document, chunks []ingestd.Chunk, links []ingestd.Link) bool {
	tb.Helper()
	d := *doc
	changed, err := s.PutDocument(context.Background(), &d, chunks, links)
	if err != nil {
		tb.Fatalf("PutDocument(%s): %v", doc.ID, err)
	}
	return changed
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := ingestd.ErrorCode(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

func ctx() context.Context { return context.Background() }

func docIDs(hits []ingestd.Hit) []string {
	seen := map[string]bool{}
	var out []string
	for _, h := range hits {
		if !seen[h.DocumentID] {
			seen[h.DocumentID] = true
			out = append(out, h.DocumentID)
		}
	}
	slices.Sort(out)
	return out
}

func chunkIDs(hits []ingestd.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ChunkID
	}
	return out
}

func sorted(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func equalStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s = %q, want %q", what, got, want)
	}
}

func viewIDs(vs []ingestd.ChunkView) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.ID
	}
	return out
}

func chunkIDList(cs []ingestd.Chunk) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func link(from, to, rel string) ingestd.Link {
	return ingestd.Link{From: from, To: to, Relation: rel}
}

// archiveFixture fills s with one of everything an archive carries.
// Fenced returns chunks with each Fenced made by fence from its Text, as
// every store's FenceCheck accepts.
func Fenced(fence func(string) string, chunks []ingestd.Chunk) []ingestd.Chunk {
	for i := range chunks {
		chunks[i].Fenced = fence(chunks[i].Text)
	}
	return chunks
}
