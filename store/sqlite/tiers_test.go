package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
	"github.com/ingestd/ingestd/store/storetest"
)

// TestTiersFromMirrorFollowOtherWriters checks the verdict's tier lookup
// once the in-memory mirror is loaded: values another process writes —
// an unknown tier, a cleared (NULL) one, a new document — are served as
// stored, never a stale or resolved value.
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
	got, err := reader.Tiers(ctx, []string{a.ID})
	if err != nil || got[a.ID] != ingestd.TierTrustedInternal {
		t.Fatalf("tiers = %v, %v", got, err)
	}

	a2 := storetest.Doc("inst", "a", "partner-v2", "h2")
	storetest.MustPut(t, writer, a2, storetest.Chunks(a2, 0, "alpha text again"), nil)
	b := storetest.Doc("inst", "b", "", "h3")
	storetest.MustPut(t, writer, b, storetest.Chunks(b, 1, "beta text"), nil)

	got, err = reader.Tiers(ctx, []string{a.ID, b.ID, "dnothere"})
	if err != nil {
		t.Fatal(err)
	}
	if got[a.ID] != "partner-v2" {
		t.Errorf("a = %q, want the unknown value verbatim", got[a.ID])
	}
	if tier, ok := got[b.ID]; !ok || tier != "" {
		t.Errorf("b = %q (held %v), want undeclared", tier, ok)
	}
	if _, ok := got["dnothere"]; ok {
		t.Errorf("an id the store does not hold has a tier")
	}
}
