package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type webhookRow struct {
	ID             string `db:"id"`
	AccountID      string `db:"account_id"`
	URL            string `db:"url"`
	EventTypes     string `db:"event_types"`
	Identities     string `db:"identities"`
	Description    string `db:"description"`
	Enabled        bool   `db:"enabled"`
	DisabledReason string `db:"disabled_reason"`
	Secret         []byte `db:"secret"`
	PreviousSecret []byte `db:"previous_secret"`
	PreviousUntil  int64  `db:"previous_until"`
	LastSuccessAt  int64  `db:"last_success_at"`
	CreatedAt      int64  `db:"created_at"`
	UpdatedAt      int64  `db:"updated_at"`
}

const webhookColumns = `id, account_id, url, event_types, identities, description, enabled, disabled_reason, secret,
	previous_secret, previous_until, last_success_at, created_at, updated_at`

// optUS is a time stored as 0 when zero.
func optUS(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return us(t)
}

func fromOptUS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return fromUS(v)
}

func (r webhookRow) core() ports.StoredWebhook {
	return ports.StoredWebhook{Webhook: core.Webhook{ID: r.ID, AccountID: r.AccountID, URL: r.URL, EventTypes: parseList(r.EventTypes),
		Identities: parseList(r.Identities), Description: r.Description, Enabled: r.Enabled, DisabledReason: r.DisabledReason,
		PreviousUntil: fromOptUS(r.PreviousUntil), LastSuccessAt: fromOptUS(r.LastSuccessAt), CreatedAt: fromUS(r.CreatedAt),
		UpdatedAt: fromUS(r.UpdatedAt)}, Secret: r.Secret, PreviousSecret: r.PreviousSecret}
}

func (db *DB) CreateWebhook(ctx context.Context, sw ports.StoredWebhook) error {
	w := sw.Webhook
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO webhooks (`+webhookColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			w.ID, w.AccountID, w.URL, jsonList(w.EventTypes).text(), jsonList(w.Identities).text(), w.Description, w.Enabled,
			w.DisabledReason, sw.Secret, sw.PreviousSecret, optUS(w.PreviousUntil), optUS(w.LastSuccessAt), us(w.CreatedAt), us(w.UpdatedAt)); err != nil {
			return err
		}
		return db.recordEffect(ctx, tx, ports.ClaimOf(ctx), ports.EffectWebhook, w.ID)
	})
}

func (db *DB) Webhook(ctx context.Context, accountID, id string) (ports.StoredWebhook, error) {
	var r webhookRow
	err := db.get(ctx, &r, db.q(`SELECT `+webhookColumns+` FROM webhooks WHERE id = ? AND account_id = ?`), id, accountID)
	return r.core(), notFound(err, "Webhook")
}

func (db *DB) Webhooks(ctx context.Context, accountID string, page ports.Page) ([]ports.StoredWebhook, int, error) {
	var rows []webhookRow
	total, err := db.selectPage(ctx, &rows, webhookColumns, `FROM webhooks WHERE account_id = ?`, `ORDER BY created_at, id`,
		[]any{accountID}, page)
	return toCore(rows), total, err
}

func (db *DB) UpdateWebhook(ctx context.Context, sw ports.StoredWebhook) error {
	w := sw.Webhook
	return db.execOne(ctx, "Webhook", `UPDATE webhooks SET url = ?, event_types = ?, identities = ?, description = ?, enabled = ?,
		disabled_reason = ?, secret = ?, previous_secret = ?, previous_until = ?, updated_at = ? WHERE id = ? AND account_id = ?`,
		w.URL, jsonList(w.EventTypes).text(), jsonList(w.Identities).text(), w.Description, w.Enabled, w.DisabledReason,
		sw.Secret, sw.PreviousSecret, optUS(w.PreviousUntil), us(w.UpdatedAt), w.ID, w.AccountID)
}

func (db *DB) DeleteWebhook(ctx context.Context, accountID, id string) error {
	return db.execOne(ctx, "Webhook", `DELETE FROM webhooks WHERE id = ? AND account_id = ?`, id, accountID)
}

// writeDeliveries queues event (stored with id eventID) for every endpoint
// of its account that core.Webhook.Wants it; hooks caches the account's
// enabled endpoints for the transaction.
func (db *DB) writeDeliveries(ctx context.Context, tx txer, hooks map[string][]core.Webhook, eventID int64, e core.Event) error {
	ws, ok := hooks[e.AccountID]
	if !ok {
		var rows []webhookRow
		if err := selectTx(ctx, tx, &rows, db.q(`SELECT `+webhookColumns+` FROM webhooks WHERE account_id = ? AND enabled = ?`),
			e.AccountID, true); err != nil {
			return err
		}
		for _, r := range rows {
			ws = append(ws, r.core().Webhook)
		}
		hooks[e.AccountID] = ws
	}
	for _, w := range ws {
		if !w.Wants(e) {
			continue
		}
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO webhook_deliveries (webhook_id, account_id, event_id, status, attempts,
			status_code, error, latency_ms, next_attempt_at, claimed_until, created_at) VALUES (?, ?, ?, ?, 0, 0, '', 0, ?, 0, ?)`),
			w.ID, e.AccountID, eventID, core.WebhookPending, us(e.CreatedAt), us(e.CreatedAt)); err != nil {
			return err
		}
	}
	return nil
}

