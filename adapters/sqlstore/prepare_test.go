package sqlstore

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

// TestPrepareTurnsARollbackFileToWAL: a file in rollback-journal mode (a
// VACUUM INTO copy) is in WAL mode once prepared, before any pool opens it,
// so no two of the store's connections race to convert it.
func TestPrepareTurnsARollbackFileToWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "restored.db")
	pool, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(`CREATE TABLE kept (x INTEGER); INSERT INTO kept VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	if got := journalVersions(t, path); got != [2]byte{1, 1} {
		t.Fatalf("the file starts with format versions %v, want rollback's [1 1]", got)
	}
	if err := prepareSQLite("file:"+path, false); err != nil {
		t.Fatal(err)
	}
	if got := journalVersions(t, path); got != [2]byte{2, 2} {
		t.Errorf("prepared, the file has format versions %v, want WAL's [2 2]", got)
	}
}

// journalVersions are the database header's write and read format versions
// (bytes 18 and 19): 1 for a rollback journal, 2 for WAL.
func journalVersions(t *testing.T, path string) [2]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 20 {
		t.Fatalf("reading the header of %s: %v", path, err)
	}
	return [2]byte{b[18], b[19]}
}
