package sqlstore

import "context"

// Setting is a run-time setting of one of db's connections.
func Setting(ctx context.Context, db *DB, name string) (string, error) {
	var v string
	return v, db.r.GetContext(ctx, &v, `SELECT current_setting($1)`, name)
}
