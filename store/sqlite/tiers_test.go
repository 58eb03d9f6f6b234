package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/sqlite"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
	"github.com/ingestd/ingestd/store/storetest"
)

// TestTiersFromMirrorFollowOtherWriters checks the verdict's tier facts
// once the in-memory mirror is loaded: values another process writes —
// an unknown tier, a cleared (NULL) one, a new document, a new parent —
// are served as stored, never a stale or resolved value.
func TestTiersFromMirrorFollowOtherWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	reader := sqlitetest.MustOpenPath(t, path, nil)
	writer := sqlitetest.MustOpenPath(t, path, nil)

	a := storetest.Doc("inst", "a", ingestd.TierTrustedInternal, "h1")
	storetest.MustPut(t, writer, a, storetest.Chunks(a, 0, "alpha text"), nil)
	if err := reader.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := reader.TierFacts(ctx, []string{a.ID}, nil)
	if err != nil || got[a.ID].Tier != ingestd.TierTrustedInternal {
		t.Fatalf("tier facts = %v, %v", got, err)
	}

	a2 := storetest.Doc("inst", "a", "partner-v2", "h2")
	storetest.MustPut(t, writer, a2, storetest.Chunks(a2, 0, "alpha text again"), nil)
	b := storetest.Doc("inst", "b", "", "h3")
	b.ParentID = a.ID
	storetest.MustPut(t, writer, b, storetest.Chunks(b, 1, "beta text"), nil)

	got, err = reader.TierFacts(ctx, []string{a.ID, b.ID, "dnothere"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[a.ID].Tier != "partner-v2" {
		t.Errorf("a = %q, want the unknown value verbatim", got[a.ID].Tier)
	}
	if f, ok := got[b.ID]; !ok || f.Tier != "" || f.Parent == nil || f.Parent.Tier != "partner-v2" {
		t.Errorf("b = %+v (held %v), want undeclared with its parent a", f, ok)
	}

	// Another process moves b under another parent: the mirror follows.
	c := storetest.Doc("inst", "c", ingestd.TierUntrustedExternal, "h4")
	storetest.MustPut(t, writer, c, storetest.Chunks(c, 2, "gamma text"), nil)
	b2 := *b
	b2.ParentID = c.ID
	b2.ContentHash = "h5" // a change the store writes; only the row changes
	storetest.MustPut(t, writer, &b2, nil, nil)
	got, err = reader.TierFacts(ctx, []string{b.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f := got[b.ID]; f.Parent == nil || f.Parent.Tier != ingestd.TierUntrustedExternal {
		t.Errorf("b after a new parent = %+v, want c as its parent", f)
	}
	if _, ok := got["dnothere"]; ok {
		t.Errorf("an id the store does not hold has a tier")
	}
}

// TestMirroredMetaFollowsOtherWriters: the metadata values the mirror
// keeps (Options.MetaKeys) follow what another process writes, a change of
// metadata alone included: a tier_by rule must judge the values stored now.
func TestMirroredMetaFollowsOtherWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	reader := sqlitetest.MustOpenPath(t, path, &sqlite.Options{MetaKeys: []string{"author_association"}})
	writer := sqlitetest.MustOpenPath(t, path, nil)

	a := storetest.Doc("repo", "issue-1", ingestd.TierTrustedInternal, "h1")
	a.Meta = map[string]string{"author_association": "OWNER", "number": "1"}
	storetest.MustPut(t, writer, a, storetest.Chunks(a, 0, "alpha text"), nil)
	if err := reader.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	assoc := func() string {
		t.Helper()
		got, err := reader.TierFacts(ctx, []string{a.ID}, []string{"author_association"})
		if err != nil {
			t.Fatal(err)
		}
		return got[a.ID].Meta["author_association"]
	}
	if got := assoc(); got != "OWNER" {
		t.Fatalf("author_association = %q, want OWNER", got)
	}
	// Same tier, other metadata, and no chunks (a mail whose text is all
	// in its attachments is still their parent): nothing but the
	// document's row changes.
	a2 := *a
	a2.ContentHash = "h2"
	a2.Meta = map[string]string{"author_association": "MEMBER"}
	storetest.MustPut(t, writer, &a2, nil, nil)
	if got := assoc(); got != "MEMBER" {
		t.Errorf("author_association after another writer's change = %q, want MEMBER", got)
	}
}
