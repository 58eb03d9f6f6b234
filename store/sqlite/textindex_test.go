package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/internal/lexnorm"
	"github.com/ingestd/ingestd/store/internal/corpus"
	"github.com/ingestd/ingestd/store/storetest"
)

// The in-memory index stems with a port of SQLite's porter tokenizer
// (lexnorm.AppendStem; the index then folds number words and synonyms,
// which FTS4 does not): on English-like words with every suffix the
// stemmer knows, and on random letter soup, it yields SQLite's own tokens.
func TestTokenizerMatchesSQLitePorter(t *testing.T) {
	registerDriver()
	db, err := sql.Open(driverName, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("CREATE VIRTUAL TABLE temp.tok USING fts3tokenize(porter)"); err != nil {
		t.Fatal(err)
	}
	var words []string
	bases := strings.Fields(`connect relate generate hope agree plaster motor conflate trouble size hop tan fall
		hiss fizz fail file happy sky deploy rotate database password server cluster index vector token query
		electric formal sensitive adjust depend adopt irritate homolog communism activate bowdler angular
		effective callous rational valence digit conform radical cease control roll probate rate feed`)
	suffixes := strings.Fields(`s es ed ing ies ational tional enci anci izer bli alli entli eli ousli ization
		ation ator alism iveness fulness ousness aliti iviti biliti logi icate ative alize iciti ical ful ness
		al ance ence er ic able ible ant ement ment ent ion ou ism ate iti ous ive ize e ll ly y eed`)
	for _, b := range bases {
		words = append(words, b, strings.ToUpper(b))
		for _, s := range suffixes {
			words = append(words, b+s)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	letters := "aeiouybcdlmnrstzgwx"
	for range 20000 {
		n := 1 + rng.IntN(24)
		var b strings.Builder
		for range n {
			b.WriteByte(letters[rng.IntN(len(letters))])
		}
		words = append(words, b.String())
	}
	words = append(words, "abc123456789", "x_y_z", "Grüße", "naïve—thing", "ÜBER", "a1", "A12345678901234567890123")
	for chunk := range slices.Chunk(words, 500) {
		input := strings.Join(chunk, " ")
		rows, err := db.Query("SELECT token FROM temp.tok WHERE input = ?", input)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for rows.Next() {
			var tok string
			if err := rows.Scan(&tok); err != nil {
				t.Fatal(err)
			}
			want = append(want, tok)
		}
		rows.Close()
		var got []string
		for _, w := range strings.Fields(input) { // words hold no ASCII delimiter
			got = append(got, string(lexnorm.AppendStem(nil, w)))
		}
		if len(got) != len(want) {
			t.Fatalf("%d tokens, SQLite has %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("token %d: %q, SQLite has %q", i, got[i], want[i])
			}
		}
	}
}

// equivalenceCorpus writes n documents of 10 chunks with titles, heading
// paths, three installations and tiers (undeclared and an unknown value
// among them) and returns queries drawn from the chunks' text.
func equivalenceCorpus(tb testing.TB, s *Store, seed uint64, n int) []string {
	tb.Helper()
	c := corpus.New(seed, 3000)
	ctx := context.Background()
	var texts []string
	for d := range n {
		doc := &ingestd.Document{
			Installation: []string{"handbook", "support", "public-repo", "odd"}[d%4],
			ExternalID:   fmt.Sprintf("doc-%d", d),
			SourceKind:   []string{"files", "imap", "github", "files"}[d%4],
			Title:        strings.Join(c.Words(1+c.Intn(5)), " "),
			ContentHash:  fmt.Sprint(seed, "-", d),
			Tier:         []ingestd.Tier{ingestd.TierTrustedInternal, ingestd.TierUntrustedExternal, "", "from-the-future"}[d%4],
		}
		doc.ID = ingestd.DocumentID(doc.Installation, doc.ExternalID)
		chunks := make([]ingestd.Chunk, 10)
		for i := range chunks {
			text := c.Text(10 + c.Intn(60))
			texts = append(texts, text)
			chunks[i] = ingestd.Chunk{ID: ingestd.ChunkID(doc.ID, text, i), Ordinal: i, Text: text, Fenced: text,
				HeadingPath: c.Words(c.Intn(3))}
		}
		if _, err := s.PutDocument(ctx, doc, chunks, nil); err != nil {
			tb.Fatal(err)
		}
	}
	var qs []string
	for range 60 {
		qs = append(qs, strings.Join(c.Query(texts[c.Intn(len(texts))], 1+c.Intn(3)), " "))
	}
	return append(qs, "the of", "Databases deploying PASSWORDS", `"error" OR token*`, "nothing-matches-this")
}

// checkTextPaths compares what s answers (its index caught up with the
// file as it went) with what a store that loads the file's rows afresh
// answers, on every query and filter: ids and scores must be identical.
func checkTextPaths(t *testing.T, s *Store, qs []string, what string) {
	t.Helper()
	ctx := context.Background()
	// Catch s up first: a first load writes a snapshot in the background,
	// which the fresh store must not find.
	if err := s.vec.sync(ctx); err != nil {
		t.Fatal(err)
	}
	s.vec.snapWG.Wait()
	os.Rename(s.path+".index", s.path+".index.aside")
	fresh := mustOpen(t, s.path)
	defer func() {
		holdSnapshots(fresh.vec)
		fresh.Close(context.Background())
		os.Remove(s.path + ".index") // fresh's own
		os.Rename(s.path+".index.aside", s.path+".index")
	}()
	filters := []ingestd.Filter{
		{},
		{Installations: []string{"support"}},
		{SourceKinds: []string{"files"}},
		{Tiers: []ingestd.Tier{""}},
		{Tiers: []ingestd.Tier{ingestd.TierUntrustedExternal, "from-the-future"}},
		{Statuses: []ingestd.Status{ingestd.StatusRejected}},
		{Statuses: []ingestd.Status{ingestd.StatusActive, ingestd.StatusRejected, ingestd.StatusDeleted}},
		{Statuses: []ingestd.Status{ingestd.StatusDeleted}},
	}
	compared := 0
	for qi, q := range qs {
		for fi, f := range filters {
			limit := []int{1, 10, 50}[(qi+fi)%3]
			got, err := s.SearchText(ctx, q, f, limit)
			if err != nil {
				t.Fatal(err)
			}
			want, err := fresh.SearchText(ctx, q, f, limit)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: query %q filter %+v limit %d:\ncaught up %v\nfresh     %v", what, q, f, limit, got, want)
			}
			compared += len(got)
		}
	}
	if fresh.vec.fromSnap {
		t.Fatalf("%s: the fresh store loaded a snapshot", what)
	}
	if compared == 0 {
		t.Fatalf("%s: no hits compared", what)
	}
}

// An index that caught up with another process's writes answers text
// searches as one loaded afresh from the file does.
func TestSearchTextCatchUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	writer, reader := mustOpen(t, path), mustOpen(t, path)
	qs := equivalenceCorpus(t, writer, 5, 60)
	checkTextPaths(t, reader, qs, "initial load")

	// Another process's writes reach the reader through the catch-up:
	// new documents, a replaced one (new title and chunks), status
	// changes, deletions, re-embedded chunks.
	ctx := context.Background()
	qs = append(qs, equivalenceCorpus(t, writer, 6, 20)[:10]...) // doc-0..doc-19 replaced by other text
	for d := 20; d < 60; d += 7 {
		id := ingestd.DocumentID([]string{"handbook", "support", "public-repo", "odd"}[d%4], fmt.Sprintf("doc-%d", d))
		if err := writer.SetStatus(ctx, id, ingestd.StatusRejected); err != nil {
			t.Fatal(err)
		}
		if err := writer.DeleteDocument(ctx, ingestd.DocumentID([]string{"handbook", "support", "public-repo", "odd"}[(d+1)%4], fmt.Sprintf("doc-%d", d+1))); err != nil {
			t.Fatal(err)
		}
	}
	a := storetest.Doc("handbook", "extra.md", ingestd.TierTrustedInternal, "x")
	a.Title = "Rotating database passwords"
	ca := storetest.Chunks(a, 0, "rotate the password of the database server", "deploying a cluster")
	storetest.MustPut(t, writer, a, ca, nil)
	if err := writer.SetEmbeddings(ctx, ca[0].EmbedderID, map[string][]float32{ca[0].ID: storetest.Axis(3)}); err != nil {
		t.Fatal(err)
	}
	checkTextPaths(t, reader, qs, "after catch-up")
	checkTextPaths(t, writer, qs, "writer's own index")
}
