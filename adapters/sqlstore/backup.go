package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// CopySQLite writes a consistent copy of the SQLite database at path to
// dest, beside a service that is running on it: VACUUM INTO reads from one
// read transaction, and in WAL mode a reader never blocks the writer, so
// ingest goes on while the copy is made. The connection used is its own
// and never checkpoints, so the service's checkpoints stay as they were.
func CopySQLite(ctx context.Context, path, dest string) error {
	path = strings.TrimPrefix(path, "file:")
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("no SQLite database at %s: %w", path, err)
	}
	if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s already exists", dest)
	}
	pool, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+
		"?_pragma=busy_timeout("+busyTimeoutMS+")&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := pool.ExecContext(ctx, "VACUUM INTO ?", dest); err != nil {
		return fmt.Errorf("copying the database: %w", err)
	}
	return nil
}

// IntegrityCheck reads every page of the database and reports the first
// problems SQLite finds (SQLite only).
func (db *DB) IntegrityCheck(ctx context.Context) error {
	if db.dialect != SQLite {
		return errors.New("integrity check: SQLite only")
	}
	var problems []string
	if err := db.r.SelectContext(ctx, &problems, "PRAGMA integrity_check(10)"); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if len(problems) != 1 || problems[0] != "ok" {
		return fmt.Errorf("integrity check: %s", strings.Join(problems, "; "))
	}
	return nil
}
