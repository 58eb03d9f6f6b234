package ingestd

import _ "embed"

// Schema is the canonical schema (SQLite dialect), kept to be read: the
// tables, columns, indexes and triggers the numbered migrations of
// store/sqlite build, which a test there proves. store/postgres keeps its
// own variant with the same tables and columns.
//
//go:embed schema.sql
var Schema string
