package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type phoneRow struct {
	ID          int64  `db:"id"`
	AccountID   string `db:"account_id"`
	IdentityID  string `db:"identity_id"`
	Number      string `db:"number"`
	CountryCode string `db:"country_code"`
	SMS         bool   `db:"sms"`
	Voice       bool   `db:"voice"`
	MMS         bool   `db:"mms"`
	Provider    string `db:"provider"`
	ProviderSID string `db:"provider_sid"`
	CreatedAt   int64  `db:"created_at"`
}

func (r phoneRow) core() core.PhoneNumber {
	return core.PhoneNumber{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID, Number: r.Number, CountryCode: r.CountryCode,
		Capabilities: core.Capabilities{SMS: r.SMS, Voice: r.Voice, MMS: r.MMS}, Provider: r.Provider, ProviderSID: r.ProviderSID,
		CreatedAt: fromUS(r.CreatedAt)}
}

const phoneColumns = "id, account_id, identity_id, number, country_code, sms, voice, mms, provider, provider_sid, created_at"

var phoneConflicts = map[string]string{
	"identity_id": "This identity already has a phone number.",
	"number":      "This number is already provisioned.",
}

func (db *DB) insertPhone(ctx context.Context, q sqlx.QueryerContext, p core.PhoneNumber) (int64, error) {
	var id int64
	err := q.QueryRowxContext(ctx, db.q(`INSERT INTO phone_numbers (account_id, identity_id, number, country_code, sms, voice, mms,
		provider, provider_sid, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		p.AccountID, p.IdentityID, p.Number, p.CountryCode, p.Capabilities.SMS, p.Capabilities.Voice, p.Capabilities.MMS,
		p.Provider, p.ProviderSID, us(p.CreatedAt)).Scan(&id)
	return id, conflictOr(err, phoneConflicts)
}

// CreatePhone implements ports.PhoneStore, writing phone.provisioned.
func (db *DB) CreatePhone(ctx context.Context, p core.PhoneNumber) (int64, error) {
	err := db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		if err := db.lockAccount(ctx, tx, p.AccountID, "Identity"); err != nil {
			return nil, err
		}
		var err error
		if p.ID, err = db.insertPhone(ctx, tx, p); err != nil {
			return nil, err
		}
		if err := db.execOneOn(ctx, tx, "Identity", `UPDATE identities SET updated_at = ? WHERE id = ? AND account_id = ?`,
			us(p.CreatedAt), p.IdentityID, p.AccountID); err != nil {
			return nil, err
		}
		return []core.NewEvent{core.PhoneEvent(core.PhoneProvisioned, p)},
			db.recordEffect(ctx, tx, ports.ClaimOf(ctx), ports.EffectPhone, strconv.FormatInt(p.ID, 10))
	})
	return p.ID, err
}

func (db *DB) Phone(ctx context.Context, accountID string, id int64) (core.PhoneNumber, error) {
	var r phoneRow
	err := db.get(ctx, &r, db.q(`SELECT `+phoneColumns+` FROM phone_numbers WHERE id = ? AND account_id = ?`), id, accountID)
	return r.core(), notFound(err, "Phone number")
}

func (db *DB) PhoneByNumber(ctx context.Context, number string) (core.PhoneNumber, error) {
	var r phoneRow
	err := db.get(ctx, &r, db.q(`SELECT `+phoneColumns+` FROM phone_numbers WHERE number = ?`), number)
	return r.core(), notFound(err, "Phone number")
}

func (db *DB) PhoneOfIdentity(ctx context.Context, accountID, identityID string) (core.PhoneNumber, error) {
	var r phoneRow
	err := db.get(ctx, &r, db.q(`SELECT `+phoneColumns+` FROM phone_numbers WHERE identity_id = ? AND account_id = ?`), identityID, accountID)
	return r.core(), notFound(err, "Phone number")
}

func (db *DB) Phones(ctx context.Context, scope core.Scope, page ports.Page) ([]core.PhoneNumber, int, error) {
	if scope.Empty {
		return nil, 0, nil
	}
	var w where
	w.scope(scope)
	var rows []phoneRow
	total, err := db.selectPage(ctx, &rows, phoneColumns, `FROM phone_numbers`+w.sql(), `ORDER BY id`, w.args, page)
	return toCore(rows), total, err
}

type smsRow struct {
	ID          int64  `db:"id"`
	AccountID   string `db:"account_id"`
	IdentityID  string `db:"identity_id"`
	PhoneID     int64  `db:"phone_id"`
	PhoneNumber string `db:"phone_number"`
	FromNumber  string `db:"from_number"`
	ToNumber    string `db:"to_number"`
	Body        string `db:"body"`
	Direction   string `db:"direction"`
	IsRead      bool   `db:"is_read"`
	Status      string `db:"status"`
	Error       string `db:"error"`
	ProviderSID string `db:"provider_sid"`
	Media       string `db:"media"` // JSON: [{"url", "content_type"}]
	VerifyCode  string `db:"verification_code"`
	VerifyLink  string `db:"verification_link"`
	Blocked     bool   `db:"blocked"`
	CreatedAt   int64  `db:"created_at"`
}

func (r smsRow) core() core.SMSMessage {
	return core.SMSMessage{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID, PhoneID: r.PhoneID, PhoneNumber: r.PhoneNumber,
		FromNumber: r.FromNumber, ToNumber: r.ToNumber, Body: r.Body, Direction: core.Direction(r.Direction), IsRead: r.IsRead,
		Status: core.SMSStatus(r.Status), Error: r.Error, ProviderSID: r.ProviderSID, Media: smsMedia(r.Media),
		Verification: core.NewVerification(r.VerifyCode, r.VerifyLink), Blocked: r.Blocked, CreatedAt: fromUS(r.CreatedAt)}
}

// smsMedia reads the media column; what it wrote always reads back.
func smsMedia(text string) []core.SMSMedia {
	var media []core.SMSMedia
	if text != "" {
		_ = json.Unmarshal([]byte(text), &media)
	}
	return media
}

func smsMediaText(media []core.SMSMedia) string {
	if len(media) == 0 {
		return ""
	}
	b, _ := json.Marshal(media)
	return string(b)
}

const smsColumns = `id, account_id, identity_id, phone_id, phone_number, from_number, to_number, body, direction, is_read,
	status, error, provider_sid, media, verification_code, verification_link, blocked, created_at`

type conversationRow struct {
	PhoneID       int64  `db:"phone_id"`
	Counterpart   string `db:"counterpart"`
	AccountID     string `db:"account_id"`
	IdentityID    string `db:"identity_id"`
	PhoneNumber   string `db:"phone_number"`
	MessageCount  int    `db:"message_count"`
	UnreadCount   int    `db:"unread_count"`
	Preview       string `db:"preview"`
	LastMessageAt int64  `db:"last_message_at"`
}

func (r conversationRow) core() core.Conversation {
	return core.Conversation{ID: core.ConversationID(r.PhoneID, r.Counterpart), AccountID: r.AccountID, IdentityID: r.IdentityID,
		PhoneID: r.PhoneID, PhoneNumber: r.PhoneNumber, Counterpart: r.Counterpart, Summary: core.Summary{MessageCount: r.MessageCount,
			UnreadCount: r.UnreadCount, Preview: r.Preview, LastMessageAt: fromUS(r.LastMessageAt)}}
}

const conversationColumns = `phone_id, counterpart, account_id, identity_id, phone_number, message_count, unread_count,
	preview, last_message_at`

// SaveSMS inserts the message unless its provider id is known (ON CONFLICT
// DO NOTHING on the partial unique index), then folds it into its
// conversation with core.Conversation.Add, in the same transaction.
func (db *DB) SaveSMS(ctx context.Context, n ports.NewSMS) (core.SMSMessage, bool, error) {
	m := n.Message
	created := false
	err := db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		if err := db.lockAccount(ctx, tx, m.AccountID, "Account"); err != nil {
			return nil, err
		}
		var err error
		if m, created, err = db.saveSMS(ctx, tx, n); err != nil || !created {
			return nil, err
		}
		if err := db.recordEffect(ctx, tx, ports.ClaimOf(ctx), ports.EffectSMS, strconv.FormatInt(m.ID, 10)); err != nil {
			return nil, err
		}
		if e, ok := core.SMSEvent(m); ok {
			return []core.NewEvent{e}, nil
		}
		return nil, nil
	})
	return m, created, err
}

// saveSMS is SaveSMS's work in tx, after the account's lock.
func (db *DB) saveSMS(ctx context.Context, tx *sqlx.Tx, n ports.NewSMS) (core.SMSMessage, bool, error) {
	m := n.Message
	code, link := verificationColumns(m.Verification)
	err := tx.QueryRowxContext(ctx, db.q(`INSERT INTO sms_messages (account_id, identity_id, phone_id, phone_number, from_number,
		to_number, counterpart, body, direction, is_read, status, error, provider_sid, media, verification_code, verification_link,
		blocked, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING id`),
		m.AccountID, m.IdentityID, m.PhoneID, m.PhoneNumber, m.FromNumber, m.ToNumber, m.Counterpart(), m.Body,
		string(m.Direction), m.IsRead, string(m.Status), m.Error, m.ProviderSID, smsMediaText(m.Media), code, link,
		m.Blocked, us(m.CreatedAt)).Scan(&m.ID)
	if errors.Is(err, sql.ErrNoRows) {
		var r smsRow
		err := tx.GetContext(ctx, &r, db.q(`SELECT `+smsColumns+` FROM sms_messages WHERE provider_sid = ?`), m.ProviderSID)
		return r.core(), false, err
	}
	if err != nil {
		return m, false, err
	}
	c := core.StartConversation(m)
	var r conversationRow
	err = tx.GetContext(ctx, &r, db.q(`SELECT `+conversationColumns+` FROM sms_conversations
		WHERE phone_id = ? AND counterpart = ?`+db.forUpdate()), m.PhoneID, m.Counterpart())
	switch {
	case err == nil:
		c = r.core()
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO sms_conversations (phone_id, counterpart, account_id, identity_id,
			phone_number) VALUES (?, ?, ?, ?, ?)`), c.PhoneID, c.Counterpart, c.AccountID, c.IdentityID, c.PhoneNumber); err != nil {
			return m, false, err
		}
	default:
		return m, false, err
	}
	c.Add(m)
	if err := db.writeConversation(ctx, tx, c); err != nil {
		return m, true, err
	}
	if ct := n.Correspondent; ct != nil {
		if _, err := tx.ExecContext(ctx, db.q(insertContact+` ON CONFLICT DO NOTHING`), contactArgs(*ct)...); err != nil {
			return m, true, err
		}
	}
	return m, true, nil
}

