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
	Mode            string `db:"mode"`
	AgentURL        string `db:"agent_url"`
	Record          bool   `db:"record"`
	MediaToken      string `db:"media_token"`
	ConnectedAt     int64  `db:"stream_connected_at"`
	StreamEndedAt   int64  `db:"stream_ended_at"`
	FromCaller      int64  `db:"frames_from_caller"`
	ToCaller        int64  `db:"frames_to_caller"`
	Dropped         int64  `db:"frames_dropped"`
	DTMF            int64  `db:"dtmf"`
	RecordingBytes  int64  `db:"recording_bytes"`
	EndReason       string `db:"end_reason"`
}

func (r callRow) core() core.Call {
	c := core.Call{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID, PhoneID: r.PhoneID, PhoneNumber: r.PhoneNumber,
		Direction: core.Direction(r.Direction), FromNumber: r.FromNumber, ToNumber: r.ToNumber, Status: core.CallStatus(r.Status),
		StartedAt: fromUS(r.StartedAt), EndedAt: optionalUS(r.EndedAt), DurationSeconds: r.DurationSeconds, ProviderSID: r.ProviderSID,
		HangUpAt: optionalUS(r.HangUpAt), Mode: core.VoiceMode(r.Mode), AgentURL: r.AgentURL, Record: r.Record,
		MediaTokenHash: r.MediaToken, RecordingBytes: r.RecordingBytes, EndReason: core.EndReason(r.EndReason)}
	if r.ConnectedAt != 0 {
		c.Stream = &core.CallStream{ConnectedAt: fromUS(r.ConnectedAt), EndedAt: optionalUS(r.StreamEndedAt), FramesFromCaller: r.FromCaller, FramesToCaller: r.ToCaller,
			FramesDropped: r.Dropped, DTMF: r.DTMF}
	}
	return c
}

const callColumns = `id, account_id, identity_id, phone_id, phone_number, direction, from_number, to_number, status, started_at,
	ended_at, duration_seconds, provider_sid, hang_up_at, mode, agent_url, record, media_token, stream_connected_at,
	stream_ended_at, frames_from_caller, frames_to_caller, frames_dropped, dtmf, recording_bytes, end_reason`

