//go:build !cgo

package sqlite

// The SQLite store is mattn/go-sqlite3, a cgo package: without cgo it would
// build and then fail at the first query. Refuse the build instead, with a
// name that says what to do.
var _ = ingestd_needs_cgo__build_with_CGO_ENABLED_1_and_a_C_compiler_such_as_gcc
