package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ingestd/ingestd"
)

// A store file is data, not code: a trigger, view, table, index or column
// in it runs, or shapes what runs, on every write. So a file is used only
// when its schema is exactly one this build made, compared object by
// object (type, name, table and SQL, spaces outside quotes aside) with
// what this build's own migrations make in an in-memory database — built
// once a process, from the same embedded files, so no list is kept by
// hand. checkSchema is the one place that decides; Open (through
// migrate), Inspect, Backup and Restore all call it.
//
// A file of an older version is checked twice: before any migration
// runs, each object it holds must be one some version of this build makes
// (so nothing foreign runs while it migrates, a trigger a later migration
// drops included); after migrating, in the same transaction, its schema
// must be exactly the newest one, or the transaction is rolled back and
// the file stays as it was.

// schemaObject is one row of sqlite_master as the check compares it.
type schemaObject struct {
	typ, name, table, sql string
}

// key names an object: a name is unique among the objects of one type.
func (o schemaObject) key() string { return o.typ + "\x00" + o.name }

// String describes o for a person: `trigger "x" on documents`.
func (o schemaObject) String() string {
	s := o.typ + " " + strconv.Quote(o.name)
	if o.table != "" && o.table != o.name {
		s += " on " + ident(o.table)
	}
	return s
}

var plainIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func ident(s string) string {
	if plainIdent.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}

// builtSchema is what this build's migrations make.
type builtSchema struct {
	// newest holds, by key, the objects of a database at the newest
	// version.
	newest map[string]schemaObject
	// any holds every object some version makes (an older version's
	// triggers too), for the check before migrating.
	any map[schemaObject]bool
	// optional are the objects SQLite adds on its own to a file this
	// build made (ANALYZE's statistics table, which Optimize can create).
	optional map[string]schemaObject
}

// ourSchema builds the schema once a process from the embedded migrations.
var ourSchema = sync.OnceValues(func() (*builtSchema, error) {
	registerDriver()
	db, err := sql.Open(driverName, ":memory:")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one in-memory database
	ctx := context.Background()
	b := &builtSchema{any: map[schemaObject]bool{}, optional: map[string]schemaObject{}}
	snapshot := func() ([]schemaObject, error) {
		objs, err := readSchema(ctx, db)
		for _, o := range objs {
			b.any[o] = true
		}
		return objs, err
	}
	if _, err := db.ExecContext(ctx, createVersionTable); err != nil {
		return nil, err
	}
	if _, err := snapshot(); err != nil {
		return nil, err
	}
	var objs []schemaObject
	for _, m := range migrations() {
		if _, err := db.ExecContext(ctx, m.SQL); err != nil {
			return nil, fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if objs, err = snapshot(); err != nil {
			return nil, err
		}
	}
	b.newest = make(map[string]schemaObject, len(objs))
	for _, o := range objs {
		b.newest[o.key()] = o
	}
	if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
		return nil, err
	}
	analyzed, err := readSchema(ctx, db)
	if err != nil {
		return nil, err
	}
	for _, o := range analyzed {
		if _, ok := b.newest[o.key()]; !ok {
			b.optional[o.key()] = o
		}
	}
	return b, nil
})

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readSchema returns the objects in sqlite_master, their SQL normalised.
func readSchema(ctx context.Context, q querier) ([]schemaObject, error) {
	rows, err := q.QueryContext(ctx, "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []schemaObject
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.typ, &o.name, &o.table, &o.sql); err != nil {
			return nil, err
		}
		o.sql = normalSpace(o.sql)
		out = append(out, o)
	}
	return out, rows.Err()
}

// normalSpace turns each run of white space outside quotes into one space
// and trims the ends: SQL that differs in nothing else is the same SQL.
// Comments are kept, so they differ.
func normalSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	var quote byte // the byte that closes the quoted run we are in, or 0
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			b.WriteByte(c)
			if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			space = true
			continue
		case '\'', '"', '`':
			quote = c
		case '[':
			quote = ']'
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteByte(c)
	}
	return b.String()
}

// checkSchema returns EINVALID naming what the database at path holds
// that this build did not make. Unless exact, it only asks that every
// object be one some version of this build makes (the check before
// migrating); exact, that the schema be the newest one, nothing missing.
func checkSchema(ctx context.Context, q querier, path string, exact bool) error {
	want, err := ourSchema()
	if err != nil {
		return fmt.Errorf("build this build's schema: %w", err)
	}
	have, err := readSchema(ctx, q)
	if err != nil {
		return unavailable("read the schema of %s", path, err)
	}
	var found []string
	seen := map[string]bool{}
	for _, o := range have {
		seen[o.key()] = true
		switch w, ok := want.newest[o.key()]; {
		case exact && ok && w == o, exact && want.optional[o.key()] == o, !exact && (want.any[o] || want.optional[o.key()] == o):
		case ok || want.any[o]:
			found = append(found, o.String()+" is not the one this build made")
		default:
			found = append(found, o.String()+" is not one this build made")
		}
	}
	if exact {
		for k, o := range want.newest {
			if !seen[k] {
				found = append(found, o.String()+", which this build makes, is missing")
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.Sort(found)
	if n := len(found); n > 12 {
		found = append(found[:12], fmt.Sprintf("and %d more", n-12))
	}
	return ingestd.Errorf(ingestd.EINVALID, "database %s holds a schema this build did not make, and a store file is data, not code: "+
		"it is refused and nothing in it was changed (%s)", path, strings.Join(found, "; "))
}