func (db *DB) writeConversation(ctx context.Context, tx *sqlx.Tx, c core.Conversation) error {
	_, err := tx.ExecContext(ctx, db.q(`UPDATE sms_conversations SET message_count = ?, unread_count = ?, preview = ?, last_message_at = ?
		WHERE phone_id = ? AND counterpart = ?`), c.MessageCount, c.UnreadCount, c.Preview, us(c.LastMessageAt), c.PhoneID, c.Counterpart)
	return err
}

func (db *DB) SMS(ctx context.Context, accountID string, id int64) (core.SMSMessage, error) {
	var r smsRow
	err := db.get(ctx, &r, db.q(`SELECT `+smsColumns+` FROM sms_messages WHERE id = ? AND account_id = ?`), id, accountID)
	return r.core(), notFound(err, "Message")
}

func (db *DB) SMSList(ctx context.Context, f ports.SMSFilter) ([]core.SMSMessage, int, error) {
	if f.Scope.Empty {
		return nil, 0, nil
	}
	var w where
	w.scope(f.Scope)
	if f.Direction != "" {
		w.add("direction = ?", string(f.Direction))
	}
	if f.IsRead != nil {
		w.add("is_read = ?", *f.IsRead)
	}
	if f.PhoneID != 0 {
		w.add("phone_id = ?", f.PhoneID)
	}
	if f.Counterpart != "" {
		w.add("counterpart = ?", f.Counterpart)
	}
	if !f.IncludeBlocked {
		w.add("blocked = ?", false)
	}
	if f.Search != nil {
		return db.searchTexts(ctx, *f.Search, w, f.Page)
	}
	order := "ORDER BY created_at DESC, id DESC"
	if f.Oldest {
		order = "ORDER BY created_at, id"
	}
	var rows []smsRow
	total, err := db.selectPage(ctx, &rows, smsColumns, `FROM sms_messages`+w.sql(), order, w.args, f.Page)
	return toCore(rows), total, err
}

