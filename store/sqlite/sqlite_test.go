package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/firewall"
	"github.com/ingestd/ingestd/store/sqlite"
	"github.com/ingestd/ingestd/store/sqlite/sqlitetest"
	"github.com/ingestd/ingestd/store/storetest"
)

// fence is the one fence, as the pipeline writes it, for the suite's
// imports.
func fence(text string) string {
	return firewall.Fence(text, firewall.Origin{Installation: "inst", SourceKind: "files"})
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ingestd.Store { return sqlitetest.MustOpen(t) }, fence)
}

// TestConformanceMirroredMeta runs the suite with the metadata keys it
// asks for kept in the in-memory mirror (Options.MetaKeys), the way serve
// opens the store when tier_by rules are configured.
func TestConformanceMirroredMeta(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ingestd.Store {
		return sqlitetest.MustOpenPath(t, filepath.Join(t.TempDir(), "ingestd.db"), &sqlite.Options{MetaKeys: storetest.MetaKeys, FenceCheck: firewall.Check})
	}, fence)
}
