package ingestd

import _ "embed"

// Schema is the canonical schema (SQLite dialect), applied by store/sqlite.
//
//go:embed schema.sql
var Schema string

// SchemaVersion is the version of Schema. A store refuses to open a
// database whose recorded version is newer.
const SchemaVersion = 1
