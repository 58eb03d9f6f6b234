package postgres

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd"
)

// A database's schema is data, not code: a trigger or a rule on one of
// ingestd's tables runs on every write ingestd makes (it could file an
// untrusted mail under a trusted installation, or drop a tombstone), a
// row security policy decides what ingestd's reads see (a hidden
// tombstone lets an erased item back in), and ingestd's own SQL
// functions run in every search. checkSchema refuses a database whose
// ingestd tables carry any trigger, rule or row security this build did
// not make (it makes none), or whose ingestd functions and aggregates are
// not as this build's migrations define them. The tables and functions
// are read from the embedded migrations, so no list is kept by hand.
//
// The rest of a PostgreSQL database is the operator's: tables, views and
// functions of their own beside ingestd's are left alone (a view cannot
// take an ingestd table's name in its schema, and ingestd reads and
// writes only its own tables, naming every column it writes), as are
// event triggers (managed services install them; they fire on DDL, and
// what a migration's DDL left behind is checked after it). It runs in
// migrate's transaction, before and after the migrations, under the
// schema lock.

// ourSQL is every statement this build runs to make its schema.
func ourSQL() string {
	var b strings.Builder
	b.WriteString(createVersionTable)
	for _, m := range migrations() {
		b.WriteString("\n")
		b.WriteString(m.SQL)
	}
	return b.String()
}

var (
	createdTable     = regexp.MustCompile(`(?i)\bCREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?([a-z_][a-z0-9_]*)`)
	createdFunction  = regexp.MustCompile(`(?i)\bCREATE\s+(?:OR\s+REPLACE\s+)?FUNCTION\s+([a-z_][a-z0-9_]*)`)
	createdAggregate = regexp.MustCompile(`(?i)\bCREATE\s+(?:OR\s+REPLACE\s+)?AGGREGATE\s+([a-z_][a-z0-9_]*)`)
)

// ourNames are the tables, functions and aggregates this build makes.
var ourNames = sync.OnceValue(func() (n struct{ tables, functions, aggregates []string }) {
	all := ourSQL()
	collect := func(re *regexp.Regexp) []string {
		var out []string
		for _, m := range re.FindAllStringSubmatch(all, -1) {
			out = append(out, strings.ToLower(m[1]))
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	n.tables, n.functions, n.aggregates = collect(createdTable), collect(createdFunction), collect(createdAggregate)
	return n
})

// checkSchema returns EINVALID naming what the database holds on
// ingestd's tables and functions that this build did not make (see
// above); where names the database.
func checkSchema(ctx context.Context, tx pgx.Tx, where string) error {
	names, all := ourNames(), ourSQL()
	var found []string
	each := func(what, q string, args []any, fn func(a, b string) string) error {
		rows, err := tx.Query(ctx, q, args...)
		if err != nil {
			return classify("read the "+what+" of "+where, err)
		}
		var a, b string
		_, err = pgx.ForEachRow(rows, []any{&a, &b}, func() error {
			if s := fn(a, b); s != "" {
				found = append(found, s)
			}
			return nil
		})
		return classifyNil("read the "+what+" of "+where, err)
	}
	inSchema := "c.relnamespace = current_schema()::regnamespace AND c.relname = ANY($1)"
	tables := []any{names.tables}
	steps := []struct {
		what string
		q    string
		args []any
		fn   func(a, b string) string
	}{
		{"triggers", `SELECT t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
			WHERE ` + inSchema + ` AND NOT t.tgisinternal`, tables,
			func(name, table string) string {
				return fmt.Sprintf("trigger %s on %s is not one this build made", strconv.Quote(name), table)
			}},
		{"rules", `SELECT r.rulename, c.relname FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class
			WHERE ` + inSchema + ` AND r.rulename <> '_RETURN'`, tables,
			func(name, table string) string {
				return fmt.Sprintf("rule %s on %s is not one this build made", strconv.Quote(name), table)
			}},
		{"row security", `SELECT c.relname, '' FROM pg_class c
			WHERE ` + inSchema + ` AND (c.relrowsecurity OR c.relforcerowsecurity)`, tables,
			func(table, _ string) string {
				return fmt.Sprintf("row security on %s is not one this build made", table)
			}},
		{"policies", `SELECT p.polname, c.relname FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
			WHERE ` + inSchema, tables,
			func(name, table string) string {
				return fmt.Sprintf("policy %s on %s is not one this build made", strconv.Quote(name), table)
			}},
		// A function's body must be one a migration wrote.
		{"functions", `SELECT p.proname, p.prosrc FROM pg_proc p
			WHERE p.pronamespace = current_schema()::regnamespace AND p.prokind = 'f' AND p.proname = ANY($1)`, []any{names.functions},
			func(name, body string) string {
				if strings.Contains(all, body) {
					return ""
				}
				return fmt.Sprintf("function %s is not the one this build made", strconv.Quote(name))
			}},
		// An aggregate's transition function must be one a migration named,
		// with no final function (this build's have none).
		{"aggregates", `SELECT p.proname, a.aggtransfn::regproc::text || CASE WHEN a.aggfinalfn <> 0 THEN ' FINALFUNC' ELSE '' END
			FROM pg_proc p JOIN pg_aggregate a ON a.aggfnoid = p.oid
			WHERE p.pronamespace = current_schema()::regnamespace AND p.proname = ANY($1)`, []any{names.aggregates},
			func(name, sfunc string) string {
				if regexp.MustCompile(`(?i)AGGREGATE\s+` + regexp.QuoteMeta(name) + `\s*\([^)]*\)\s*\(\s*SFUNC\s*=\s*` + regexp.QuoteMeta(sfunc) + `\s*,`).MatchString(all) {
					return ""
				}
				return fmt.Sprintf("aggregate %s is not the one this build made", strconv.Quote(name))
			}},
	}
	for _, s := range steps {
		if err := each(s.what, s.q, s.args, s.fn); err != nil {
			return err
		}
	}
	if len(found) == 0 {
		return nil
	}
	slices.Sort(found)
	return ingestd.Errorf(ingestd.EINVALID, "database %s holds SQL on ingestd's tables that this build did not make, and a schema is data, not code: "+
		"it is refused and nothing was changed (%s); remove them and start again", where, strings.Join(found, "; "))
}
