package sqlstore

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

func TestCheckpointerCopiesTheWALIntoTheDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	base := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + sqlitePragmas
	// A writer like the store's: it never checkpoints itself.
	w, err := sqlx.Open("sqlite", base+"&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	if _, err := w.Exec(`CREATE TABLE t (v BLOB)`); err != nil {
		t.Fatal(err)
	}
	for range 200 {
		if _, err := w.Exec(`INSERT INTO t (v) VALUES (?)`, []byte(strings.Repeat("x", 4000))); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	if size() > 100*4096 {
		t.Fatalf("the rows reached the database file before any checkpoint (%d bytes)", size())
	}
	c, err := startCheckpoints(base, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	eventually(t, "the rows in the database file", func() bool { return size() >= 200*4000 })
}
