package pipeline_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/erasure"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
)

// erasing is a pipeline wired as cmd wires it: the erasure gate asked
// before every item is stamped, and an Eraser on the same store.
type erasing struct {
	*fixture
	eraser *erasure.Eraser
	keys   *erasure.Keyer
}

func mustErasingPipeline(tb testing.TB) *erasing {
	tb.Helper()
	st := sqlitetest.MustOpen(tb)
	keys, err := erasure.NewKeyer(bytes.Repeat([]byte("k"), 32))
	if err != nil {
		tb.Fatal(err)
	}
	emb := &countingEmbedder{Embedder: embedder.NewLexical(64)}
	p, err := pipeline.New(pipeline.Options{Store: st, Embedder: embedder.NewCached(emb, st), Erasures: &erasure.Gate{Keys: keys, Store: st}})
	if err != nil {
		tb.Fatal(err)
	}
	return &erasing{fixture: &fixture{store: st, emb: emb, pipe: p}, keys: keys, eraser: erasure.New(erasure.Options{Keys: keys, Store: st})}
}

func (e *erasing) mustErase(tb testing.TB, req erasure.Request) {
	tb.Helper()
	plan, err := e.eraser.Plan(context.Background(), req)
	if err != nil {
		tb.Fatalf("Plan(%+v): %v", req, err)
	}
	if _, err := e.eraser.Erase(context.Background(), plan); err != nil {
		tb.Fatalf("Erase: %v", err)
	}
}

var inbox = ingestd.Installation{ID: "support", Kind: "imap", Tier: ingestd.TierUntrustedExternal}

func mail(id, from, text string) ingestd.Item {
	return ingestd.Item{ExternalID: id, ItemKind: "mail", Title: "mail " + id, Author: from, Format: ingestd.FormatPlain, Text: text}
}

func attachment(parent, name, text string) ingestd.Item {
	return ingestd.Item{ExternalID: parent + "/" + name, ItemKind: "attachment", Title: name, Author: "Alice <alice@example.com>",
		Format: ingestd.FormatPlain, Text: text, ParentExternalID: parent}
}