// SaveCall implements ports.CallStore: the call unless its provider id is
// known (ON CONFLICT DO NOTHING on the unique index), with call.received.
func (db *DB) SaveCall(ctx context.Context, c core.Call) (core.Call, bool, error) {
	created := false
	err := db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		if err := db.lockAccount(ctx, tx, c.AccountID, "Account"); err != nil {
			return nil, err
		}
		err := tx.QueryRowxContext(ctx, db.q(`INSERT INTO calls (account_id, identity_id, phone_id, phone_number, direction,
			from_number, to_number, status, started_at, ended_at, duration_seconds, provider_sid, hang_up_at, mode, agent_url,
			record, media_token, end_reason)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id`),
			c.AccountID, c.IdentityID, c.PhoneID, c.PhoneNumber, string(c.Direction), c.FromNumber, c.ToNumber, string(c.Status),
			us(c.StartedAt), usOrZero(c.EndedAt), c.DurationSeconds, c.ProviderSID, usOrZero(c.HangUpAt), string(c.Mode), c.AgentURL,
			c.Record, c.MediaTokenHash, string(c.EndReason)).Scan(&c.ID)
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
		if _, err := tx.ExecContext(ctx, db.q(`UPDATE calls SET status = ?, ended_at = ?, duration_seconds = ?, end_reason = ? WHERE id = ?`),
			string(c.Status), usOrZero(c.EndedAt), c.DurationSeconds, string(c.EndReason), c.ID); err != nil {
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

func (db *DB) SetCallProvider(ctx context.Context, id int64, providerSID string) error {
	_, err := db.w.ExecContext(ctx, db.q(`UPDATE calls SET provider_sid = ? WHERE id = ?`), providerSID, id)
	return err
}

// ClaimMediaToken implements ports.CallStore: one UPDATE clears the token
// and returns the call, so two claims of one token cannot both succeed.
func (db *DB) ClaimMediaToken(ctx context.Context, hash string) (core.Call, error) {
	if hash == "" {
		return core.Call{}, core.NotFound("Stream not found.")
	}
	var r callRow
	err := db.w.GetContext(ctx, &r, db.q(`UPDATE calls SET media_token = '' WHERE media_token = ? RETURNING `+callColumns), hash)
	return r.core(), notFound(err, "Stream")
}

// StreamConnected implements ports.CallStore.
func (db *DB) StreamConnected(ctx context.Context, id int64, at time.Time) error {
	return db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		c, err := db.lockCall(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		if c.Status.Ended() {
			return nil, core.NotFound("Stream not found: the call has ended.")
		}
		if _, err := tx.ExecContext(ctx, db.q(`UPDATE calls SET stream_connected_at = ? WHERE id = ?`), us(at), id); err != nil {
			return nil, err
		}
		c.Stream = &core.CallStream{ConnectedAt: at}
		return []core.NewEvent{core.CallStartedEvent(c)}, nil
	})
}

// lockCall locks a call's account, then the call, as every writer of its
// events does, and reads it.
func (db *DB) lockCall(ctx context.Context, tx *sqlx.Tx, id int64) (core.Call, error) {
	var accountID string
	if err := tx.GetContext(ctx, &accountID, db.q(`SELECT account_id FROM calls WHERE id = ?`), id); err != nil {
		return core.Call{}, notFound(err, "Call")
	}
	if err := db.lockAccount(ctx, tx, accountID, "Call"); err != nil {
		return core.Call{}, err
	}
	var row callRow
	err := tx.GetContext(ctx, &row, db.q(`SELECT `+callColumns+` FROM calls WHERE id = ?`+db.forUpdate()), id)
	return row.core(), notFound(err, "Call")
}

// StreamEnded implements ports.CallStore.
func (db *DB) StreamEnded(ctx context.Context, id int64, st core.CallStream, reason core.EndReason, recording []byte) error {
	return db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		c, err := db.lockCall(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		c.NoteEndReason(reason)
		if recording != nil {
			c.RecordingBytes = int64(len(recording))
			if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO call_recordings (call_id, account_id, content, stored_bytes)
				VALUES (?, ?, ?, ?)`), id, c.AccountID, recording, c.RecordingBytes); err != nil {
				return nil, err
			}
		}
		e, completed := core.StreamEndedEvent(&c, st)
		var end core.CallStream
		if c.Stream != nil {
			end = *c.Stream
		}
		if _, err = tx.ExecContext(ctx, db.q(`UPDATE calls SET stream_connected_at = ?, stream_ended_at = ?, frames_from_caller = ?,
			frames_to_caller = ?, frames_dropped = ?, dtmf = ?, end_reason = ?, recording_bytes = ? WHERE id = ?`), usOrZero(end.ConnectedAt),
			usOrZero(end.EndedAt), end.FramesFromCaller, end.FramesToCaller, end.FramesDropped, end.DTMF, string(c.EndReason), c.RecordingBytes, id); err != nil {
			return nil, err
		}
		if completed {
			return []core.NewEvent{e}, nil
		}
		return nil, nil
	})
}

// EndStaleStreams implements ports.CallStore; the bridge is taken to have
// ended with the call.
func (db *DB) EndStaleStreams(ctx context.Context, endedBefore time.Time) (int, error) {
	var ids []int64
	if err := db.r.SelectContext(ctx, &ids, db.q(`SELECT id FROM calls WHERE stream_connected_at <> 0 AND stream_ended_at = 0
		AND ended_at <> 0 AND ended_at < ? ORDER BY ended_at LIMIT 100`), us(endedBefore)); err != nil {
		return 0, err
	}
	for _, id := range ids {
		if err := db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
			c, err := db.lockCall(ctx, tx, id)
			if err != nil || c.Stream == nil || !c.Stream.EndedAt.IsZero() {
				return nil, err // its bridge reported meanwhile
			}
			st := *c.Stream
			st.EndedAt = c.EndedAt
			e, completed := core.StreamEndedEvent(&c, st)
			if _, err := tx.ExecContext(ctx, db.q(`UPDATE calls SET stream_ended_at = ? WHERE id = ?`), us(st.EndedAt), id); err != nil {
				return nil, err
			}
			if completed {
				return []core.NewEvent{e}, nil
			}
			return nil, nil
		}); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

// NoteEndReason implements ports.CallStore.
func (db *DB) NoteEndReason(ctx context.Context, id int64, reason core.EndReason) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		c, err := db.lockCall(ctx, tx, id)
		if err != nil || !c.NoteEndReason(reason) {
			return err
		}
		_, err = tx.ExecContext(ctx, db.q(`UPDATE calls SET end_reason = ? WHERE id = ?`), string(reason), id)
		return err
	})
}

func (db *DB) ActiveCalls(ctx context.Context, accountID string) (int64, error) {
	var n int64
	err := db.get(ctx, &n, db.q(`SELECT COUNT(*) FROM calls WHERE account_id = ? AND ended_at = 0`), accountID)
	return n, err
}

func (db *DB) CallRecording(ctx context.Context, accountID string, id int64) ([]byte, error) {
	var b []byte
	err := db.get(ctx, &b, db.q(`SELECT content FROM call_recordings WHERE call_id = ? AND account_id = ?`), id, accountID)
	return b, notFound(err, "Recording")
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
