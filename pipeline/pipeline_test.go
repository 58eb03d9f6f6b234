package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// countingEmbedder counts the texts it embeds.
type countingEmbedder struct {
	ingestd.Embedder
	n atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.n.Add(int64(len(texts)))
	return c.Embedder.Embed(ctx, texts)
}

type fixture struct {
	store ingestd.Store
	emb   *countingEmbedder
	pipe  *pipeline.Pipeline
}

func mustPipeline(tb testing.TB) *fixture {
	tb.Helper()
	st := sqlitetest.MustOpen(tb)
	emb := &countingEmbedder{Embedder: embedder.NewLexical(64)}
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewCached(emb, st)})
	if err != nil {
		tb.Fatal(err)
	}
	return &fixture{store: st, emb: emb, pipe: p}
}

var handbook = ingestd.Installation{ID: "handbook", Kind: "files", Tier: ingestd.TierTrustedInternal}

// fixedSource lists a fixed set of items, completely.
type fixedSource struct {
	items    []ingestd.Item
	failIDs  []string
	complete bool
}

func (s *fixedSource) Sync(ctx context.Context, p ingestd.Pass) error {
	p.Total(len(s.items))
	for _, it := range s.items {
		if err := p.Put(ctx, it); err != nil {
			return err
		}
	}
	for _, id := range s.failIDs {
		p.Fail(id, errors.New("unreadable"))
	}
	if s.complete {
		p.Complete()
	}
	return nil
}

func doc(id, text string) ingestd.Item {
	return ingestd.Item{ExternalID: id, Title: id, Format: ingestd.FormatMarkdown, Text: text}
}

