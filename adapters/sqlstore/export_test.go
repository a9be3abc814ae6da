package sqlstore

import "context"

// ProbeCast makes PostgreSQL refuse a value as invalid data (SQLSTATE 22P02).
func ProbeCast(ctx context.Context, db *DB, v string) error {
	var n int
	return db.w.GetContext(ctx, &n, db.q(`SELECT CAST(? AS INTEGER)`), v)
}

// SetRankWindow makes searches rank their newest n matches until restore.
func SetRankWindow(n int) (restore func()) {
	old := rankWindow
	rankWindow = n
	return func() { rankWindow = old }
}

// Vacuum rebuilds an SQLite database file.
func Vacuum(ctx context.Context, db *DB) error {
	_, err := db.w.ExecContext(ctx, `VACUUM`)
	return err
}

// EmbeddedVersions lists the versions of the migrations built in for d.
func EmbeddedVersions(d Dialect) ([]int64, error) { return embeddedVersions(d) }

// MigrateTo applies the migrations up to and including version.
func MigrateTo(ctx context.Context, db *DB, version int64) error {
	p, err := db.migrator(ctx)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// SendRows counts an account's rows in the sends log, old ones included.
func SendRows(ctx context.Context, db *DB, accountID string) (int, error) {
	var n int
	return n, db.w.GetContext(ctx, &n, db.q(`SELECT COUNT(*) FROM sends WHERE account_id = ?`), accountID)
}

// NewestMailAccount is the account of the newest message stored.
func NewestMailAccount(ctx context.Context, db *DB) (string, error) {
	var id string
	return id, db.r.GetContext(ctx, &id, `SELECT account_id FROM email_messages ORDER BY id DESC LIMIT 1`)
}

// StoredHTML is what a message's row holds of its HTML body.
func StoredHTML(ctx context.Context, db *DB, id int64) (html string, inSource bool, err error) {
	var row struct {
		HTML     string `db:"html_body"`
		InSource bool   `db:"html_in_source"`
	}
	err = db.w.GetContext(ctx, &row, db.q(`SELECT html_body, html_in_source FROM email_messages WHERE id = ?`), id)
	return row.HTML, row.InSource, err
}

// PageSize is an SQLite database's page size.
func PageSize(ctx context.Context, db *DB) (int, error) {
	var n int
	return n, db.w.GetContext(ctx, &n, `PRAGMA page_size`)
}

// Exec runs a statement written with ? placeholders, for rows a test writes
// as an older schema holds them.
func Exec(ctx context.Context, db *DB, query string, args ...any) error {
	_, err := db.w.ExecContext(ctx, db.q(query), args...)
	return err
}

// SetMaxRowSetBytes bounds PostgreSQL's multi-row inserts of sources to n
// bytes until restore.
func SetMaxRowSetBytes(n int) (restore func()) {
	old := maxRowSetBytes
	maxRowSetBytes = n
	return func() { maxRowSetBytes = old }
}

// CountedRows is how many rows PostgreSQL's statistics of table count
// (-1: never analyzed).
func CountedRows(ctx context.Context, db *DB, table string) (float64, error) {
	var n float64
	return n, db.w.GetContext(ctx, &n, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, table)
}

// StoredSource is the size of a message's source as email_sources holds
// it, and whether that is its compressed form.
func StoredSource(ctx context.Context, db *DB, id int64) (size int, compressed bool, err error) {
	var row struct {
		Size       int  `db:"size"`
		Compressed bool `db:"compressed"`
	}
	err = db.w.GetContext(ctx, &row, db.q(`SELECT length(raw) AS size, compressed FROM email_sources WHERE message_id = ?`), id)
	return row.Size, row.Compressed, err
}

// EnglishDocument is a message's search document on PostgreSQL.
func EnglishDocument(subject, body string) string { return englishDocument(subject, body) }

// OneConnection makes db's pool a single connection, so that what a test
// asks of a PostgreSQL session is asked of the one the store used.
func OneConnection(db *DB) { db.r.SetMaxOpenConns(1); db.w.SetMaxOpenConns(1) }

// PreparedStatements counts the prepared statements of db's session whose
// text contains part.
func PreparedStatements(ctx context.Context, db *DB, part string) (int, error) {
	var n int
	return n, db.r.GetContext(ctx, &n, `SELECT count(*) FROM pg_prepared_statements WHERE strpos(statement, $1) > 0`, part)
}
