package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
)

// The event log. Store methods that make a change worth telling write its
// events in their own transaction (writeEvents), as core's rules say
// (core.MailEvent, core.DeliveryEvent, …), and tell readers once the
// transaction has committed: on SQLite through a channel of this process
// (one writer process), on PostgreSQL through NOTIFY, which the database
// delivers at commit to every instance's listener, this one's included.

// eventsChannel is the PostgreSQL NOTIFY channel of committed events.
const eventsChannel = "callsign_events"

// txer is what writeEvents needs of a transaction (sqlx.Tx or preparedTx).
type txer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	GetContext(ctx context.Context, dest any, query string, args ...any) error
}

// writeEvents appends events to their accounts' logs in tx, with a
// webhook delivery for each endpoint that wants one. Each account's
// event_seq moves under its row lock, so sequence numbers grow in commit
// order per account. Callers that touch other rows lock the account first
// (lockAccount, or SaveMail's clock), so instances never deadlock.
func (db *DB) writeEvents(ctx context.Context, tx txer, events []core.NewEvent) error {
	if len(events) == 0 {
		return nil
	}
	next := map[string]int64{}
	counts := eventsPerAccount(events)
	for _, a := range slices.Sorted(maps.Keys(counts)) { // one order everywhere: no deadlock between writers
		n := counts[a]
		var last int64
		if err := tx.GetContext(ctx, &last, db.q(`UPDATE accounts SET event_seq = event_seq + ? WHERE id = ? RETURNING event_seq`),
			n, a); err != nil {
			return notFound(err, "Account")
		}
		next[a] = last - n + 1
	}
	return db.insertEvents(ctx, tx, events, next, nil, map[string][]core.Webhook{})
}

// eventsPerAccount counts events by account.
func eventsPerAccount(events []core.NewEvent) map[string]int64 {
	n := map[string]int64{}
	for _, e := range events {
		n[e.AccountID]++
	}
	return n
}

