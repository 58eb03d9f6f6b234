package pipeline_test

import (
	"context"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// TestReadersStamping: an item's readers are its connector's when it
// mirrored them, else the first matching readers_by_path glob's, else
// the installation's; a derived item's are intersected with its
// parent's, and unmapped while its parent is not stored.
func TestReadersStamping(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	alice, hr := ingestd.Principal("user:alice@example.com"), ingestd.Principal("group:hr")
	inst := ingestd.Installation{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal,
		Readers:       ingestd.Public(),
		ReadersByPath: []ingestd.PathReaders{{Glob: "hr/*", Readers: ingestd.ReadersOf(hr)}}}
	mirrored := ingestd.ReadersOf(alice)
	items := []ingestd.Item{
		doc("guide.md", "the guide"),
		doc("hr/pay.md", "pay scales"),
		{ExternalID: "acl.md", Text: "mirrored", Readers: &mirrored},
		{ExternalID: "hr/pay.md#att", Text: "attached", ParentExternalID: "hr/pay.md", Readers: &ingestd.Readers{Mapped: true, Principals: []ingestd.Principal{alice, hr}}},
		{ExternalID: "orphan#att", Text: "no parent yet", ParentExternalID: "orphan"},
	}
	for _, it := range items {
		if _, err := f.pipe.Ingest(ctx, inst, it); err != nil {
			t.Fatal(err)
		}
	}
	for ext, want := range map[string]ingestd.Readers{
		"guide.md": ingestd.Public(), "hr/pay.md": ingestd.ReadersOf(hr), "acl.md": ingestd.ReadersOf(alice),
		"hr/pay.md#att": ingestd.ReadersOf(hr), "orphan#att": {},
	} {
		d, err := f.store.Document(ctx, ingestd.DocumentID("handbook", ext))
		if err != nil {
			t.Fatal(err)
		}
		if !d.Readers.Equal(want) {
			t.Errorf("%s: readers %+v, want %+v", ext, d.Readers, want)
		}
	}
}

// TestReadersChangeIsNotAReembedding: a pass that finds only who may
// read a document changed writes the readers and embeds nothing, with
// no embedding cache to hide a second chunking.
func TestReadersChangeIsNotAReembedding(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.MustOpen(t)
	emb := &countingEmbedder{Embedder: embedder.NewLexical(64)}
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	both := ingestd.ReadersOf("user:alice@example.com", "user:bob@example.com")
	it := ingestd.Item{ExternalID: "shared", Text: "a shared mailbox's mail", Readers: &both}
	if _, err := p.Ingest(ctx, handbook, it); err != nil {
		t.Fatal(err)
	}
	before := emb.n.Load()
	alone := ingestd.ReadersOf("user:alice@example.com")
	it.Readers = &alone
	out, err := p.Ingest(ctx, handbook, it)
	if err != nil {
		t.Fatal(err)
	}
	if out != pipeline.Changed {
		t.Errorf("outcome %q, want %q", out, pipeline.Changed)
	}
	if got := emb.n.Load(); got != before {
		t.Errorf("the readers change embedded %d texts, want none", got-before)
	}
	d, err := st.Document(ctx, ingestd.DocumentID(handbook.ID, "shared"))
	if err != nil {
		t.Fatal(err)
	}
	if !d.Readers.Equal(alone) {
		t.Errorf("readers %+v, want alice alone", d.Readers)
	}
	if out, _ := p.Ingest(ctx, handbook, it); out != pipeline.Unchanged {
		t.Errorf("the same readers again: %q, want unchanged", out)
	}
}

// TestSetReaders: a source's permission change reaches the stored
// document without its content, a derived one's stays within its
// parent's, an unknown id is no error.
func TestSetReaders(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	all := ingestd.ReadersOf("user:a@x", "user:b@x")
	mail := ingestd.Item{ExternalID: "m", Text: "the mail", Readers: &all}
	att := ingestd.Item{ExternalID: "m#att", Text: "the attachment", ParentExternalID: "m", Readers: &all}
	for _, it := range []ingestd.Item{mail, att} {
		if _, err := f.pipe.Ingest(ctx, handbook, it); err != nil {
			t.Fatal(err)
		}
	}
	before := f.emb.n.Load()
	if err := f.pipe.SetReaders(ctx, handbook, "m", ingestd.ReadersOf("user:a@x")); err != nil {
		t.Fatal(err)
	}
	// The attachment asks for b too: its parent no longer admits b.
	if err := f.pipe.SetReaders(ctx, handbook, "m#att", all); err != nil {
		t.Fatal(err)
	}
	if err := f.pipe.SetReaders(ctx, handbook, "nobody", all); err != nil {
		t.Errorf("SetReaders of an id not stored: %v", err)
	}
	for ext, want := range map[string]ingestd.Readers{"m": ingestd.ReadersOf("user:a@x"), "m#att": ingestd.ReadersOf("user:a@x")} {
		d, err := f.store.Document(ctx, ingestd.DocumentID(handbook.ID, ext))
		if err != nil {
			t.Fatal(err)
		}
		if !d.Readers.Equal(want) {
			t.Errorf("%s: readers %+v, want %+v", ext, d.Readers, want)
		}
	}
	if f.emb.n.Load() != before {
		t.Error("SetReaders embedded text")
	}
}
