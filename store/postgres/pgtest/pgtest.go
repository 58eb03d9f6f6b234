// Package pgtest gives tests a real PostgreSQL store in a database of their
// own, created for the test and dropped when it ends, so tests run in
// parallel against one server. It is for tests only; production code never
// imports it.
//
// Callers read the server's URL from EnvURL themselves and skip when it is
// unset (see SkipUnlessServer).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ingestd/ingestd/store/postgres"
)

// EnvURL names the environment variable with the URL of a PostgreSQL server
// with pgvector (a superuser, since tests create databases), such as
// postgres://postgres@127.0.0.1:5433/postgres?sslmode=disable.
const EnvURL = "INGESTD_TEST_POSTGRES_URL"

// SkipUnlessServer skips tb with a one-line reason when serverURL (the value
// of EnvURL) is empty, and returns it otherwise.
func SkipUnlessServer(tb testing.TB, serverURL string) string {
	tb.Helper()
	if serverURL == "" {
		tb.Skip("no PostgreSQL server: set " + EnvURL + " to a PostgreSQL ≥ 15 with pgvector ≥ 0.8, e.g. the compose.yaml postgres service")
	}
	return serverURL
}

// MustCreateDB creates an empty database on the server, drops it when the
// test ends (closing whatever is still connected), and returns its URL.
func MustCreateDB(tb testing.TB, serverURL string) string {
	tb.Helper()
	u, err := url.Parse(serverURL)
	if err != nil || u.Scheme == "" {
		tb.Fatalf("pgtest: %s must be a postgres:// URL: %v", EnvURL, err)
	}
	share(tb) // released after the database is dropped (cleanups run last-in first-out)
	var b [8]byte
	rand.Read(b[:])
	name := "ingestd_test_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		tb.Fatalf("pgtest: connect: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, serverURL)
		if err != nil {
			tb.Logf("pgtest: drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Logf("pgtest: drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// MustOpen opens a store in a new database (see MustCreateDB) with the
// options and closes it when the test ends.
func MustOpen(tb testing.TB, serverURL string, o *postgres.Options) *postgres.Store {
	tb.Helper()
	return MustOpenURL(tb, MustCreateDB(tb, serverURL), o)
}

// MustOpenURL opens the store at dbURL and closes it when the test ends.
func MustOpenURL(tb testing.TB, dbURL string, o *postgres.Options) *postgres.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, dbURL, o)
	if err != nil {
		tb.Fatalf("open postgres store: %v", err)
	}
	tb.Cleanup(func() { s.Close(context.Background()) })
	return s
}