// insertEvents writes events, numbered from next (per account, the
// sequence number of its first event here, reserved under the account's
// lock), with their webhook deliveries. ids, given with a pipeline, are the events.
// ids, drawn from the table's sequence beforehand (PostgreSQL's pipelined
// mail, which cannot wait for RETURNING); else the insert returns each.
// hooks holds each account's enabled webhooks; those it lacks are read.
func (db *DB) insertEvents(ctx context.Context, tx txer, events []core.NewEvent, next map[string]int64, ids []int64,
	hooks map[string][]core.Webhook) error {
	now := us(time.Now())
	for i, e := range events {
		data, err := db.encodeEvent(e)
		if err != nil {
			return err
		}
		stored := core.Event{Seq: next[e.AccountID], AccountID: e.AccountID, IdentityID: e.IdentityID, Type: e.Type,
			CreatedAt: fromUS(now), Data: data}
		next[e.AccountID]++
		args := []any{e.AccountID, stored.Seq, nullString(e.IdentityID), string(e.Type), now, string(data)}
		var id int64
		if p, ok := tx.(*pipeline); ok {
			id = ids[i]
			p.rows(`INSERT INTO events (id, account_id, seq, identity_id, type, created_at, data) OVERRIDING SYSTEM VALUE
				SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::bigint[], $4::uuid[], $5::text[], $6::bigint[], $7::text[])`).
				add(append([]any{id}, args...)...)
		} else {
			id, err = db.insertReturningID(ctx, tx, `INSERT INTO events (account_id, seq, identity_id, type, created_at, data)
				VALUES (?, ?, ?, ?, ?, ?)`, args...)
		}
		if err != nil {
			return err
		}
		if err := db.writeDeliveries(ctx, tx, hooks, id, stored); err != nil {
			return err
		}
	}
	if db.dialect == Postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_notify('`+eventsChannel+`', '')`); err != nil {
			return err
		}
	}
	return nil
}

// defaultEventData renders an event's subject as plain JSON, for stores
// opened without the API's encoder (store tests).
func defaultEventData(e core.NewEvent) ([]byte, error) { return json.Marshal(e.Subject) }

// txEvents runs f in a transaction that also writes the events f returns,
// and tells readers after the commit.
func (db *DB) txEvents(ctx context.Context, f func(tx *sqlx.Tx) ([]core.NewEvent, error)) error {
	wrote := false
	err := db.tx(ctx, func(tx *sqlx.Tx) error {
		events, err := f(tx)
		if err != nil {
			return err
		}
		wrote = len(events) > 0
		return db.writeEvents(ctx, tx, events)
	})
	if err == nil && wrote {
		db.eventsCommitted()
	}
	return err
}

// eventsCommitted tells this process's reader that events were committed;
// on PostgreSQL the NOTIFY written with them does.
func (db *DB) eventsCommitted() {
	if db.dialect == SQLite {
		db.signalEvents()
	}
}

func (db *DB) signalEvents() {
	select {
	case db.written <- struct{}{}:
	default:
	}
}

// EventsWritten implements ports.EventStore. On PostgreSQL the first call
// starts the listener, which holds a connection of its own until Close.
func (db *DB) EventsWritten() <-chan struct{} {
	if db.dialect == Postgres {
		db.listenOnce.Do(func() {
			ctx, cancel := context.WithCancel(context.Background())
			db.stopListening = cancel
			db.listening.Add(1)
			go func() { defer db.listening.Done(); db.listen(ctx) }()
		})
	}
	return db.written
}

// listen keeps a LISTEN connection open, reconnecting after a pause when it
// drops; every (re)connection counts as a signal, since a notification may
// have been missed meanwhile.
func (db *DB) listen(ctx context.Context) {
	for ctx.Err() == nil {
		conn, err := pgx.Connect(ctx, db.url)
		if err == nil {
			if _, err = conn.Exec(ctx, "LISTEN "+eventsChannel); err == nil {
				db.signalEvents()
				for err == nil {
					if _, err = conn.WaitForNotification(ctx); err == nil {
						db.signalEvents()
					}
				}
			}
			_ = conn.Close(context.Background())
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

type eventRow struct {
	Seq        int64          `db:"seq"`
	AccountID  string         `db:"account_id"`
	IdentityID sql.NullString `db:"identity_id"`
	Type       string         `db:"type"`
	CreatedAt  int64          `db:"created_at"`
	Data       string         `db:"data"`
}

func (r eventRow) core() core.Event {
	return core.Event{Seq: r.Seq, AccountID: r.AccountID, IdentityID: r.IdentityID.String, Type: core.EventType(r.Type),
		CreatedAt: fromUS(r.CreatedAt), Data: []byte(r.Data)}
}

// Events implements ports.EventStore: one indexed range of the account's
// log (of the identity's, when the scope names one), types filtered in SQL.
func (db *DB) Events(ctx context.Context, f core.EventFilter) ([]core.Event, error) {
	if f.Scope.Empty {
		return nil, nil
	}
	where := []string{"account_id = ?", "seq > ?"}
	args := []any{f.Scope.AccountID, f.After}
	if f.Scope.IdentityID != "" {
		where = append(where, "identity_id = ?")
		args = append(args, f.Scope.IdentityID)
	}
	if len(f.Types) > 0 {
		var or []string
		for _, p := range f.Types {
			if prefix, ok := core.EventTypePrefix(p); ok {
				or = append(or, "type LIKE ?")
				args = append(args, prefix+"%")
			} else {
				or = append(or, "type = ?")
				args = append(args, p)
			}
		}
		where = append(where, "("+strings.Join(or, " OR ")+")")
	}
	order := "seq"
	if f.Newest {
		order = "seq DESC"
	}
	if f.Before > 0 {
		where = append(where, "seq < ?")
		args = append(args, f.Before)
	}
	args = append(args, f.Limit)
	var rows []eventRow
	err := db.r.SelectContext(ctx, &rows, db.q(`SELECT seq, account_id, identity_id, type, created_at, data FROM events
		WHERE `+strings.Join(where, " AND ")+` ORDER BY `+order+` LIMIT ?`), args...)
	return toCore(rows), err
}

// LatestEvent implements ports.EventStore: event_seq moves only under the
// account's row lock, in the transaction that writes the events, so what
// a reader sees of it is the newest committed event.
func (db *DB) LatestEvent(ctx context.Context, accountID string) (int64, error) {
	var n int64
	err := db.get(ctx, &n, db.q(`SELECT event_seq FROM accounts WHERE id = ?`), accountID)
	return n, notFound(err, "Account")
}

// EventsPrunedThrough implements ports.EventStore.
func (db *DB) EventsPrunedThrough(ctx context.Context, accountID string) (int64, error) {
	var n int64
	err := db.get(ctx, &n, db.q(`SELECT events_pruned FROM accounts WHERE id = ?`), accountID)
	return n, notFound(err, "Account")
}

// PruneEvents implements ports.EventStore. It deletes whole prefixes of
// accounts' logs (every event up to the newest expired one it found), so
// events_pruned marks where each log now starts and no log has a hole.
// The oldest events are the first by id (ids grow with time, as sequence
// numbers do within an account), so no index of times is kept for it: one
// more index entry a message cost more than this read (issue 32). The
// oldest event is looked at first, so a log with nothing expired costs
// one row; an event whose id came a moment before an older one's time
// waits for that one.
func (db *DB) PruneEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	var deleted int
	err := db.tx(ctx, func(tx *sqlx.Tx) error {
		var oldest int64
		switch err := tx.GetContext(ctx, &oldest, `SELECT created_at FROM events ORDER BY id LIMIT 1`); {
		case errors.Is(err, sql.ErrNoRows):
			return nil
		case err != nil:
			return err
		case oldest >= us(before):
			return nil
		}
		var ends []struct {
			AccountID string `db:"account_id"`
			Seq       int64  `db:"seq"`
		}
		if err := tx.SelectContext(ctx, &ends, db.q(`SELECT account_id, MAX(seq) AS seq FROM
			(SELECT account_id, seq, created_at FROM events ORDER BY id LIMIT ?) AS oldest
			WHERE created_at < ? GROUP BY account_id ORDER BY account_id`), limit, us(before)); err != nil {
			return err
		}
		for _, e := range ends {
			if _, err := tx.ExecContext(ctx, db.q(`UPDATE accounts SET events_pruned = ? WHERE id = ? AND events_pruned < ?`),
				e.Seq, e.AccountID, e.Seq); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, db.q(`DELETE FROM events WHERE account_id = ? AND seq <= ?`), e.AccountID, e.Seq)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			deleted += int(n)
		}
		return nil
	})
	return deleted, err
}

func isNotFound(err error) bool { return err != nil && core.KindOf(err) == core.KindNotFound }
