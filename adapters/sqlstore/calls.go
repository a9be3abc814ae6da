package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type callRow struct {
	ID              int64  `db:"id"`
	AccountID       string `db:"account_id"`
	IdentityID      string `db:"identity_id"`
	PhoneID         int64  `db:"phone_id"`
	PhoneNumber     string `db:"phone_number"`
	Direction       string `db:"direction"`
	FromNumber      string `db:"from_number"`
	ToNumber        string `db:"to_number"`
	Status          string `db:"status"`
	StartedAt       int64  `db:"started_at"`
	EndedAt         int64  `db:"ended_at"`
	DurationSeconds int    `db:"duration_seconds"`
	ProviderSID     string `db:"provider_sid"`
	HangUpAt        int64  `db:"hang_up_at"`
}

func (r callRow) core() core.Call {
	return core.Call{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID, PhoneID: r.PhoneID, PhoneNumber: r.PhoneNumber,
		Direction: core.Direction(r.Direction), FromNumber: r.FromNumber, ToNumber: r.ToNumber, Status: core.CallStatus(r.Status),
		StartedAt: fromUS(r.StartedAt), EndedAt: optionalUS(r.EndedAt), DurationSeconds: r.DurationSeconds, ProviderSID: r.ProviderSID,
		HangUpAt: optionalUS(r.HangUpAt)}
}

const callColumns = `id, account_id, identity_id, phone_id, phone_number, direction, from_number, to_number, status, started_at,
	ended_at, duration_seconds, provider_sid, hang_up_at`

// SaveCall implements ports.CallStore: the call unless its provider id is
// known (ON CONFLICT DO NOTHING on the unique index), with call.received.
func (db *DB) SaveCall(ctx context.Context, c core.Call) (core.Call, bool, error) {
	created := false
	err := db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		if err := db.lockAccount(ctx, tx, c.AccountID, "Account"); err != nil {
			return nil, err
		}
		err := tx.QueryRowxContext(ctx, db.q(`INSERT INTO calls (account_id, identity_id, phone_id, phone_number, direction,
			from_number, to_number, status, started_at, ended_at, duration_seconds, provider_sid, hang_up_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id`),
			c.AccountID, c.IdentityID, c.PhoneID, c.PhoneNumber, string(c.Direction), c.FromNumber, c.ToNumber, string(c.Status),
			us(c.StartedAt), usOrZero(c.EndedAt), c.DurationSeconds, c.ProviderSID, usOrZero(c.HangUpAt)).Scan(&c.ID)
		if errors.Is(err, sql.ErrNoRows) {
			var r callRow
			err := tx.GetContext(ctx, &r, db.q(`SELECT `+callColumns+` FROM calls WHERE provider_sid = ?`), c.ProviderSID)
			c = r.core()
			return nil, err
		}
		if err != nil {
			return nil, err
		}
		created = true
		return []core.NewEvent{core.CallReceivedEvent(c)}, nil
	})
	return c, created, err
}

// ReportCall implements ports.CallStore, under the account's lock (taken
// first, as every writer of events takes it) and the call's.
func (db *DB) ReportCall(ctx context.Context, r core.CallReport) (bool, error) {
	found := false
	err := db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		var accountID string
		err := tx.GetContext(ctx, &accountID, db.q(`SELECT account_id FROM calls WHERE provider_sid = ?`), r.ProviderSID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if err := db.lockAccount(ctx, tx, accountID, "Call"); err != nil {
			return nil, err
		}
		var row callRow
		if err := tx.GetContext(ctx, &row, db.q(`SELECT `+callColumns+` FROM calls WHERE provider_sid = ?`+db.forUpdate()), r.ProviderSID); err != nil {
			return nil, notFound(err, "Call")
		}
		found = true
		c := row.core()
		if !r.Apply(&c) {
			return nil, nil // a late report of an earlier status, or after the end
		}
		if _, err := tx.ExecContext(ctx, db.q(`UPDATE calls SET status = ?, ended_at = ?, duration_seconds = ? WHERE id = ?`),
			string(c.Status), usOrZero(c.EndedAt), c.DurationSeconds, c.ID); err != nil {
			return nil, err
		}
		if e, ok := core.CallEndedEvent(c); ok {
			return []core.NewEvent{e}, nil
		}
		return nil, nil
	})
	return found, err
}

func (db *DB) Call(ctx context.Context, accountID string, id int64) (core.Call, error) {
	var r callRow
	err := db.get(ctx, &r, db.q(`SELECT `+callColumns+` FROM calls WHERE id = ? AND account_id = ?`), id, accountID)
	return r.core(), notFound(err, "Call")
}

func (db *DB) Calls(ctx context.Context, f ports.CallFilter) ([]core.Call, int, error) {
	if f.Scope.Empty {
		return nil, 0, nil
	}
	var w where
	w.scope(f.Scope)
	if f.StartedAfter != nil {
		w.add("started_at > ?", us(*f.StartedAfter))
	}
	var rows []callRow
	total, err := db.selectPage(ctx, &rows, callColumns, `FROM calls`+w.sql(), `ORDER BY started_at DESC, id DESC`, w.args, f.Page)
	return toCore(rows), total, err
}

func (db *DB) SimulatedHangUps(ctx context.Context, now time.Time) ([]core.Call, time.Time, error) {
	var rows []callRow
	if err := db.r.SelectContext(ctx, &rows, db.q(`SELECT `+callColumns+` FROM calls
		WHERE hang_up_at <> 0 AND ended_at = 0 AND hang_up_at <= ? ORDER BY hang_up_at LIMIT 100`), us(now)); err != nil {
		return nil, time.Time{}, err
	}
	var next sql.NullInt64
	if err := db.get(ctx, &next, db.q(`SELECT MIN(hang_up_at) FROM calls WHERE hang_up_at <> 0 AND ended_at = 0 AND hang_up_at > ?`),
		us(now)); err != nil {
		return nil, time.Time{}, err
	}
	return toCore(rows), optionalUS(next.Int64), nil
}
