package sqlite

import (
	"compress/gzip"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
)

func TestMigrationsNumbered(t *testing.T) {
	ms := migrations() // panics on a gap or a misnamed file
	if len(ms) == 0 || SchemaVersion() != len(ms) {
		t.Fatalf("%d migrations, SchemaVersion %d", len(ms), SchemaVersion())
	}
	for _, m := range ms {
		if strings.TrimSpace(m.SQL) == "" {
			t.Fatalf("migration %s is empty", m.Name)
		}
	}
}

// TestMigrationsBuildTheCanonicalSchema: schema.sql, the schema people
// read, is what the migrations build — the same tables with the same
// columns, keys and indexes, the same triggers.
func TestMigrationsBuildTheCanonicalSchema(t *testing.T) {
	migrated := mustOpen(t, filepath.Join(t.TempDir(), "migrated.db"))
	canonical := mustExecSchema(t, filepath.Join(t.TempDir(), "canonical.db"), ingestd.Schema)
	diffSchemas(t, "migrations", schemaOf(t, migrated.write), "schema.sql", schemaOf(t, canonical))
}

// TestOpenUpgradesDatabasesBeforeMigrations opens databases the store
// wrote before its migrations were numbered (testdata/NOTICE.md says how
// they were made): each reaches the canonical schema, records every
// version, and serves what it held.
func TestOpenUpgradesDatabasesBeforeMigrations(t *testing.T) {
	canonical := schemaOf(t, mustExecSchema(t, filepath.Join(t.TempDir(), "canonical.db"), ingestd.Schema))
	for _, fixture := range []string{"first-release", "before-migrations"} {
		t.Run(fixture, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "legacy.db")
			mustGunzip(t, filepath.Join("testdata", "legacy", fixture+".db.gz"), path)
			s := mustOpen(t, path)
			diffSchemas(t, "upgraded "+fixture, schemaOf(t, s.write), "schema.sql", canonical)
			if got, want := versions(t, s.read), versionsUpTo(SchemaVersion()); !slices.Equal(got, want) {
				t.Fatalf("schema_version rows %v, want %v", got, want)
			}

			ctx := context.Background()
			mail := ingestd.DocumentID("support", "<a@example.com>")
			att := ingestd.DocumentID("support", "<a@example.com>/invoice.txt")
			doc, err := s.Document(ctx, att)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := doc.ParentID, mail; got != want {
				t.Fatalf("attachment's parent %q, want %q", got, want)
			}
			hits, err := s.SearchText(ctx, "advance", ingestd.Filter{}, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) != 1 || hits[0].DocumentID != mail {
				t.Fatalf("search advance: %v, want one hit in %s", hits, mail)
			}
			if cur, err := s.Cursor(ctx, "support", "INBOX"); err != nil || cur != "uidvalidity=7 uid=2" {
				t.Fatalf("cursor %q, %v", cur, err)
			}
			// The trigger 0002 brings: a metadata change is logged for
			// the mirror, so the tier facts follow it.
			if _, err := s.write.Exec(`UPDATE documents SET meta = '{"from":"b@example.com"}' WHERE id = ?`, mail); err != nil {
				t.Fatal(err)
			}
			var logged int
			if err := s.read.QueryRow("SELECT count(*) FROM changes WHERE document_id = ?", mail).Scan(&logged); err != nil {
				t.Fatal(err)
			}
			if logged != 1 {
				t.Fatalf("%d changes logged for a metadata update, want 1", logged)
			}
		})
	}
}

// TestOpenMigratesOnce: stores opening one file at once migrate it once.
func TestOpenMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			s, err := Open(context.Background(), path, nil)
			if err == nil {
				err = s.Close(context.Background())
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	s := mustOpen(t, path)
	if got, want := versions(t, s.read), versionsUpTo(SchemaVersion()); !slices.Equal(got, want) {
		t.Fatalf("schema_version rows %v, want %v", got, want)
	}
}

func mustExecSchema(tb testing.TB, path, schema string) *sql.DB {
	tb.Helper()
	registerDriver()
	db, err := sql.Open(driverName, path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Exec(schema); err != nil {
		tb.Fatalf("apply schema: %v", err)
	}
	return db
}

func mustGunzip(tb testing.TB, from, to string) {
	tb.Helper()
	f, err := os.Open(from)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		tb.Fatal(err)
	}
}