func (db *DB) SetSMSRead(ctx context.Context, accountID string, id int64, read bool) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		delta, err := db.flipRead(ctx, tx, "sms_messages", accountID, id, read)
		if err != nil || delta == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, db.q(`UPDATE sms_conversations SET unread_count = unread_count + ?
			WHERE (phone_id, counterpart) = (SELECT phone_id, counterpart FROM sms_messages WHERE id = ?)`), delta, id)
		return err
	})
}

// UpdateSMSStatus implements ports.SMSStore, writing sms.status when the
// message moves.
func (db *DB) UpdateSMSStatus(ctx context.Context, sid string, status core.SMSStatus, errText string) (bool, error) {
	found := false
	err := db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		m, err := db.lockSMS(ctx, tx, `provider_sid = ?`, sid)
		if isNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		found = true
		if !core.SMSStatusFollows(m.Status, status) {
			return nil, nil // a late report of an earlier state, or after a final one
		}
		if _, err = tx.ExecContext(ctx, db.q(`UPDATE sms_messages SET status = ?, error = ? WHERE id = ?`), string(status), errText, m.ID); err != nil {
			return nil, err
		}
		m.Status, m.Error = status, errText
		return []core.NewEvent{core.SMSReportEvent(m)}, nil
	})
	return found, err
}

