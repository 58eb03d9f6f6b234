package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ingestd/ingestd"
	"github.com/ingestd/ingestd/store/postgres"
	"github.com/ingestd/ingestd/store/postgres/pgtest"
)

// TestOpenRefusesForeignSQL: a database whose ingestd tables carry a
// trigger, a rule or a row security policy, or whose ingestd functions
// were replaced, is refused at Open, naming what was found; SQL that
// cannot touch what ingestd reads or writes (a table of the operator's
// own with its own trigger, a view) is left alone.
func TestOpenRefusesForeignSQL(t *testing.T) {
	srv := serverURL(t)
	tests := []struct {
		name, sql string
		want      string // in the message; "" means Open succeeds
	}{
		{"trigger that launders new documents", `CREATE FUNCTION launder() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN NEW.installation := 'kb'; NEW.tier := NULL; RETURN NEW; END $$;
			CREATE TRIGGER launder BEFORE INSERT ON documents FOR EACH ROW EXECUTE FUNCTION launder()`, `trigger "launder" on documents`},
		{"constraint trigger on chunks", `CREATE FUNCTION nop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
			CREATE CONSTRAINT TRIGGER nop AFTER INSERT ON chunks FOR EACH ROW EXECUTE FUNCTION nop()`, `trigger "nop" on chunks`},
		{"rule", `CREATE RULE trusted AS ON INSERT TO chunks DO ALSO UPDATE documents SET tier = 'trusted-internal'`, `rule "trusted" on chunks`},
		{"row security policy", `ALTER TABLE erasures ENABLE ROW LEVEL SECURITY; CREATE POLICY hide ON erasures USING (false)`, `row security on erasures`},
		{"replaced function", `CREATE OR REPLACE FUNCTION ingestd_query_words (q text) RETURNS SETOF tsquery
			LANGUAGE sql AS $$ SELECT plainto_tsquery('simple', q) $$`, `function "ingestd_query_words"`},
		{"replaced aggregate", `CREATE OR REPLACE AGGREGATE ingestd_tsquery_or (tsquery) (SFUNC = tsquery_and, STYPE = tsquery)`, `aggregate "ingestd_tsquery_or"`},
		{"an operator's own table and trigger", `CREATE TABLE mine (x int);
			CREATE FUNCTION nop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
			CREATE TRIGGER nop AFTER INSERT ON mine FOR EACH ROW EXECUTE FUNCTION nop()`, ""},
		{"a view", `CREATE VIEW trusted AS SELECT id FROM documents WHERE tier = 'trusted-internal'`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := pgtest.MustCreateDB(t, srv)
			s, err := postgres.Open(ctx(), db, &postgres.Options{Dims: 8})
			if err != nil {
				t.Fatal(err)
			}
			s.Close(context.Background())
			c := mustConnect(t, db)
			if _, err := c.Exec(ctx(), tt.sql); err != nil {
				t.Fatalf("plant: %v", err)
			}
			s, err = postgres.Open(ctx(), db, &postgres.Options{Dims: 8})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				s.Close(context.Background())
				return
			}
			if err == nil {
				s.Close(context.Background())
			}
			if ingestd.ErrorCode(err) != ingestd.EINVALID || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "this build did not make") {
				t.Fatalf("Open: %v, want EINVALID naming %s as what this build did not make", err, tt.want)
			}
		})
	}
}
