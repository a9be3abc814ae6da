package sqlstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// openSQLiteForTest opens and migrates a SQLite store in a temporary directory.
func openSQLiteForTest(t *testing.T) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "callsign.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

func TestStatementCacheKeepsOneStatementPerQueryAndIsBounded(t *testing.T) {
	db := openSQLiteForTest(t)
	ctx := context.Background()
	q := `SELECT COUNT(*) FROM accounts`
	s := db.reads.get(ctx, q)
	if s == nil || db.reads.get(ctx, q) != s {
		t.Fatal("a query should be prepared once and kept")
	}
	for i := 0; db.reads.size.Load() < maxCachedStmts; i++ {
		if db.reads.get(ctx, fmt.Sprintf("SELECT %d", i)) == nil {
			t.Fatalf("the cache refused a statement at %d of %d", db.reads.size.Load(), maxCachedStmts)
		}
	}
	if db.reads.get(ctx, "SELECT 'one too many'") != nil {
		t.Fatal("a full cache took one more statement")
	}
	var n int
	if err := db.get(ctx, &n, "SELECT 'one too many' IS NOT NULL"); err != nil || n != 1 {
		t.Fatalf("a query past a full cache still runs: %d %v", n, err)
	}
	if err := db.get(ctx, &n, "SELECT nonsense FROM nowhere"); err == nil {
		t.Fatal("a query that cannot be prepared reports its error")
	}
}

func TestPreparedTransactionsKeepWhatTheyHadToPrepare(t *testing.T) {
	db := openSQLiteForTest(t)
	ctx := context.Background()
	q := `UPDATE accounts SET mail_clock = mail_clock WHERE id = ?`
	if _, ok := db.writes.lookup(q); ok {
		t.Fatal("prepared before any use")
	}
	run := func() []string {
		var missed []string
		err := db.preparedTx(ctx, func(tx *preparedTx) error {
			defer func() { missed = tx.missed }()
			for range 2 {
				if _, err := tx.ExecContext(ctx, q, "nobody"); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return missed
	}
	if missed := run(); len(missed) != 1 || missed[0] != q {
		t.Fatalf("the first transaction prepares the query once itself: %q", missed)
	}
	if _, ok := db.writes.lookup(q); !ok {
		t.Fatal("the query was not kept once the transaction ended")
	}
	if missed := run(); len(missed) != 0 {
		t.Fatalf("a later transaction prepared again: %q", missed)
	}
}
