package retrieval_test

import (
	"context"
	"os"
	"reflect"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/retrieval"
	"github.com/ingestd/ingestd/retrieval/retrievaltest"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/postgres/pgtest"
)

// plainStore answers ExpansionChunks by the default over DocumentChunks,
// as a store without a faster path does, instead of the Postgres query.
type plainStore struct{ ingestd.Store }

func (p plainStore) ExpansionChunks(ctx context.Context, x ingestd.Expansion) ([]ingestd.ChunkView, error) {
	return ingestd.ExpansionChunksOf(ctx, p.Store, x)
}

// TestExpansionChunksAnswerAsDocumentChunks: over the same Postgres
// store, retrieval answers every query alike whether the store picks the
// expansion's chunks in SQL or the default does from every chunk of the
// documents (ingestd.ExpansionChunksOf over DocumentChunks): same three
// blocks, same scores, same verdict — with and without exclude_untrusted
// and narrowing.
func TestExpansionChunksAnswerAsDocumentChunks(t *testing.T) {
	srv := pgtest.SkipUnlessServer(t, os.Getenv(pgtest.EnvURL))
	db := pgtest.MustCreateDB(t, srv)
	s := pgtest.MustOpenURL(t, db, &postgres.Options{Dims: retrievaltest.Dims})
	e := embedder.NewLexical(retrievaltest.Dims)
	syn := retrievaltest.NewSynthetic(3000, 11)
	retrievaltest.MustPut(t, s, e, append(retrievaltest.Acceptance(), syn.Docs...)...)
	fast, err := retrieval.New(retrieval.Options{Store: s, Embedder: e, Installations: retrievaltest.Installations()})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := retrieval.New(retrieval.Options{Store: plainStore{s}, Embedder: e, Installations: retrievaltest.Installations()})
	if err != nil {
		t.Fatal(err)
	}
	queries := append([]string{"refund form", "vacation policy", "database migration rollback"}, syn.Queries[:80]...)
	var expanded, siblings int
	for i, q := range queries {
		r := ingestd.RetrieveRequest{Query: q, TopK: 8, RequestID: "same"}
		switch i % 3 {
		case 1:
			r.ExcludeUntrusted = true
		case 2:
			r.Installations = []string{"handbook", "repo", "support"}
		}
		want, err := plain.Retrieve(t.Context(), r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fast.Retrieve(t.Context(), r)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("query %q (%d): answers differ\nExpansionChunks: %+v\nDocumentChunks:  %+v", q, i, got.Expanded, want.Expanded)
		}
		if len(got.Expanded) > 0 {
			expanded++
		}
		for _, c := range got.Expanded {
			if c.Via == ingestd.ViaSibling {
				siblings++
			}
		}
	}
	// The comparison means something only if answers expand, by every
	// relation.
	if expanded < len(queries)/2 || siblings == 0 {
		t.Fatalf("%d of %d answers expanded, %d sibling chunks: the corpus does not exercise expansion", expanded, len(queries), siblings)
	}
}