func versions(tb testing.TB, db *sql.DB) []int {
	tb.Helper()
	rows, err := db.Query("SELECT version FROM schema_version ORDER BY version")
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			tb.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func versionsUpTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// schemaOf describes every object in db's sqlite_master, by name. Tables
// are described by structure (columns, keys, indexes), so a column added
// by ALTER TABLE equals one written in CREATE TABLE; triggers, views and
// virtual tables by their SQL without comments and extra spaces.
func schemaOf(tb testing.TB, db *sql.DB) map[string]string {
	tb.Helper()
	type object struct{ typ, name, table, sql string }
	var objs []object
	rows, err := db.Query("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master")
	if err != nil {
		tb.Fatal(err)
	}
	for rows.Next() {
		var o object
		if err := rows.Scan(&o.typ, &o.name, &o.table, &o.sql); err != nil {
			tb.Fatal(err)
		}
		objs = append(objs, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range objs {
		desc := o.typ + " on " + o.table
		switch {
		case o.typ == "table" && !strings.HasPrefix(strings.ToUpper(o.sql), "CREATE VIRTUAL"):
			desc += "\n columns: " + pragmaRows(tb, db, "table_xinfo", o.name)
			desc += "\n foreign keys: " + pragmaRows(tb, db, "foreign_key_list", o.name)
			desc += "\n indexes: " + pragmaRows(tb, db, "index_list", o.name)
			up := strings.ToUpper(o.sql)
			for _, flag := range []string{"AUTOINCREMENT", "WITHOUT ROWID", "STRICT", "CHECK"} {
				if strings.Contains(up, flag) {
					desc += "\n " + flag
				}
			}
		case o.typ == "index":
			desc += "\n columns: " + pragmaRows(tb, db, "index_xinfo", o.name)
			desc += "\n sql: " + normalSQL(o.sql)
		default:
			desc += "\n sql: " + normalSQL(o.sql)
		}
		out[o.name] = desc
	}
	return out
}

func pragmaRows(tb testing.TB, db *sql.DB, pragma, name string) string {
	tb.Helper()
	rows, err := db.Query(fmt.Sprintf("SELECT * FROM pragma_%s(?)", pragma), name)
	if err != nil {
		tb.Fatalf("pragma %s(%s): %v", pragma, name, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		tb.Fatal(err)
	}
	var lines []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			tb.Fatal(err)
		}
		var fields []string
		for i, c := range cols {
			if c == "seq" && pragma == "index_list" {
				continue // the order indexes were created in
			}
			v := vals[i]
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			fields = append(fields, fmt.Sprintf("%s=%v", c, v))
		}
		lines = append(lines, strings.Join(fields, " "))
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	if pragma != "table_xinfo" && pragma != "index_xinfo" { // ordered by column
		slices.Sort(lines)
	}
	return strings.Join(lines, "; ")
}

var (
	sqlComment = regexp.MustCompile(`--[^\n]*`)
	sqlSpace   = regexp.MustCompile(`\s+`)
	sqlPunct   = regexp.MustCompile(`\s*([(),;])\s*`)
)

func normalSQL(s string) string {
	s = sqlComment.ReplaceAllString(s, " ")
	s = sqlSpace.ReplaceAllString(s, " ")
	s = sqlPunct.ReplaceAllString(s, "$1")
	return strings.TrimSpace(s)
}

func diffSchemas(tb testing.TB, gotName string, got map[string]string, wantName string, want map[string]string) {
	tb.Helper()
	var names []string
	for n := range got {
		names = append(names, n)
	}
	for n := range want {
		if _, ok := got[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var diffs []string
	for _, n := range names {
		g, inGot := got[n]
		w, inWant := want[n]
		switch {
		case !inGot:
			diffs = append(diffs, fmt.Sprintf("%s lacks %s (%s)", gotName, n, w))
		case !inWant:
			diffs = append(diffs, fmt.Sprintf("%s has %s, %s does not (%s)", gotName, n, wantName, g))
		case g != w:
			diffs = append(diffs, fmt.Sprintf("%s differs:\n %s: %s\n %s: %s", n, gotName, g, wantName, w))
		}
	}
	if len(diffs) > 0 {
		tb.Fatalf("%s and %s differ:\n%s", gotName, wantName, strings.Join(diffs, "\n"))
	}
}
