package sqlstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The database file and SQLite's -wal and -shm files are the owner's only.
func TestSQLiteFilesAreOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "callsign.db")
	db, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.w.ExecContext(context.Background(), "CREATE TABLE mode_probe (a INTEGER)"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s: mode %o; want 600", filepath.Base(name), mode)
		}
	}
}
