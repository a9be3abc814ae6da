package sqlstore

import "context"

// ProbeCast makes PostgreSQL refuse a value as invalid data (SQLSTATE 22P02).
func ProbeCast(ctx context.Context, db *DB, v string) error {
	var n int
	return db.w.GetContext(ctx, &n, db.q(`SELECT CAST(? AS INTEGER)`), v)
}