// selectTx reads rows of a query that does not vary with its arguments, in
// a transaction of either kind.
func selectTx(ctx context.Context, tx txer, dest any, query string, args ...any) error {
	switch t := tx.(type) {
	case *sqlx.Tx:
		return t.SelectContext(ctx, dest, query, args...)
	case *preparedTx:
		return t.selectPrepared(ctx, dest, query, args...)
	}
	panic("selectTx: unknown transaction type")
}

type deliveryRow struct {
	ID         int64  `db:"id"`
	WebhookID  string `db:"webhook_id"`
	AccountID  string `db:"account_id"`
	EventID    int64  `db:"event_id"`
	EventSeq   int64  `db:"seq"`
	EventType  string `db:"type"`
	Status     string `db:"status"`
	Attempts   int    `db:"attempts"`
	StatusCode int    `db:"status_code"`
	Error      string `db:"error"`
	LatencyMS  int64  `db:"latency_ms"`
	NextAt     int64  `db:"next_attempt_at"`
	CreatedAt  int64  `db:"created_at"`
	Exchange   string `db:"last_exchange"`
}

const deliveryColumns = `d.id, d.webhook_id, d.account_id, d.event_id, e.seq, e.type, d.status, d.attempts, d.status_code, d.error,
	d.latency_ms, d.next_attempt_at, d.created_at, d.last_exchange`

func (r deliveryRow) core() core.WebhookDelivery {
	d := core.WebhookDelivery{ID: r.ID, WebhookID: r.WebhookID, AccountID: r.AccountID, EventSeq: r.EventSeq,
		EventType: core.EventType(r.EventType), Status: r.Status, Attempts: r.Attempts, StatusCode: r.StatusCode, Error: r.Error,
		LatencyMS: r.LatencyMS, NextAt: fromUS(r.NextAt), CreatedAt: fromUS(r.CreatedAt)}
	if r.Exchange != "" {
		var ex core.WebhookExchange
		if json.Unmarshal([]byte(r.Exchange), &ex) == nil {
			d.Exchange = &ex
		}
	}
	return d
}

// exchangeJSON is how a delivery's last exchange is kept: JSON, or ” for none.
func exchangeJSON(ex *core.WebhookExchange) (string, error) {
	if ex == nil {
		return "", nil
	}
	b, err := json.Marshal(ex)
	return string(b), err
}