// lockSMS reads the one message the condition names, under its account's
// lock (taken first, as every writer of events takes it) and its own.
func (db *DB) lockSMS(ctx context.Context, tx *sqlx.Tx, cond string, arg any) (core.SMSMessage, error) {
	var accountID string
	if err := tx.GetContext(ctx, &accountID, db.q(`SELECT account_id FROM sms_messages WHERE `+cond), arg); err != nil {
		return core.SMSMessage{}, notFound(err, "Message")
	}
	if err := db.lockAccount(ctx, tx, accountID, "Message"); err != nil {
		return core.SMSMessage{}, err
	}
	var r smsRow
	err := tx.GetContext(ctx, &r, db.q(`SELECT `+smsColumns+` FROM sms_messages WHERE `+cond+db.forUpdate()), arg)
	return r.core(), notFound(err, "Message")
}

// SetSMSProvider implements ports.SMSStore, writing core.SMSProviderEvent.
func (db *DB) SetSMSProvider(ctx context.Context, id int64, sid string, status core.SMSStatus) error {
	return db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		m, err := db.lockSMS(ctx, tx, `id = ?`, id)
		if err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, db.q(`UPDATE sms_messages SET provider_sid = ?, status = ? WHERE id = ?`), sid, string(status), id); err != nil {
			return nil, err
		}
		m.ProviderSID, m.Status = sid, status
		return []core.NewEvent{core.SMSProviderEvent(m)}, nil
	})
}

