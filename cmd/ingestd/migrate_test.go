package main

import (
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/postgres/pgtest"
)

// TestMigrateRebuildsVectorIndex: on Postgres, `migrate` reports the
// vector index's graph; after store.hnsw_m changes on a database holding
// chunks it names both graphs and the command, and
// --rebuild-vector-index rebuilds it with the configured one.
func TestMigrateRebuildsVectorIndex(t *testing.T) {
	db := pgtest.MustCreateDB(t, pgtest.SkipUnlessServer(t, os.Getenv(pgtest.EnvURL)))
	t.Setenv("INGESTD_TEST_MIGRATE_DB", db)
	config := func(m int) string {
		p := writeConfig(t, `store: {driver: postgres, url_env: INGESTD_TEST_MIGRATE_DB, hnsw_m: `+strconv.Itoa(m)+`, hnsw_ef_construction: 40}
embedder: {kind: lexical, dims: 64}
installations:
  - {id: docs, kind: files, tier: trusted-internal, files: {root: ./docs}}
`)
		docs := strings.TrimSuffix(p, "ingestd.yaml") + "docs/"
		if err := os.WriteFile(docs+"a.md", []byte("# Deploys\n\nThe deploy runbook says to drain the queue first."), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := config(8)
	if code, out, errs := runCmd(t, "migrate", "--config", first); code != 0 || !strings.Contains(out, "vector index: m=8 ef_construction=40\n") {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCmd(t, "sync", "docs", "--config", first); code != 0 {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errs)
	}

	second := config(12)
	code, out, errs := runCmd(t, "migrate", "--config", second)
	if code != 0 || !strings.Contains(out, "vector index: m=8 ef_construction=40; configured m=12 ef_construction=40") ||
		!strings.Contains(out, "--rebuild-vector-index") {
		t.Fatalf("migrate after changing hnsw_m: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCmd(t, "migrate", "--config", second, "--rebuild-vector-index", "--maintenance-work-mem", "64MB")
	if code != 0 || !strings.Contains(out, "vector index: m=12 ef_construction=40 (rebuilt)") {
		t.Fatalf("migrate --rebuild-vector-index: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCmd(t, "migrate", "--config", second); code != 0 || !strings.Contains(out, "vector index: m=12 ef_construction=40\n") {
		t.Fatalf("migrate after the rebuild: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCmd(t, "search", "drain the queue", "--config", second); code != 0 || !strings.Contains(out, "files://docs/a.md") {
		t.Fatalf("search after the rebuild: exit %d\n%s%s", code, out, errs)
	}
}

// TestMigrateReaderIndexes: on Postgres, `migrate` names the reader
// indexes against store.reader_indexes and the command that applies it;
// --reader-indexes builds the missing ones and drops those no longer
// named, and a person's search still finds what they may read.
func TestMigrateReaderIndexes(t *testing.T) {
	db := pgtest.MustCreateDB(t, pgtest.SkipUnlessServer(t, os.Getenv(pgtest.EnvURL)))
	t.Setenv("INGESTD_TEST_MIGRATE_DB", db)
	config := func(indexes string) string {
		p := writeConfig(t, `store: {driver: postgres, url_env: INGESTD_TEST_MIGRATE_DB, reader_indexes: [`+indexes+`]}
embedder: {kind: lexical, dims: 64}
installations:
  - {id: docs, kind: files, tier: trusted-internal, files: {root: ./docs}, readers: [group:staff]}
`)
		docs := strings.TrimSuffix(p, "ingestd.yaml") + "docs/"
		if err := os.WriteFile(docs+"a.md", []byte("# Deploys\n\nThe deploy runbook says to drain the queue first."), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := config("group:staff")
	if code, out, errs := runCmd(t, "sync", "docs", "--config", first); code != 0 {
		t.Fatalf("sync: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := runCmd(t, "migrate", "--config", first)
	if code != 0 || !strings.Contains(out, "reader indexes: none\n") || !strings.Contains(out, "--reader-indexes` to build group:staff and drop none") {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errs)
	}
	// serve's warning names a principal without its index, then none.
	pg, err := postgres.Open(t.Context(), db, &postgres.Options{Dims: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close(t.Context())
	warned := func() string {
		var b strings.Builder
		warnReaderIndexes(t.Context(), pg, []ingestd.Principal{"group:staff"}, slog.New(slog.NewTextHandler(&b, nil)))
		return b.String()
	}
	if w := warned(); !strings.Contains(w, "group:staff") || !strings.Contains(w, "--reader-indexes") {
		t.Fatalf("no warning before the build: %q", w)
	}
	if code, out, errs := runCmd(t, "migrate", "--config", first, "--reader-indexes"); code != 0 || !strings.Contains(out, "reader indexes: group:staff (built 1, dropped 0)") {
		t.Fatalf("migrate --reader-indexes: exit %d\n%s%s", code, out, errs)
	}
	if w := warned(); w != "" {
		t.Fatalf("a warning after the build: %q", w)
	}
	second := config("user:alice@example.com")
	code, out, errs = runCmd(t, "migrate", "--config", second, "--reader-indexes")
	if code != 0 || !strings.Contains(out, "reader indexes: user:alice@example.com (built 1, dropped 1)") {
		t.Fatalf("migrate --reader-indexes after renaming: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCmd(t, "migrate", "--config", second); code != 0 || !strings.Contains(out, "reader indexes: user:alice@example.com\n") || strings.Contains(out, "configured") {
		t.Fatalf("migrate after applying: exit %d\n%s%s", code, out, errs)
	}
}