// ClaimDeliveries implements ports.WebhookStore: due rows are leased with
// FOR UPDATE SKIP LOCKED on PostgreSQL, so instances share the work.
// Every mail commit wakes the worker, and most make no delivery: a read
// says so first, without a write transaction (on SQLite the writer's one
// connection, which the next mail commit waits for).
func (db *DB) ClaimDeliveries(ctx context.Context, now, leaseUntil time.Time, limit int) ([]ports.DueDelivery, error) {
	var due bool
	if err := db.get(ctx, &due, db.q(`SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE status = ? AND next_attempt_at <= ?
		AND claimed_until <= ?)`), core.WebhookPending, us(now), us(now)); err != nil || !due {
		return nil, err
	}
	var out []ports.DueDelivery
	err := db.tx(ctx, func(tx *sqlx.Tx) error {
		lock := ""
		if db.dialect == Postgres {
			lock = " FOR UPDATE SKIP LOCKED"
		}
		var ids []int64
		if err := tx.SelectContext(ctx, &ids, db.q(`SELECT id FROM webhook_deliveries WHERE status = ? AND next_attempt_at <= ?
			AND claimed_until <= ? AND webhook_id IN (SELECT id FROM webhooks WHERE enabled = ?)
			ORDER BY next_attempt_at LIMIT ?`+lock), core.WebhookPending, us(now), us(now), true, limit); err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, db.q(`UPDATE webhook_deliveries SET claimed_until = ? WHERE id = ?`), us(leaseUntil), id); err != nil {
				return err
			}
			var d deliveryRow
			if err := tx.GetContext(ctx, &d, db.q(`SELECT `+deliveryColumns+` FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
				WHERE d.id = ?`), id); err != nil {
				return err
			}
			var e eventRow
			if err := tx.GetContext(ctx, &e, db.q(`SELECT seq, account_id, identity_id, type, created_at, data FROM events WHERE id = ?`),
				d.EventID); err != nil {
				return err
			}
			var w webhookRow
			if err := tx.GetContext(ctx, &w, db.q(`SELECT `+webhookColumns+` FROM webhooks WHERE id = ?`), d.WebhookID); err != nil {
				return err
			}
			out = append(out, ports.DueDelivery{Delivery: d.core(), Event: e.core(), Webhook: w.core()})
		}
		return nil
	})
	return out, err
}

// SaveAttempts implements ports.WebhookStore: a batch's outcomes share
// one commit (on SQLite, one fsync beside the mail's group commits). A
// delivery deleted meanwhile (with its endpoint) is skipped.
func (db *DB) SaveAttempts(ctx context.Context, ds []core.WebhookDelivery, at time.Time) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		for _, d := range ds {
			exchange, err := exchangeJSON(d.Exchange)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, db.q(`UPDATE webhook_deliveries SET status = ?, attempts = ?, status_code = ?, error = ?,
				latency_ms = ?, next_attempt_at = ?, claimed_until = 0, last_exchange = ? WHERE id = ?`),
				d.Status, d.Attempts, d.StatusCode, d.Error, d.LatencyMS, us(d.NextAt), exchange, d.ID); err != nil {
				return err
			}
			if d.Status == core.WebhookDelivered {
				if _, err := tx.ExecContext(ctx, db.q(`UPDATE webhooks SET last_success_at = ? WHERE id = ?`), us(at), d.WebhookID); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (db *DB) Deliveries(ctx context.Context, accountID, webhookID string, page ports.Page) ([]core.WebhookDelivery, int, error) {
	var rows []deliveryRow
	total, err := db.selectPage(ctx, &rows, deliveryColumns, `FROM webhook_deliveries d JOIN events e ON e.id = d.event_id
		WHERE d.webhook_id = ? AND d.account_id = ?`, `ORDER BY d.id DESC`, []any{webhookID, accountID}, page)
	return toCore(rows), total, err
}

func (db *DB) RetryDelivery(ctx context.Context, accountID, webhookID string, id int64, at time.Time) (core.WebhookDelivery, error) {
	if err := db.execOne(ctx, "Delivery", `UPDATE webhook_deliveries SET status = ?, next_attempt_at = ?, claimed_until = 0
		WHERE id = ? AND webhook_id = ? AND account_id = ?`, core.WebhookPending, us(at), id, webhookID, accountID); err != nil {
		return core.WebhookDelivery{}, err
	}
	var r deliveryRow
	err := db.get(ctx, &r, db.q(`SELECT `+deliveryColumns+` FROM webhook_deliveries d JOIN events e ON e.id = d.event_id WHERE d.id = ?`), id)
	return r.core(), notFound(err, "Delivery")
}
