package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/callsign/callsign/core"
)

// usageCounts are the queries of UsageStore.Usage, one indexed read each:
// storage is the account row's own (kept by triggers, migrations 00028, 00034),
// counts go through the tables' account and identity indexes.
var usageCounts = map[core.Quota]string{
	core.QuotaStorage:    `SELECT storage_bytes FROM accounts WHERE id = ?`,
	core.QuotaIdentities: `SELECT COUNT(*) FROM identities WHERE account_id = ?`,
	core.QuotaInboxes:    `SELECT COUNT(*) FROM inboxes WHERE account_id = ?`,
	core.QuotaPhones:     `SELECT COUNT(*) FROM phone_numbers WHERE account_id = ?`,
}

// Usage implements ports.UsageStore.
func (db *DB) Usage(ctx context.Context, accountID, identityID string, since time.Time, quotas []core.Quota) (core.Usage, error) {
	u := core.Usage{Used: map[core.Quota]int64{}}
	for _, q := range quotas {
		var n int64
		var err error
		switch q {
		case core.QuotaVaultItems:
			n, err = db.vaultItems(ctx, accountID, identityID)
		case core.QuotaSendsPerHour:
			n, u.OldestSend, err = db.sends(ctx, accountID, since)
		default:
			err = db.get(ctx, &n, db.q(usageCounts[q]), accountID)
		}
		if err != nil {
			return core.Usage{}, notFound(err, "Account")
		}
		u.Used[q] = n
	}
	return u, nil
}

// vaultItems counts one identity's passwords and secrets, or with no
// identity the most any identity of the account holds.
func (db *DB) vaultItems(ctx context.Context, accountID, identityID string) (int64, error) {
	var n int64
	if identityID != "" {
		err := db.get(ctx, &n, db.q(`SELECT (SELECT COUNT(*) FROM passwords WHERE identity_id = ?) +
			(SELECT COUNT(*) FROM secrets WHERE identity_id = ?)`), identityID, identityID)
		return n, err
	}
	// Per identity through the identity indexes, as above: grouping the
	// account's entries instead sorted them all (4.9 ms for 1,000 on SQLite).
	err := db.get(ctx, &n, db.q(`SELECT COALESCE(MAX((SELECT COUNT(*) FROM passwords p WHERE p.identity_id = i.id) +
		(SELECT COUNT(*) FROM secrets s WHERE s.identity_id = i.id)), 0) FROM identities i WHERE i.account_id = ?`), accountID)
	return n, err
}

// sends counts the mail and texts an account sent since a time, in the
// log the triggers of migration 00028 keep (deleting a sent message keeps
// its send), and tells the oldest.
func (db *DB) sends(ctx context.Context, accountID string, since time.Time) (int64, time.Time, error) {
	var r struct {
		N      int64         `db:"n"`
		Oldest sql.NullInt64 `db:"oldest"`
	}
	err := db.get(ctx, &r, db.q(`SELECT COUNT(*) AS n, MIN(sent_at) AS oldest FROM sends WHERE account_id = ? AND sent_at >= ?`),
		accountID, us(since))
	if err != nil || !r.Oldest.Valid {
		return r.N, time.Time{}, err
	}
	return r.N, fromUS(r.Oldest.Int64), nil
}
