package sqlstore

import (
	"context"
	"database/sql"
)

// What the operator's tools ask of the database directly: the first-run
// hint, the metrics and `callsign doctor`. None of it is a port: no use
// case needs it.

// HasAccounts reports whether any account exists.
func (db *DB) HasAccounts(ctx context.Context) (bool, error) {
	var exists bool
	err := db.r.QueryRowxContext(ctx, "SELECT EXISTS (SELECT 1 FROM accounts)").Scan(&exists)
	return exists, err
}

// OutboxDepth is the number of messages waiting in the outbox.
func (db *DB) OutboxDepth(ctx context.Context) (int64, error) {
	var n int64
	err := db.r.QueryRowxContext(ctx, "SELECT COUNT(*) FROM email_outbox").Scan(&n)
	return n, err
}

// Pools are the connection pools by role: "write" and "read" on SQLite,
// one shared pool ("main") on PostgreSQL.
func (db *DB) Pools() map[string]*sql.DB {
	if db.r == db.w {
		return map[string]*sql.DB{"main": db.w.DB}
	}
	return map[string]*sql.DB{"write": db.w.DB, "read": db.r.DB}
}

// Pending reports whether the database lacks migrations this build has.
func (db *DB) Pending(ctx context.Context) (bool, error) {
	p, err := db.migrator(ctx)
	if err != nil {
		return false, err
	}
	return p.HasPending(ctx)
}
