package sqlstore_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
)

// TestNewSQLiteDatabasesHaveSmallPages: a database the store creates has
// 2 KiB pages; one created before keeps its own and works.
func TestNewSQLiteDatabasesHaveSmallPages(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	older := filepath.Join(dir, "older.db")
	pool, err := sql.Open("sqlite", "file:"+older)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(`PRAGMA page_size = 4096; CREATE TABLE before_us (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	for path, want := range map[string]int{filepath.Join(dir, "new.db"): 2048, older: 4096} {
		db, err := sqlstore.Open(ctx, path, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := sqlstore.PageSize(ctx, db); err != nil || got != want {
			t.Errorf("%s: pages of %d bytes (%v), want %d", filepath.Base(path), got, err, want)
		}
		db.Close()
	}
}
