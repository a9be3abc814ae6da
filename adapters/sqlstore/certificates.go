package sqlstore

import (
	"context"
	"time"
)

func (db *DB) CertificateEntry(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := db.get(ctx, &v, db.q(`SELECT value FROM acme_cache WHERE id = ?`), key)
	return v, notFound(err, "Certificate entry")
}

func (db *DB) PutCertificateEntry(ctx context.Context, key string, sealed []byte, at time.Time) error {
	_, err := db.w.ExecContext(ctx, db.q(`INSERT INTO acme_cache (id, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`), key, sealed, us(at))
	return err
}

func (db *DB) DeleteCertificateEntry(ctx context.Context, key string) error {
	_, err := db.w.ExecContext(ctx, db.q(`DELETE FROM acme_cache WHERE id = ?`), key)
	return err
}

// ClaimCertificateLease inserts the lease, or takes it over where
// core.LeaseFree allows, in one statement: of two instances claiming at
// once, the second sees the first's lease in the conflict's row and
// changes nothing.
func (db *DB) ClaimCertificateLease(ctx context.Context, name, holder string, now, until time.Time) (bool, error) {
	res, err := db.w.ExecContext(ctx, db.q(`INSERT INTO acme_leases (name, claimed_by, claimed_until) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET claimed_by = excluded.claimed_by, claimed_until = excluded.claimed_until
		WHERE acme_leases.claimed_by = excluded.claimed_by OR acme_leases.claimed_until <= ?`), name, holder, us(until), us(now))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (db *DB) ReleaseCertificateLease(ctx context.Context, name, holder string) error {
	_, err := db.w.ExecContext(ctx, db.q(`DELETE FROM acme_leases WHERE name = ? AND claimed_by = ?`), name, holder)
	return err
}