// DeleteSMS removes a message and counts its conversation again from what
// is left, under the conversation's lock (as SaveSMS takes it), reading the
// rest one row at a time.
func (db *DB) DeleteSMS(ctx context.Context, accountID string, id int64) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		var r smsRow
		if err := tx.GetContext(ctx, &r, db.q(`SELECT `+smsColumns+` FROM sms_messages WHERE id = ? AND account_id = ?`), id, accountID); err != nil {
			return notFound(err, "Message")
		}
		m := r.core()
		var locked conversationRow
		if err := tx.GetContext(ctx, &locked, db.q(`SELECT `+conversationColumns+` FROM sms_conversations
			WHERE phone_id = ? AND counterpart = ?`+db.forUpdate()), m.PhoneID, m.Counterpart()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM sms_messages WHERE id = ?`), id); err != nil {
			return err
		}
		c := core.StartConversation(m)
		rows, err := tx.QueryxContext(ctx, db.q(`SELECT `+smsColumns+` FROM sms_messages WHERE phone_id = ? AND counterpart = ?
			ORDER BY created_at, id`), m.PhoneID, m.Counterpart())
		if err != nil {
			return err
		}
		for rows.Next() {
			var o smsRow
			if err := rows.StructScan(&o); err != nil {
				rows.Close()
				return err
			}
			c.Add(o.core())
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if c.MessageCount == 0 {
			_, err := tx.ExecContext(ctx, db.q(`DELETE FROM sms_conversations WHERE phone_id = ? AND counterpart = ?`), m.PhoneID, m.Counterpart())
			return err
		}
		return db.writeConversation(ctx, tx, c)
	})
}

func (db *DB) Conversations(ctx context.Context, f ports.ConversationFilter) ([]core.Conversation, int, error) {
	if f.Scope.Empty {
		return nil, 0, nil
	}
	var w where
	w.scope(f.Scope)
	if f.PhoneID != 0 {
		w.add("phone_id = ?", f.PhoneID)
	}
	w.hasUnread(f.HasUnread)
	w.add("message_count > ?", 0)
	var rows []conversationRow
	total, err := db.selectPage(ctx, &rows, conversationColumns, `FROM sms_conversations`+w.sql(),
		`ORDER BY last_message_at DESC, phone_id, counterpart`, w.args, f.Page)
	return toCore(rows), total, err
}

func (db *DB) Conversation(ctx context.Context, accountID string, phoneID int64, counterpart string) (core.Conversation, error) {
	var r conversationRow
	err := db.get(ctx, &r, db.q(`SELECT `+conversationColumns+` FROM sms_conversations
		WHERE phone_id = ? AND counterpart = ? AND account_id = ?`), phoneID, counterpart, accountID)
	return r.core(), notFound(err, "Conversation")
}

type voiceRow struct {
	IdentityID   string `db:"identity_id"`
	AccountID    string `db:"account_id"`
	ResponseURL  string `db:"response_url"`
	Method       string `db:"method"`
	Enabled      bool   `db:"enabled"`
	Mode         string `db:"mode"`
	StreamURL    string `db:"stream_url"`
	RecordCalls  bool   `db:"record_calls"`
	StreamSecret []byte `db:"stream_secret"`
	UpdatedAt    int64  `db:"updated_at"`
}

func (db *DB) VoiceAgent(ctx context.Context, accountID, identityID string) (core.VoiceAgent, error) {
	var r voiceRow
	err := db.get(ctx, &r, db.q(`SELECT identity_id, account_id, response_url, method, enabled, mode, stream_url, record_calls,
		stream_secret, updated_at FROM voice_agents WHERE identity_id = ? AND account_id = ?`), identityID, accountID)
	if err != nil {
		return core.VoiceAgent{}, notFound(err, "Voice agent")
	}
	return core.VoiceAgent{IdentityID: r.IdentityID, AccountID: r.AccountID, ResponseURL: r.ResponseURL, Method: r.Method,
		Enabled: r.Enabled, Mode: core.VoiceMode(r.Mode), StreamURL: r.StreamURL, RecordCalls: r.RecordCalls,
		SealedStreamSecret: r.StreamSecret, UpdatedAt: fromUS(r.UpdatedAt)}, nil
}

func (db *DB) SaveVoiceAgent(ctx context.Context, v core.VoiceAgent) error {
	_, err := db.w.ExecContext(ctx, db.q(`INSERT INTO voice_agents (identity_id, account_id, response_url, method, enabled, mode,
		stream_url, record_calls, stream_secret, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (identity_id) DO UPDATE SET response_url = excluded.response_url, method = excluded.method,
		enabled = excluded.enabled, mode = excluded.mode, stream_url = excluded.stream_url, record_calls = excluded.record_calls,
		stream_secret = excluded.stream_secret, updated_at = excluded.updated_at`),
		v.IdentityID, v.AccountID, v.ResponseURL, v.Method, v.Enabled, string(v.Mode), v.StreamURL, v.RecordCalls,
		v.SealedStreamSecret, us(v.UpdatedAt))
	return err
}
