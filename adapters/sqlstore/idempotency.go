package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type idempotencyRow struct {
	Fingerprint []byte         `db:"fingerprint"`
	Token       string         `db:"token"`
	CreatedAt   int64          `db:"created_at"`
	LeaseUntil  int64          `db:"lease_until"`
	EffectKind  sql.NullString `db:"effect_kind"`
	EffectID    sql.NullString `db:"effect_id"`
	Status      int            `db:"status"`
	Body        []byte         `db:"body"`
}

func (r idempotencyRow) core() core.IdempotencyRecord {
	return core.IdempotencyRecord{Fingerprint: r.Fingerprint, Token: r.Token, CreatedAt: fromUS(r.CreatedAt), LeaseUntil: fromUS(r.LeaseUntil),
		EffectKind: r.EffectKind.String, EffectID: r.EffectID.String, Status: r.Status, Body: r.Body}
}

// ClaimIdempotencyKey implements ports.IdempotencyStore. The insert that
// does nothing on a clash makes two first requests (two instances) meet on
// the primary key; the loser then reads the winner's row under its lock.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, c ports.IdempotencyClaim, fingerprint []byte, now, leaseUntil time.Time) (core.IdempotencyOutcome, core.IdempotencyRecord, error) {
	var outcome core.IdempotencyOutcome
	var was core.IdempotencyRecord
	err := db.tx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, db.q(`INSERT INTO idempotency_keys (account_id, scope, key, fingerprint, token, created_at, lease_until)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`), c.AccountID, c.Scope, c.Key, fingerprint, c.Token, us(now), us(leaseUntil))
		if err != nil {
			return notFound(err, "Account")
		}
		if n, _ := res.RowsAffected(); n == 1 {
			outcome = core.IdempotencyRun
			return nil
		}
		var r idempotencyRow
		if err := tx.GetContext(ctx, &r, db.q(`SELECT fingerprint, token, created_at, lease_until, effect_kind, effect_id, status, body
			FROM idempotency_keys WHERE account_id = ? AND scope = ? AND key = ?`+db.forUpdate()), c.AccountID, c.Scope, c.Key); err != nil {
			return err
		}
		was = r.core()
		if outcome = core.JudgeIdempotencyKey(&was, fingerprint, now); outcome != core.IdempotencyRun {
			return nil
		}
		_, err = tx.ExecContext(ctx, db.q(`UPDATE idempotency_keys SET fingerprint = ?, token = ?, created_at = ?, lease_until = ?,
			effect_kind = NULL, effect_id = NULL, status = 0, body = NULL WHERE account_id = ? AND scope = ? AND key = ?`),
			fingerprint, c.Token, us(now), us(leaseUntil), c.AccountID, c.Scope, c.Key)
		return err
	})
	return outcome, was, err
}

// AnswerIdempotencyKey implements ports.IdempotencyStore.
func (db *DB) AnswerIdempotencyKey(ctx context.Context, c ports.IdempotencyClaim, status int, body []byte) error {
	_, err := db.w.ExecContext(ctx, db.q(`UPDATE idempotency_keys SET status = ?, body = ?
		WHERE account_id = ? AND scope = ? AND key = ? AND token = ?`), status, body, c.AccountID, c.Scope, c.Key, c.Token)
	return err
}

// ReleaseIdempotencyKey implements ports.IdempotencyStore.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, c ports.IdempotencyClaim) error {
	_, err := db.w.ExecContext(ctx, db.q(`DELETE FROM idempotency_keys WHERE account_id = ? AND scope = ? AND key = ? AND token = ?`),
		c.AccountID, c.Scope, c.Key, c.Token)
	return err
}

// PurgeIdempotencyKeys implements ports.IdempotencyStore.
func (db *DB) PurgeIdempotencyKeys(ctx context.Context, before time.Time, limit int) (int, error) {
	res, err := db.w.ExecContext(ctx, db.q(`DELETE FROM idempotency_keys WHERE (account_id, scope, key) IN
		(SELECT account_id, scope, key FROM idempotency_keys WHERE created_at < ? LIMIT ?)`), us(before), limit)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// execer is a transaction, prepared or not.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// errClaimLost is the Conflict of an effect whose request no longer holds its key.
var errClaimLost = core.Conflict("This request's %s was taken over by a retry; it did nothing.", core.IdempotencyHeader)

// recordEffect writes what a request created onto the idempotency claim
// its context carries (if any), in the transaction that created it; see
// ports.IdempotencyStore. The first effect of a request is kept.
func (db *DB) recordEffect(ctx context.Context, tx execer, c *ports.IdempotencyClaim, kind, id string) error {
	if c == nil {
		return nil
	}
	return execTouching(ctx, tx, errClaimLost, db.q(`UPDATE idempotency_keys SET effect_kind = COALESCE(effect_kind, ?), effect_id = COALESCE(effect_id, ?)
		WHERE account_id = ? AND scope = ? AND key = ? AND token = ?`), kind, id, c.AccountID, c.Scope, c.Key, c.Token)
}

// execTouching runs a write that must touch a row, and fails with none
// when it touches none; in a pipeline the check comes when it is sent.
func execTouching(ctx context.Context, tx execer, none error, query string, args ...any) error {
	if p, ok := tx.(*pipeline); ok {
		p.queueTouching(none, query, args...)
		return nil
	}
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return none
	}
	return nil
}