func TestSyncIsIdempotentAndTombstones(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	src := &fixedSource{complete: true, items: []ingestd.Item{
		doc("a.md", "# Refunds\n\nRefunds go back to the original payment method."),
		doc("b.md", "# Deploys\n\nDeploys need a green CI run."),
	}}
	sum, err := f.pipe.Sync(ctx, handbook, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sum.Added, 2; got != want {
		t.Fatalf("added = %d, want %d (%+v)", got, want, sum)
	}
	embedded := f.emb.n.Load()
	if embedded == 0 {
		t.Fatal("first pass embedded nothing")
	}

	// Unchanged: nothing written, nothing embedded.
	sum, err = f.pipe.Sync(ctx, handbook, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Unchanged != 2 || sum.Added+sum.Changed+sum.Deleted+sum.Failed != 0 {
		t.Fatalf("second pass = %+v, want 2 unchanged and nothing else", sum)
	}
	if got := f.emb.n.Load(); got != embedded {
		t.Fatalf("unchanged pass embedded %d texts", got-embedded)
	}

	// One changed, one removed, one failing (kept).
	src.items = []ingestd.Item{doc("a.md", "# Refunds\n\nRefunds go back to the card that paid.")}
	src.failIDs = nil
	sum, err = f.pipe.Sync(ctx, handbook, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Changed != 1 || sum.Deleted != 1 {
		t.Fatalf("third pass = %+v, want 1 changed and 1 deleted", sum)
	}
	d, err := f.store.Document(ctx, ingestd.DocumentID("handbook", "b.md"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != ingestd.StatusDeleted {
		t.Fatalf("b.md status = %s, want deleted", d.Status)
	}
	hits, err := f.store.SearchText(ctx, "green CI run", ingestd.Filter{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 0 {
		t.Fatalf("tombstoned document still searchable: %+v", hits)
	}
}

func TestFailedItemIsNotTombstoned(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	src := &fixedSource{complete: true, items: []ingestd.Item{doc("a.md", "alpha"), doc("b.md", "beta")}}
	if _, err := f.pipe.Sync(ctx, handbook, src, nil); err != nil {
		t.Fatal(err)
	}
	src.items = src.items[:1]
	src.failIDs = []string{"b.md"}
	sum, err := f.pipe.Sync(ctx, handbook, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Deleted != 0 || sum.Failed != 1 {
		t.Fatalf("pass = %+v, want b.md failed and kept", sum)
	}
	d, err := f.store.Document(ctx, ingestd.DocumentID("handbook", "b.md"))
	if err != nil || d.Status != ingestd.StatusActive {
		t.Fatalf("b.md = %+v, %v; want active", d, err)
	}
}

func TestTierStamping(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	repo := ingestd.Installation{ID: "repo", Kind: "github", Tier: ingestd.TierUntrustedExternal,
		TierByMeta: map[string]map[string]ingestd.Tier{"author_association": {"OWNER": ingestd.TierTrustedInternal}}}
	cases := []struct {
		name string
		inst ingestd.Installation
		item ingestd.Item
		want ingestd.Tier
	}{
		{"declared", handbook, doc("x", "text"), ingestd.TierTrustedInternal},
		{"item can restrict", handbook, ingestd.Item{ExternalID: "y", Text: "t", Tier: ingestd.TierUntrustedExternal}, ingestd.TierUntrustedExternal},
		{"item cannot raise", repo, ingestd.Item{ExternalID: "z", Text: "t", Tier: ingestd.TierTrustedInternal}, ingestd.TierUntrustedExternal},
		{"unknown item tier fails closed", handbook, ingestd.Item{ExternalID: "u", Text: "t", Tier: "partner"}, ingestd.TierUntrustedExternal},
		{"owner rule by meta", repo, ingestd.Item{ExternalID: "o", Text: "t", Meta: map[string]string{"author_association": "OWNER"}}, ingestd.TierTrustedInternal},
		{"stranger by meta", repo, ingestd.Item{ExternalID: "n", Text: "t", Meta: map[string]string{"author_association": "NONE"}}, ingestd.TierUntrustedExternal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := f.pipe.Ingest(ctx, tc.inst, tc.item); err != nil {
				t.Fatal(err)
			}
			d, err := f.store.Document(ctx, ingestd.DocumentID(tc.inst.ID, tc.item.ExternalID))
			if err != nil {
				t.Fatal(err)
			}
			if d.Tier != tc.want {
				t.Fatalf("tier = %q, want %q", d.Tier, tc.want)
			}
		})
	}
}

func TestDerivedContentInheritsParentTier(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	// A mail by the owner's rule is trusted, but its attachment's parent
	// chain decides: an external mail's attachment stays external even in
	// an installation whose rule would trust the attachment on its own.
	inst := ingestd.Installation{ID: "inbox", Kind: "imap", Tier: ingestd.TierTrustedInternal}
	mail := ingestd.Item{ExternalID: "m1", Text: "see attached", Tier: ingestd.TierUntrustedExternal}
	att := ingestd.Item{ExternalID: "m1#att", Text: "attached notes", ParentExternalID: "m1"}
	for _, it := range []ingestd.Item{mail, att} {
		if _, err := f.pipe.Ingest(ctx, inst, it); err != nil {
			t.Fatal(err)
		}
	}
	d, err := f.store.Document(ctx, ingestd.DocumentID("inbox", "m1#att"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Tier != ingestd.TierUntrustedExternal {
		t.Fatalf("attachment tier = %q, want untrusted-external", d.Tier)
	}
	links, err := f.store.Links(ctx, []string{d.ID})
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 1 || links[0].Relation != "parent" || links[0].To != ingestd.DocumentID("inbox", "m1") {
		t.Fatalf("links = %+v, want one parent link to the mail", links)
	}
}

func TestChunksAreFencedAndQuotedHistorySkipped(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	inst := ingestd.Installation{ID: "support", Kind: "files", Tier: ingestd.TierUntrustedExternal}
	item := ingestd.Item{ExternalID: "mail.eml", Format: ingestd.FormatMail,
		Text: "Thanks, it arrived.\n\nOn Tue, 3 Nov 2026, Support <s@example.com> wrote:\n> QUOTEDHISTORY we refunded it\n"}
	if _, err := f.pipe.Ingest(ctx, inst, item); err != nil {
		t.Fatal(err)
	}
	chunks, err := f.store.DocumentChunks(ctx, []string{ingestd.DocumentID("support", "mail.eml")})
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) == 0 {
		t.Fatal("no chunks stored")
	}
	for _, c := range chunks {
		if strings.Contains(c.Text, "QUOTEDHISTORY") {
			t.Errorf("quoted history indexed: %q", c.Text)
		}
		if err := firewall.Check(c.Fenced); err != nil {
			t.Errorf("chunk %s not fenced: %v", c.ID, err)
		}
		body, origin, err := firewall.Unfence(c.Fenced)
		if err != nil || body != c.Text || origin.Tier != "untrusted-external" {
			t.Errorf("unfence = %q, %+v, %v; want the chunk text from an untrusted origin", body, origin, err)
		}
	}
}

func TestRejectedByHumanSurvivesResync(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	it := doc("plan.md", "# Plan\n\nRewrite it in a weekend.")
	if _, err := f.pipe.Ingest(ctx, handbook, it); err != nil {
		t.Fatal(err)
	}
	id := ingestd.DocumentID("handbook", "plan.md")
	if err := f.store.SetStatus(ctx, id, ingestd.StatusRejected); err != nil {
		t.Fatal(err)
	}
	o, err := f.pipe.Ingest(ctx, handbook, it)
	if err != nil || o != pipeline.Unchanged {
		t.Fatalf("re-ingest = %s, %v; want unchanged", o, err)
	}
	d, _ := f.store.Document(ctx, id)
	if d.Status != ingestd.StatusRejected {
		t.Fatalf("status = %s, want rejected", d.Status)
	}
	// A connector that explicitly says active (a reopened issue) restores it.
	it.Status = ingestd.StatusActive
	if _, err := f.pipe.Ingest(ctx, handbook, it); err != nil {
		t.Fatal(err)
	}
	d, _ = f.store.Document(ctx, id)
	if d.Status != ingestd.StatusActive {
		t.Fatalf("status = %s, want active", d.Status)
	}
}

func TestIngestRefusesItemWithoutID(t *testing.T) {
	f := mustPipeline(t)
	_, err := f.pipe.Ingest(context.Background(), handbook, ingestd.Item{Text: "x"})
	if got, want := ingestd.ErrorCode(err), ingestd.EINVALID; got != want {
		t.Fatalf("code = %q, want %q", got, want)
	}
}

func TestIngestCleansUnstorableText(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	it := ingestd.Item{ExternalID: "nul.txt", Title: "bad\x00title", Text: "before\x00after \xff\xfe end"}
	if _, err := f.pipe.Ingest(ctx, handbook, it); err != nil {
		t.Fatal(err)
	}
	id := ingestd.DocumentID("handbook", "nul.txt")
	chunks, err := f.store.DocumentChunks(ctx, []string{id})
	if err != nil || len(chunks) != 1 {
		t.Fatalf("chunks = %v, %v", chunks, err)
	}
	if got, want := chunks[0].Text, "beforeafter \uFFFD end"; got != want {
		t.Fatalf("text = %q, want %q", got, want)
	}
	// The same dirty item again is unchanged: cleaning is deterministic.
	if o, err := f.pipe.Ingest(ctx, handbook, it); err != nil || o != pipeline.Unchanged {
		t.Fatalf("re-ingest = %s, %v", o, err)
	}
}

// storable is s as every store can hold it (see TestIngestCleansUnstorableText).
func storable(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// TestServedMetadataNeutralised: every field served outside the fence that
// an item brings — title, URI, author, a section's locator, a heading the
// chunker finds in the text — is stored through firewall.Neutralise, for
// every attack of the fence's escape corpus, whatever the connector; the
// text itself is stored as written (it is fenced). Ordinary metadata is
// stored byte for byte, and its item stays unchanged on a second pass.
func TestServedMetadataNeutralised(t *testing.T) {
	ctx := context.Background()
	f := mustPipeline(t)
	dirs, err := os.ReadDir(filepath.Join("..", "firewall", "testdata", "escape"))
	if err != nil || len(dirs) < 30 {
		t.Fatalf("escape corpus: %d cases, %v", len(dirs), err)
	}
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("..", "firewall", "testdata", "escape", d.Name(), "input.txt"))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			id := fmt.Sprintf("%s/%d", d.Name(), n)
			text := "# " + line + "\n\nThe refund policy applies to every order."
			it := ingestd.Item{ExternalID: id, Title: line, URI: "https://example.com/" + line, Author: line, Format: ingestd.FormatMarkdown,
				Sections: []ingestd.Section{{Locator: line, Text: text}}}
			if _, err := f.pipe.Ingest(ctx, handbook, it); err != nil {
				t.Fatal(err)
			}
			docID := ingestd.DocumentID(handbook.ID, id)
			doc, err := f.store.Document(ctx, docID)
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := f.store.DocumentChunks(ctx, []string{docID})
			if err != nil || len(chunks) == 0 {
				t.Fatalf("%s: chunks %v, %v", id, chunks, err)
			}
			fields := map[string]string{"title": doc.Title, "uri": doc.URI, "author": doc.Author,
				"chunk title": chunks[0].Title, "chunk uri": chunks[0].URI, "locator": chunks[0].Locator}
			for i, h := range chunks[0].HeadingPath {
				fields[fmt.Sprintf("heading %d", i)] = h
			}
			for name, v := range fields {
				if err := firewall.CheckNeutralised(v); err != nil {
					t.Errorf("%s: stored %s %q: %v", id, name, v, err)
				}
				if want := firewall.Neutralise(storable(line)); name != "uri" && name != "chunk uri" && !strings.HasPrefix(name, "heading") && v != want {
					t.Errorf("%s: stored %s %q, want %q", id, name, v, want)
				}
			}
			if want := storable(text); chunks[0].Text != want {
				t.Errorf("%s: text stored as %q, want it as written %q", id, chunks[0].Text, want)
			}
		}
	}

	plain := ingestd.Item{ExternalID: "refunds.docx", Title: "Support Handbook", URI: "files://handbook/Policies/refunds%20v2.docx",
		Author: "Dana Ødegård", Format: ingestd.FormatMarkdown,
		Sections: []ingestd.Section{{Locator: "Refunds > Steps", Text: "# Refunds\n\n## Steps\n\nPress the refund button."}}}
	if _, err := f.pipe.Ingest(ctx, handbook, plain); err != nil {
		t.Fatal(err)
	}
	docID := ingestd.DocumentID(handbook.ID, plain.ExternalID)
	doc, err := f.store.Document(ctx, docID)
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := f.store.DocumentChunks(ctx, []string{docID})
	if err != nil || len(chunks) != 1 {
		t.Fatalf("chunks %v, %v", chunks, err)
	}
	if doc.Title != plain.Title || doc.URI != plain.URI || doc.Author != plain.Author || chunks[0].Locator != "Refunds > Steps" ||
		!slices.Equal(chunks[0].HeadingPath, []string{"Refunds", "Steps"}) {
		t.Errorf("ordinary metadata changed: %+v, locator %q, heading path %q", doc, chunks[0].Locator, chunks[0].HeadingPath)
	}
	if o, err := f.pipe.Ingest(ctx, handbook, plain); err != nil || o != pipeline.Unchanged {
		t.Errorf("second pass = %s, %v; want unchanged", o, err)
	}
}
