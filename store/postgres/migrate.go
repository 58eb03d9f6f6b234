package postgres

import (
	"context"
	"embed"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/internal/migration"
)

// migrationFiles are the schema's versions: migrations/NNNN_name.sql, applied
// in order, each once. A released migration is never edited; a change is a
// new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrations returns the embedded migrations in version order. It panics on
// a misnamed or missing file: that is a build mistake, caught by any test.
func migrations() []migration.File { return migration.MustLoad(migrationFiles, "migrations") }

// SchemaVersion is the newest schema version this build knows. Open refuses
// a database whose recorded version is higher.
func SchemaVersion() int { return len(migrations()) }

// migrationLock is the pg_advisory_xact_lock key every ingestd process takes
// before it reads or changes the schema ("ingestd" in ASCII).
const migrationLock int64 = 0x696e6765737464

// createVersionTable makes the table that records the applied migrations.
const createVersionTable = `CREATE TABLE IF NOT EXISTS schema_version (
	version    integer PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now())`

// migrateURL connects once with cfg and migrates.
func migrateURL(ctx context.Context, cfg *pgx.ConnConfig, dims int, graph HNSW, where string) (HNSW, error) {
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return HNSW{}, unavailable("connect to "+where, err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	return migrate(ctx, c, dims, graph, where)
}

// migrate creates the vector extension if missing, checks the schema
// (checkSchema), applies the pending migrations in one transaction under
// the advisory lock and checks the schema again, gives an empty
// database's vector index the graph asked for, and checks that the vector
// column has dims dimensions. It returns the graph the vector index has.
func migrate(ctx context.Context, c *pgx.Conn, dims int, graph HNSW, where string) (HNSW, error) {
	all := migrations()
	latest := len(all)
	var have HNSW
	err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
			return classify("lock schema of "+where, err)
		}
		if err := createExtension(ctx, tx, where); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, createVersionTable); err != nil {
			return classify("create schema_version in "+where, err)
		}
		if err := checkSchema(ctx, tx, where); err != nil { // before anything of it runs
			return err
		}
		var version int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM schema_version").Scan(&version); err != nil {
			return classify("read schema version of "+where, err)
		}
		if version > latest {
			return ingestd.Errorf(ingestd.EINVALID, "database %s has schema version %d; this build knows up to %d: run a newer ingestd", where, version, latest)
		}
		for _, m := range all[version:] {
			sql := strings.ReplaceAll(m.SQL, "{{dims}}", strconv.Itoa(dims))
			if _, err := tx.Exec(ctx, sql); err != nil {
				return classify("apply migration "+m.Name+" to "+where, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO schema_version (version) VALUES ($1)", m.Version); err != nil {
				return classify("record migration "+m.Name, err)
			}
		}
		if err := checkSchema(ctx, tx, where); err != nil { // what the migrations' DDL left
			return err
		}
		var err error
		have, err = reshapeEmpty(ctx, tx, graph)
		return err
	})
	if err != nil {
		return HNSW{}, classify("migrate "+where, err)
	}
	var haveDims int
	err = c.QueryRow(ctx, `SELECT atttypmod FROM pg_attribute
		WHERE attrelid = 'chunks'::regclass AND attname = 'embedding'`).Scan(&haveDims)
	if err != nil {
		return HNSW{}, classify("read vector dimension of "+where, err)
	}
	if haveDims != dims {
		return HNSW{}, ingestd.Errorf(ingestd.EINVALID, "database %s holds %d-dimensional vectors; the embedder makes %d: use the embedder the database was created with, or a new database", where, haveDims, dims)
	}
	return have, nil
}

// createExtension makes sure pgvector is installed in the database.
// Without the extension, or the right to create it, nothing works; the
// error says what an operator runs.
func createExtension(ctx context.Context, tx pgx.Tx, where string) error {
	var installed bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')").Scan(&installed); err != nil {
		return classify("look for the vector extension in "+where, err)
	}
	if installed {
		return nil
	}
	_, err := tx.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS vector")
	if err == nil {
		return nil
	}
	if !isPgError(err) { // the connection failed, not the statement
		return classify("create the vector extension in "+where, err)
	}
	return ingestd.Errorf(ingestd.EINVALID,
		"database %s lacks the pgvector extension and it could not be created (%v): install pgvector on the server and run \"CREATE EXTENSION vector\" in the database as a superuser",
		where, err)
}

func isPgError(err error) bool {
	var pe interface{ SQLState() string }
	return errors.As(err, &pe)
}
