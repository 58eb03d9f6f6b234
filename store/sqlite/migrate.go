package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"strings"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/internal/migration"
)

// migrationFiles are the schema's versions: migrations/NNNN_name.sql, applied
// in order, each once, in one transaction with the version it brings. A
// released migration is never edited; a change is a new file, and the same
// change is made to the canonical schema (schema.sql at the module root),
// which a test compares with what the migrations build. A migration is SQL
// only and runs with foreign keys on (SQLite cannot switch them inside a
// transaction), so one that rebuilds a table copies it without dropping a
// referenced one first.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations returns the embedded migrations in version order. It panics on
// a misnamed or missing file: that is a build mistake, caught by any test.
func migrations() []migration.File { return migration.MustLoad(migrationFiles, "migrations") }

// SchemaVersion is the newest schema version this build knows. Open refuses
// a database whose recorded version is higher.
func SchemaVersion() int { return len(migrations()) }

// createVersionTable makes the table that records the applied migrations,
// one row each. Its shape is the one the code before numbered migrations
// made (it kept one row, version 1), so such a database needs no change to
// it: it is at version 1 and takes the migrations after that.
const createVersionTable = `CREATE TABLE IF NOT EXISTS schema_version (
	version INTEGER NOT NULL
)`

// migrate puts the database in WAL mode and applies the pending migrations
// in one write transaction (BEGIN IMMEDIATE, so two processes opening one
// file migrate it once). The schema is checked first, before anything is
// read from a table, and again after migrating (checkSchema): a file that
// holds what this build did not make is refused as it is. Returns
// EINVALID for such a file and for a database whose version is newer
// than this build knows.
func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.write.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		return unavailable("open %s", s.path, err)
	}
	if err := checkSchema(ctx, s.write, s.path, false); err != nil {
		return err
	}
	all := migrations()
	// Most opens find the schema current: look without the write lock.
	var have sql.NullInt64
	err := s.write.QueryRowContext(ctx, "SELECT max(version) FROM schema_version").Scan(&have)
	switch {
	case err != nil && !strings.Contains(err.Error(), "no such table"):
		return unavailable("read schema version of %s", s.path, err)
	case err == nil && int(have.Int64) == len(all):
		return checkSchema(ctx, s.write, s.path, true)
	case err == nil && int(have.Int64) > len(all):
		return s.newerSchema(int(have.Int64))
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return unavailable("migrate %s", s.path, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, createVersionTable); err != nil {
		return unavailable("create schema_version in %s", s.path, err)
	}
	// Read again under the lock: another process may have migrated.
	var version int
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(version), 0) FROM schema_version").Scan(&version); err != nil {
		return unavailable("read schema version of %s", s.path, err)
	}
	if version > len(all) {
		return s.newerSchema(version)
	}
	if err := checkSchema(ctx, tx, s.path, false); err != nil { // as it is under the lock
		return err
	}
	for _, m := range all[version:] {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return unavailable("apply migration "+m.Name+" to %s", s.path, err)
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO schema_version (version) VALUES (?)", m.Version); err != nil {
			return unavailable("record migration "+m.Name+" in %s", s.path, err)
		}
	}
	if err := checkSchema(ctx, tx, s.path, true); err != nil { // rolls the migrations back
		return err
	}
	if err := tx.Commit(); err != nil {
		return unavailable("commit migrations of %s", s.path, err)
	}
	return nil
}

func (s *Store) newerSchema(version int) error {
	return ingestd.Errorf(ingestd.EINVALID, "database %s has schema version %d; this build knows up to %d: run a newer ingestd", s.path, version, len(migrations()))
}
