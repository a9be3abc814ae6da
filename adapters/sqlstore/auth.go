package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type deviceGrantRow struct {
	ID              string         `db:"id"`
	DeviceCodeHash  []byte         `db:"device_code_hash"`
	UserCode        string         `db:"user_code"`
	ClientName      string         `db:"client_name"`
	RequestedFrom   string         `db:"requested_from"`
	RequestedType   string         `db:"requested_key_type"`
	RequestedIdent  string         `db:"requested_identity"`
	Status          string         `db:"status"`
	AccountID       sql.NullString `db:"account_id"`
	KeyType         string         `db:"key_type"`
	IdentityID      sql.NullString `db:"identity_id"`
	IntervalSeconds int64          `db:"interval_seconds"`
	CreatedAt       int64          `db:"created_at"`
	ExpiresAt       int64          `db:"expires_at"`
	LastPolledAt    sql.NullInt64  `db:"last_polled_at"`
}

func (r deviceGrantRow) core() core.DeviceGrant {
	return core.DeviceGrant{ID: r.ID, DeviceCodeHash: r.DeviceCodeHash, UserCode: r.UserCode, ClientName: r.ClientName, RequestedFrom: r.RequestedFrom,
		RequestedKeyType: core.KeyType(r.RequestedType), RequestedIdentity: r.RequestedIdent,
		Status: core.DeviceGrantStatus(r.Status), AccountID: r.AccountID.String, KeyType: core.KeyType(r.KeyType), IdentityID: r.IdentityID.String,
		Interval: time.Duration(r.IntervalSeconds) * time.Second, CreatedAt: fromUS(r.CreatedAt), ExpiresAt: fromUS(r.ExpiresAt),
		LastPolledAt: fromNullUS(r.LastPolledAt)}
}

const deviceGrantColumns = "id, device_code_hash, user_code, client_name, requested_from, requested_key_type, requested_identity, status, account_id, key_type, identity_id, interval_seconds, created_at, expires_at, last_polled_at"

func (db *DB) CreateDeviceGrant(ctx context.Context, g core.DeviceGrant) error {
	_, err := db.w.ExecContext(ctx, db.q(`INSERT INTO device_grants (`+deviceGrantColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		g.ID, g.DeviceCodeHash, g.UserCode, g.ClientName, g.RequestedFrom, string(g.RequestedKeyType), g.RequestedIdentity,
		string(g.Status), nullString(g.AccountID), string(g.KeyType), nullString(g.IdentityID),
		int64(g.Interval/time.Second), us(g.CreatedAt), us(g.ExpiresAt), nullUS(g.LastPolledAt))
	return conflictOr(err, map[string]string{"user_code": "This user code is in use.", "device_code": "This device code is in use."})
}

func (db *DB) DeviceGrantByDeviceCode(ctx context.Context, hash []byte) (core.DeviceGrant, error) {
	var r deviceGrantRow
	err := db.get(ctx, &r, db.q(`SELECT `+deviceGrantColumns+` FROM device_grants WHERE device_code_hash = ?`), hash)
	return r.core(), notFound(err, "Device grant")
}

func (db *DB) DeviceGrantByUserCode(ctx context.Context, userCode string) (core.DeviceGrant, error) {
	var r deviceGrantRow
	err := db.get(ctx, &r, db.q(`SELECT `+deviceGrantColumns+` FROM device_grants WHERE user_code = ?`), userCode)
	return r.core(), notFound(err, "Device grant")
}

func (db *DB) RecordDevicePoll(ctx context.Context, id string, at time.Time, interval time.Duration) error {
	return db.execOne(ctx, "Device grant", `UPDATE device_grants SET last_polled_at = ?, interval_seconds = ? WHERE id = ?`,
		us(at), int64(interval/time.Second), id)
}

func (db *DB) DecideDeviceGrant(ctx context.Context, id string, d ports.DeviceDecision) error {
	from, refused := core.DeviceGrantMove(d.Status)
	res, err := db.w.ExecContext(ctx, db.q(`UPDATE device_grants SET status = ?, account_id = ?, key_type = ?, identity_id = ? WHERE id = ? AND status = ?`),
		string(d.Status), d.AccountID, string(d.KeyType), nullString(d.IdentityID), id, string(from))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return err
	}
	// Nothing changed: the grant is gone, or someone answered first.
	var status string
	if err := db.w.GetContext(ctx, &status, db.q(`SELECT status FROM device_grants WHERE id = ?`), id); err != nil {
		return notFound(err, "Device grant")
	}
	return refused
}