// TestResyncSkipsErased: an erased mail, its attachment and everything
// its author wrote stay out of the store when the source still holds
// them, counted "skipped: erased", with nothing embedded; until the
// tombstones are lifted.
func TestResyncSkipsErased(t *testing.T) {
	ctx := context.Background()
	e := mustErasingPipeline(t)
	src := &fixedSource{items: []ingestd.Item{
		mail("<m1@x>", "Alice <alice@example.com>", "first message from alice"),
		attachment("<m1@x>", "invoice.txt", "an invoice alice sent"),
		mail("<m2@x>", "Bob <bob@example.com>", "bob writes about the weather"),
		mail("<m3@x>", "alice@EXAMPLE.com", "another note from alice"),
	}, complete: true}
	if sum, err := e.pipe.Sync(ctx, inbox, src, nil); err != nil || sum.Added != 4 {
		t.Fatalf("first pass: %+v, %v", sum, err)
	}

	e.mustErase(t, erasure.Request{DocumentIDs: []string{ingestd.DocumentID("support", "<m1@x>")}})
	before := e.emb.n.Load()
	sum, err := e.pipe.Sync(ctx, inbox, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 2 || sum.SkippedBy[pipeline.SkipErased] != 2 || sum.Added != 0 || sum.Unchanged != 2 || sum.Check() != nil {
		t.Fatalf("pass after erasing a mail: %+v, want its mail and attachment skipped as erased", sum)
	}
	if n := e.emb.n.Load() - before; n != 0 {
		t.Fatalf("the pass after the erasure embedded %d texts", n)
	}
	for _, ext := range []string{"<m1@x>", "<m1@x>/invoice.txt"} {
		if _, err := e.store.Document(ctx, ingestd.DocumentID("support", ext)); ingestd.ErrorCode(err) != ingestd.ENOTFOUND {
			t.Fatalf("erased %s is back: %v", ext, err)
		}
	}
	// A new attachment of the erased mail is derived from it: out too.
	if o, err := e.pipe.Ingest(ctx, inbox, attachment("<m1@x>", "late.txt", "a late attachment")); err != nil || o != pipeline.Skipped {
		t.Fatalf("new attachment of an erased mail: %s, %v, want skipped", o, err)
	}

	// Everything alice wrote, in any installation, present and future.
	e.mustErase(t, erasure.Request{Author: "ALICE@example.com"})
	sum, err = e.pipe.Sync(ctx, inbox, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.SkippedBy[pipeline.SkipErased] != 3 || sum.Unchanged != 1 || sum.Deleted != 0 {
		t.Fatalf("pass after erasing alice: %+v, want 3 skipped as erased", sum)
	}
	wiki := ingestd.Installation{ID: "wiki", Kind: "files", Tier: ingestd.TierTrustedInternal}
	if o, err := e.pipe.Ingest(ctx, wiki, mail("page", "Alice <alice@example.com>", "alice's page")); err != nil || o != pipeline.Skipped {
		t.Fatalf("alice in another installation: %s, %v, want skipped", o, err)
	}

	// A pushed event for an erased item writes nothing, not even its time.
	if o, err := e.pipe.IngestAt(ctx, inbox, mail("<m3@x>", "alice@example.com", "edited"), time.Now()); err != nil || o != pipeline.Skipped {
		t.Fatalf("IngestAt of an erased item: %s, %v", o, err)
	}
	if v, _ := e.store.Cursor(ctx, "support", pipeline.EventCursorKey("<m3@x>")); v != "" {
		t.Fatalf("an erased item's event time was recorded: %q", v)
	}

	// Lifted, the source's content comes back on the next pass.
	if n, err := e.eraser.Lift(ctx, ingestd.LiftRequest{Installation: "support"}); err != nil || n != 3 {
		t.Fatalf("Lift(support) = %d, %v, want the 3 document tombstones", n, err)
	}
	if n, err := e.eraser.Lift(ctx, ingestd.LiftRequest{Author: "alice@example.com"}); err != nil || n != 1 {
		t.Fatalf("Lift(alice) = %d, %v", n, err)
	}
	if sum, err := e.pipe.Sync(ctx, inbox, src, nil); err != nil || sum.Added != 3 || sum.Skipped != 0 {
		t.Fatalf("pass after lifting: %+v, %v, want the 3 back", sum, err)
	}
}

// TestSyncDispatchNeverQueuesErased: a fanned-out pass does not publish an
// erased item, so its text never reaches the job stream.
func TestSyncDispatchNeverQueuesErased(t *testing.T) {
	ctx := context.Background()
	e := mustErasingPipeline(t)
	items := []ingestd.Item{mail("<a@x>", "a@example.com", "text of a"), mail("<b@x>", "b@example.com", "text of b")}
	if _, err := e.pipe.Sync(ctx, inbox, &fixedSource{items: items}, nil); err != nil {
		t.Fatal(err)
	}
	e.mustErase(t, erasure.Request{Installation: "support"})
	var log jobLog
	sum, err := e.pipe.SyncDispatch(ctx, inbox, &fixedSource{items: items}, nil, log.publish)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.jobs) != 0 || sum.SkippedBy[pipeline.SkipErased] != 2 || sum.Check() != nil {
		t.Fatalf("dispatch after erasing the installation: %d jobs, %+v", len(log.jobs), sum)
	}
	// A document new to the installation is not erased.
	sum, err = e.pipe.SyncDispatch(ctx, inbox, &fixedSource{items: append(items, mail("<c@x>", "c@example.com", "new"))}, nil, log.publish)
	if err != nil || len(log.jobs) != 1 || sum.Queued != 1 {
		t.Fatalf("a new item after the erasure: %d jobs, %+v, %v", len(log.jobs), sum, err)
	}
}

// TestErasureKeyMismatchStopsThePass: a process whose erasure key is not
// the one the store's tombstones were made with cannot tell an erased
// item; the pass stops rather than let it back in.
func TestErasureKeyMismatchStopsThePass(t *testing.T) {
	ctx := context.Background()
	e := mustErasingPipeline(t)
	items := []ingestd.Item{mail("<a@x>", "a@example.com", "text of a")}
	if _, err := e.pipe.Sync(ctx, inbox, &fixedSource{items: items}, nil); err != nil {
		t.Fatal(err)
	}
	e.mustErase(t, erasure.Request{Installation: "support"})
	other, err := erasure.NewKeyer(bytes.Repeat([]byte("o"), 32))
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.New(pipeline.Options{Store: e.store, Embedder: embedder.NewLexical(64), Erasures: &erasure.Gate{Keys: other, Store: e.store}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := p.Sync(ctx, inbox, &fixedSource{items: items}, nil)
	if ingestd.ErrorCode(err) != ingestd.ECONFLICT || sum.Added != 0 {
		t.Fatalf("pass with another erasure key: %+v, %v, want it stopped with a conflict", sum, err)
	}
	if _, err := e.store.Document(ctx, ingestd.DocumentID("support", "<a@x>")); ingestd.ErrorCode(err) != ingestd.ENOTFOUND {
		t.Fatalf("the erased item came back under another key: %v", err)
	}
}
