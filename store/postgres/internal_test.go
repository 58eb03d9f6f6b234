package postgres

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd"
)

// mustOpen opens a store in a database of its own (pgtest cannot be
// imported here: it imports this package).
func mustOpen(t *testing.T, o *Options) *Store {
	t.Helper()
	srv := os.Getenv("INGESTD_TEST_POSTGRES_URL")
	if srv == "" {
		t.Skip("no PostgreSQL server: set INGESTD_TEST_POSTGRES_URL (../shared/tools/pgvector-up prints one)")
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	name := fmt.Sprintf("ingestd_test_internal_%d", time.Now().UnixNano())
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, srv); err == nil {
			c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	u, _ := url.Parse(srv)
	u.Path = "/" + name
	s, err := Open(ctx, u.String(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSessionSettings: every pooled connection carries the options'
// ef_search, the iterative scan and the statement timeout, and a statement
// that runs out of time is EUNAVAILABLE.
func TestSessionSettings(t *testing.T) {
	s := mustOpen(t, &Options{Dims: 4, EfSearch: 77, StatementTimeout: 300 * time.Millisecond, MaxConns: 3})
	ctx := context.Background()
	for _, tc := range []struct{ setting, want string }{
		{"hnsw.ef_search", "77"},
		{"hnsw.iterative_scan", "relaxed_order"},
		{"plan_cache_mode", "force_custom_plan"},
		{"statement_timeout", "300ms"},
	} {
		var got string
		if err := s.pool.QueryRow(ctx, "SELECT current_setting($1)", tc.setting).Scan(&got); err != nil {
			t.Fatalf("%s: %v", tc.setting, err)
		}
		if got != tc.want {
			t.Fatalf("%s = %q, want %q", tc.setting, got, tc.want)
		}
	}
	if got := s.pool.Config().MaxConns; got != 3 {
		t.Fatalf("MaxConns = %d, want 3", got)
	}
	_, err := s.pool.Exec(ctx, "SELECT pg_sleep(5)")
	if err == nil {
		t.Fatal("pg_sleep(5) with a 300ms statement timeout: no error")
	}
	if got := ingestd.ErrorCode(classify("sleep", err)); got != ingestd.EUNAVAILABLE {
		t.Fatalf("statement timeout: code %q (%v), want unavailable", got, err)
	}
}

func TestMigrationsNumbered(t *testing.T) {
	ms := migrations() // panics on a gap or a misnamed file
	if len(ms) == 0 || SchemaVersion() != len(ms) {
		t.Fatalf("%d migrations, SchemaVersion %d", len(ms), SchemaVersion())
	}
	for _, m := range ms {
		if m.sql == "" {
			t.Fatalf("migration %s is empty", m.name)
		}
	}
}