func (db *DB) RedeemDeviceGrant(ctx context.Context, id string, keys []core.APIKey) ([]int64, error) {
	var ids []int64
	from, refused := core.DeviceGrantMove(core.DeviceRedeemed)
	err := db.tx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, db.q(`UPDATE device_grants SET status = ? WHERE id = ? AND status = ?`),
			string(core.DeviceRedeemed), id, string(from))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return refused
		}
		for _, k := range keys {
			keyID, err := db.insertKey(ctx, tx, k)
			if err != nil {
				return err
			}
			ids = append(ids, keyID)
		}
		return nil
	})
	if err != nil {
		return nil, conflictOr(err, nil)
	}
	return ids, nil
}

func (db *DB) DeleteDeviceGrants(ctx context.Context, expiredBefore time.Time) error {
	_, err := db.w.ExecContext(ctx, db.q(`DELETE FROM device_grants WHERE expires_at < ?`), us(expiredBefore))
	return err
}

type refreshFamilyRow struct {
	ID         string        `db:"id"`
	AccountID  string        `db:"account_id"`
	Generation int64         `db:"generation"`
	CreatedAt  int64         `db:"created_at"`
	ExpiresAt  int64         `db:"expires_at"`
	RevokedAt  sql.NullInt64 `db:"revoked_at"`
}

func (r refreshFamilyRow) core() core.RefreshFamily {
	return core.RefreshFamily{ID: r.ID, AccountID: r.AccountID, Generation: r.Generation, CreatedAt: fromUS(r.CreatedAt),
		ExpiresAt: fromUS(r.ExpiresAt), RevokedAt: fromNullUS(r.RevokedAt)}
}

const refreshFamilyColumns = "id, account_id, generation, created_at, expires_at, revoked_at"

func (db *DB) CreateRefreshFamily(ctx context.Context, f core.RefreshFamily) error {
	_, err := db.w.ExecContext(ctx, db.q(`INSERT INTO refresh_families (`+refreshFamilyColumns+`) VALUES (?, ?, ?, ?, ?, ?)`),
		f.ID, f.AccountID, f.Generation, us(f.CreatedAt), us(f.ExpiresAt), nullUS(f.RevokedAt))
	return err
}

func (db *DB) RefreshFamily(ctx context.Context, id string) (core.RefreshFamily, error) {
	var r refreshFamilyRow
	err := db.get(ctx, &r, db.q(`SELECT `+refreshFamilyColumns+` FROM refresh_families WHERE id = ?`), id)
	return r.core(), notFound(err, "Sign-in")
}

// RotateRefreshFamily implements ports.RefreshFamilyStore: the family's row
// is locked (PostgreSQL; SQLite's write transaction holds the whole
// database), so of two refreshes with the same token one rotates and the
// other is a reuse, on any instance.
func (db *DB) RotateRefreshFamily(ctx context.Context, id string, presented int64, now time.Time) (core.RefreshFamily, error) {
	var next core.RefreshFamily
	var refused error
	err := db.tx(ctx, func(tx *sqlx.Tx) error {
		var r refreshFamilyRow
		if err := tx.GetContext(ctx, &r, db.q(`SELECT `+refreshFamilyColumns+` FROM refresh_families WHERE id = ?`+db.forUpdate()), id); err != nil {
			return notFound(err, "Sign-in")
		}
		next, refused = r.core().Rotate(presented, now)
		_, err := tx.ExecContext(ctx, db.q(`UPDATE refresh_families SET generation = ?, revoked_at = ? WHERE id = ?`),
			next.Generation, nullUS(next.RevokedAt), id)
		return err
	})
	if err != nil {
		return core.RefreshFamily{}, err
	}
	return next, refused
}

func (db *DB) DeleteRefreshFamilies(ctx context.Context, expiredBefore time.Time) error {
	_, err := db.w.ExecContext(ctx, db.q(`DELETE FROM refresh_families WHERE expires_at < ?`), us(expiredBefore))
	return err
}
