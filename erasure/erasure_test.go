package erasure_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/embedder"
	"github.com/ingestd/ingestd/erasure"
	"github.com/ingestd/ingestd/pipeline"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
	"github.com/ingestd/ingestd/store/storetest"
)

func TestAuthorKeys(t *testing.T) {
	for _, tt := range []struct {
		author string
		want   []string
	}{
		{"Alice Example <Alice@Example.COM>", []string{"alice@example.com"}},
		{"alice@example.com", []string{"alice@example.com"}},
		{"Alice <alice@example.com>, Bob <bob@example.org>", []string{"alice@example.com", "bob@example.org"}},
		{`"Example, Alice" <alice@example.com>`, []string{"alice@example.com"}},
		{"octocat", []string{"octocat"}},
		{"  OctoCat ", []string{"octocat"}},
		{"Support Team", []string{"support team"}},
		{"", nil},
	} {
		if got := erasure.AuthorKeys(tt.author); !slices.Equal(got, tt.want) {
			t.Errorf("AuthorKeys(%q) = %q, want %q", tt.author, got, tt.want)
		}
	}
	if got := erasure.NormalizeAuthor("a@x, b@y"); got != "" {
		t.Errorf("NormalizeAuthor of two addresses = %q, want none", got)
	}
}

func TestKeyer(t *testing.T) {
	if _, err := erasure.NewKeyer(make([]byte, erasure.MinKeyBytes-1)); ingestd.ErrorCode(err) != ingestd.EINVALID {
		t.Fatalf("short key: %v, want EINVALID", err)
	}
	a, _ := erasure.NewKeyer(bytes.Repeat([]byte{1}, 32))
	a2, _ := erasure.NewKeyer(bytes.Repeat([]byte{1}, 32))
	b, _ := erasure.NewKeyer(bytes.Repeat([]byte{2}, 32))
	if a.ID() != a2.ID() || a.ID() == b.ID() || len(a.ID()) != 16 {
		t.Fatalf("key ids %q %q %q: want stable per key, different across keys", a.ID(), a2.ID(), b.ID())
	}
	keys := []string{a.Document("i", "x"), a.Document("i", "y"), a.Document("j", "x"), a.Author("i", "x"), a.Author("", "x"), b.Document("i", "x")}
	if len(slices.Compact(slices.Sorted(slices.Values(keys)))) != len(keys) {
		t.Fatalf("keys collide: %q", keys)
	}
	// The parts are delimited: no two identities run together.
	if a.Document("i", "ab") == a.Document("ia", "b") {
		t.Fatal("Document(i, ab) == Document(ia, b)")
	}
	if a.Document("i", "x") != a2.Document("i", "x") {
		t.Fatal("the same key gives another tombstone key")
	}
}

// TestPlan: an erasure reaches derived documents at any depth, names the
// cache keys of what the pipeline and reindex embedded, drops the event
// cursors and what the connector keeps, and records one tombstone per
// document plus the author's.
func TestPlan(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.MustOpen(t)
	mail := storetest.Doc("support", "<m@x>", ingestd.TierUntrustedExternal, "m")
	mail.Author = "Alice <alice@example.com>"
	att := storetest.Doc("support", "<m@x>/a.eml", ingestd.TierUntrustedExternal, "a")
	att.ParentID, att.Author = mail.ID, "Bob <bob@example.com>"
	inner := storetest.Doc("support", "<m@x>/a.eml/b.pdf", ingestd.TierUntrustedExternal, "b")
	inner.ParentID = att.ID
	other := storetest.Doc("support", "<o@x>", ingestd.TierUntrustedExternal, "o")
	other.Author = "alice.smith@example.com" // contains the address as text, is not it
	for _, d := range []*ingestd.Document{mail, att, inner, other} {
		storetest.MustPut(t, st, d, storetest.Chunks(d, 0, "text of "+d.ExternalID), nil)
	}
	keys, _ := erasure.NewKeyer(bytes.Repeat([]byte{7}, 32))
	var forgot []string
	e := erasure.New(erasure.Options{Keys: keys, Store: st, Forget: func(_ context.Context, inst string, ids []string) ([]ingestd.Cursor, error) {
		forgot = append(forgot, ids...)
		return []ingestd.Cursor{{Installation: inst, Key: "uidmap:1", Value: "{}"}}, nil
	}})
	plan, err := e.Plan(ctx, erasure.Request{Author: "alice@example.com", Installation: "support"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{mail.ID, att.ID, inner.ID}
	slices.Sort(want)
	if got := plan.Erasure.DocumentIDs; !slices.Equal(got, want) {
		t.Fatalf("documents %q, want the mail and what derives from it %q", got, want)
	}
	if n := len(plan.Erasure.Tombstones); n != 4 || plan.Erasure.Tombstones[0].Key != keys.Author("support", "alice@example.com") {
		t.Fatalf("tombstones %+v, want the author's and one per document", plan.Erasure.Tombstones)
	}
	if !slices.Contains(plan.Erasure.Tombstones, ingestd.Tombstone{Key: keys.Document("support", att.ExternalID), KeyID: keys.ID(),
		Kind: ingestd.TombstoneDocument, Installation: "support", CreatedAt: plan.Erasure.Tombstones[1].CreatedAt}) {
		t.Fatalf("no tombstone for the attachment in %+v", plan.Erasure.Tombstones)
	}
	text := "text of " + mail.ExternalID
	for _, h := range []string{embedder.TextHash(pipeline.EmbedInput(mail.Title, []string{"Guide", "Part 0"}, text)), embedder.TextHash(text)} {
		if !slices.Contains(plan.Erasure.TextHashes, h) {
			t.Fatalf("cache keys %q lack %s", plan.Erasure.TextHashes, h)
		}
	}
	if !slices.Contains(plan.Erasure.Cursors, ingestd.Cursor{Installation: "support", Key: pipeline.EventCursorKey(inner.ExternalID)}) ||
		!slices.Contains(plan.Erasure.Cursors, ingestd.Cursor{Installation: "support", Key: "uidmap:1", Value: "{}"}) || len(forgot) != 3 {
		t.Fatalf("cursor edits %+v (forgot %q)", plan.Erasure.Cursors, forgot)
	}
	if r := plan.Report(true); len(r.Documents) != 3 || !r.DryRun || r.Tombstones != 4 {
		t.Fatalf("report %+v", r)
	}
	// Planning wrote nothing.
	if _, err := st.Document(ctx, mail.ID); err != nil {
		t.Fatal(err)
	}

	for _, tt := range []struct {
		req  erasure.Request
		code string
	}{
		{erasure.Request{}, ingestd.EINVALID},
		{erasure.Request{DocumentIDs: []string{mail.ID}, Installation: "support"}, ingestd.EINVALID},
		{erasure.Request{Author: "a@x, b@y"}, ingestd.EINVALID},
		{erasure.Request{DocumentIDs: []string{mail.ID, "dmissing"}}, ingestd.ENOTFOUND},
	} {
		if _, err := e.Plan(ctx, tt.req); ingestd.ErrorCode(err) != tt.code {
			t.Errorf("Plan(%+v) = %v, want %s", tt.req, err, tt.code)
		}
	}
}
