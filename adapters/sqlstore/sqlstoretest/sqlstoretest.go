// Package sqlstoretest opens throwaway SQL stores for tests: a SQLite file in
// a temporary directory, and, when CALLSIGN_TEST_POSTGRES_URL is set, a
// fresh PostgreSQL schema that is dropped when the test ends. When that
// variable is set, an unreachable server fails the test: CI sets it so that
// PostgreSQL coverage can never be skipped by accident.
package sqlstoretest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// PostgresURLVar names the variable that turns the PostgreSQL tests on.
const PostgresURLVar = "CALLSIGN_TEST_POSTGRES_URL"

// Dialects lists the dialects this run covers: SQLite always, PostgreSQL
// when CALLSIGN_TEST_POSTGRES_URL is set.
func Dialects() []sqlstore.Dialect {
	if os.Getenv(PostgresURLVar) != "" {
		return []sqlstore.Dialect{sqlstore.SQLite, sqlstore.Postgres}
	}
	return []sqlstore.Dialect{sqlstore.SQLite}
}

// URL makes an empty database of the dialect and returns its URL; the
// database is removed when the test ends.
func URL(t testing.TB, d sqlstore.Dialect) string {
	t.Helper()
	if d == sqlstore.SQLite {
		return filepath.Join(t.TempDir(), "callsign.db")
	}
	base := os.Getenv(PostgresURLVar)
	if base == "" {
		t.Fatalf("%s is not set", PostgresURLVar)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("%s: %v", PostgresURLVar, err)
	}
	defer admin.Close()
	schema := "t_" + randomHex(8)
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("PostgreSQL at %s is not usable: %v", PostgresURLVar, err)
	}
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer admin.Close()
		_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", PostgresURLVar, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Open opens a migrated store of the dialect, closed when the test ends. A
// SQLite store starts as a copy of one migrated once per test process:
// migrating from nothing costs seconds under -race, and the store contract
// alone opens two hundred stores.
func Open(t testing.TB, d sqlstore.Dialect) *sqlstore.DB {
	t.Helper()
	dsn := URL(t, d)
	if d == sqlstore.SQLite {
		migrated, err := migratedSQLite()
		if err != nil {
			t.Fatalf("migrating the template store: %v", err)
		}
		if err := os.WriteFile(dsn, migrated, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return OpenWith(t, dsn, sqlstore.Options{})
}

// migratedSQLite is a SQLite database file migrated to the latest version
// with default options, made once per process.
var migratedSQLite = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "callsign-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, filepath.Join(dir, "callsign.db"), sqlstore.Options{})
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	db.Close()
	// VACUUM INTO writes one self-contained file: nothing left in a WAL.
	raw, err := sql.Open("sqlite", filepath.Join(dir, "callsign.db"))
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	copied := filepath.Join(dir, "copy.db")
	if _, err := raw.Exec("VACUUM INTO ?", copied); err != nil {
		return nil, err
	}
	return os.ReadFile(copied)
})

// OpenWith opens and migrates the store at dsn (from URL) with opts,
// closed when the test ends.
func OpenWith(t testing.TB, dsn string, opts sqlstore.Options) *sqlstore.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, dsn, opts)
	if err != nil {
		t.Fatalf("opening the test store: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrating the test store: %v", err)
	}
	return db
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
