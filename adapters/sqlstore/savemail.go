package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// maxMailBatch bounds how many SaveMail calls share one transaction.
const maxMailBatch = 128

// SaveMail implements ports.MailStore: the call joins the group commit
// (groupcommit.go), which stores it with whatever else is queued through
// storeMail.
func (db *DB) SaveMail(ctx context.Context, mails []ports.NewMail) ([]core.EmailMessage, error) {
	claim := ports.ClaimOf(ctx)
	queued := make([]queuedMail, len(mails))
	for i, nm := range mails {
		queued[i] = queuedMail{NewMail: nm, claim: claim}
	}
	return db.mail.do(ctx, queued)
}

// queuedMail is a message of a SaveMail call with the idempotency claim the
// call's context carries: the group commit's transaction runs on a context
// of its own, and records each call's effect on that call's claim.
type queuedMail struct {
	ports.NewMail
	claim *ports.IdempotencyClaim
}

// storeMail stores mails in one transaction, with the events they make.
func (db *DB) storeMail(ctx context.Context, mails []queuedMail) (out []core.EmailMessage, err error) {
	err = db.preparedTx(ctx, func(tx *preparedTx) error {
		out, err = db.saveMail(ctx, tx, mails)
		return err
	})
	if err == nil {
		db.eventsCommitted()
	}
	return out, err
}

// mailTx is the state of one transaction that stores mail.
type mailTx struct {
	db      *DB
	ctx     context.Context
	tx      *preparedTx
	clocks  map[string]time.Time    // per account: the last creation time given
	threads map[string]*core.Thread // touched threads, written at the end
	events  []core.NewEvent         // what the stored messages tell, written at the end
}

// saveMail stores mails in tx. Account rows are locked first, in a fixed
// order, so that concurrent writers (other instances on PostgreSQL) queue
// on them instead of deadlocking on threads.
func (db *DB) saveMail(ctx context.Context, tx *preparedTx, mails []queuedMail) ([]core.EmailMessage, error) {
	mt := &mailTx{db: db, ctx: ctx, tx: tx, clocks: map[string]time.Time{}, threads: map[string]*core.Thread{}}
	var accounts []string
	for _, nm := range mails {
		if !slices.Contains(accounts, nm.Message.AccountID) {
			accounts = append(accounts, nm.Message.AccountID)
		}
	}
	slices.Sort(accounts)
	for _, a := range accounts {
		var clock int64
		if err := tx.GetContext(ctx, &clock, db.q(`SELECT mail_clock FROM accounts WHERE id = ?`+db.forUpdate()), a); err != nil {
			return nil, notFound(err, "Account")
		}
		mt.clocks[a] = fromUS(clock)
	}
	out := make([]core.EmailMessage, 0, len(mails))
	for _, nm := range mails {
		m, err := mt.save(nm)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	for a, clock := range mt.clocks {
		if _, err := tx.ExecContext(ctx, db.q(`UPDATE accounts SET mail_clock = ? WHERE id = ?`), us(clock), a); err != nil {
			return nil, err
		}
	}
	for _, t := range mt.threads {
		if _, err := tx.ExecContext(ctx, db.q(updateThread), threadSummary(*t)...); err != nil {
			return nil, err
		}
	}
	return out, db.writeEvents(ctx, tx, mt.events)
}

// save stores one message where core.FileMail puts it.
func (mt *mailTx) save(nm queuedMail) (core.EmailMessage, error) {
	db, ctx := mt.db, mt.ctx
	m := nm.Message
	f, err := core.FileMail(m, nm.Dedupe, nm.NewThreadID, mt.clocks[m.AccountID], mt)
	if err != nil {
		return m, err
	}
	if f.Duplicate != nil {
		return *f.Duplicate, nil
	}
	if d := nm.FromDraft; d != nil {
		if err := db.execOneOn(ctx, mt.tx, "Draft", `DELETE FROM email_drafts WHERE id = ? AND account_id = ?`, d.ID, d.AccountID); err != nil {
			return m, err
		}
	}
	m.CreatedAt, m.ThreadID = f.CreatedAt, f.ThreadID
	mt.clocks[m.AccountID] = m.CreatedAt
	thread, err := mt.thread(f, m)
	if err != nil {
		return m, err
	}
	code, link := verificationColumns(m.Verification)
	err = mt.tx.GetContext(ctx, &m.ID, db.q(`INSERT INTO email_messages (account_id, identity_id, inbox_id, thread_id, message_id,
		in_reply_to, refs, from_email, from_name, to_addrs, cc_addrs, bcc_addrs, subject, text_body, html_body, body_truncated,
		direction, is_read, delivery_status, delivery_error, auth_spf, auth_dkim, auth_dmarc, auth_verdict, auth_policy, recipients,
		bounce_token, verification_code, verification_link, source_hash, blocked, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`),
		append(append([]any{m.AccountID, m.IdentityID, m.InboxID, m.ThreadID, m.MessageID, m.InReplyTo, jsonList(m.References).text(),
			m.FromEmail, m.FromName, jsonList(m.To).text(), jsonList(m.Cc).text(), jsonList(m.Bcc).text(), m.Subject, m.Text, m.HTML, m.Truncated,
			string(m.Direction), m.IsRead, string(m.DeliveryStatus), m.DeliveryError}, authColumns(m.Authentication)...),
			recipientsText(m.Recipients), nullToken(m.BounceToken), code, link, m.SourceHash, m.Blocked, us(m.CreatedAt))...)
	if err != nil {
		return m, err
	}
	if _, err := mt.tx.ExecContext(ctx, db.q(`INSERT INTO email_sources (message_id, raw) VALUES (?, ?)`), m.ID, nm.Raw); err != nil {
		return m, err
	}
	if err := db.indexMessage(ctx, mt.tx, m, nm.SearchText); err != nil {
		return m, err
	}
	if err := db.recordEffect(ctx, mt.tx, nm.claim, ports.EffectMessage, strconv.FormatInt(m.ID, 10)); err != nil {
		return m, err
	}
	m.Attachments = nil
	for i, a := range nm.Attachments {
		if err := db.insertAttachment(ctx, mt.tx, a, m.ID, i); err != nil {
			return m, err
		}
		a.MessageID = m.ID
		m.Attachments = append(m.Attachments, a.Attachment)
	}
	thread.Add(m)
	if c := nm.Correspondent; c != nil {
		if _, err := mt.tx.ExecContext(ctx, db.q(insertContact+` ON CONFLICT DO NOTHING`), contactArgs(*c)...); err != nil {
			return m, err
		}
	}
	if e := nm.Outbox; e != nil {
		if _, err := mt.tx.ExecContext(ctx, db.q(`INSERT INTO email_outbox (message_id, account_id, envelope_from, recipients,
			failures, attempts, next_attempt_at, give_up_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?)`),
			m.ID, m.AccountID, e.EnvelopeFrom, jsonList(e.Recipients).text(), jsonList(e.Failures).text(),
			us(e.NextAttempt), us(e.GiveUpAt)); err != nil {
			return m, err
		}
	}
	if e, ok := core.MailEvent(m); ok {
		mt.events = append(mt.events, e)
	}
	return m, nil
}

// ThreadOf implements core.MessageIndex: one indexed probe.
func (mt *mailTx) ThreadOf(inboxID int64, messageID string) (string, bool, error) {
	var threadID string
	err := mt.tx.GetContext(mt.ctx, &threadID, mt.db.q(`SELECT thread_id FROM email_messages WHERE inbox_id = ? AND message_id = ?
		ORDER BY id DESC LIMIT 1`), inboxID, messageID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return threadID, err == nil, err
}

// Received implements core.MessageIndex.
func (mt *mailTx) Received(inboxID int64, messageID string) (core.EmailMessage, bool, error) {
	db, ctx := mt.db, mt.ctx
	var r messageRow
	err := mt.tx.GetContext(ctx, &r, db.q(`SELECT `+messageColumns+` FROM email_messages
		WHERE inbox_id = ? AND message_id = ? AND direction = 'incoming' ORDER BY id DESC LIMIT 1`), inboxID, messageID)
	if errors.Is(err, sql.ErrNoRows) {
		return core.EmailMessage{}, false, nil
	}
	if err != nil {
		return core.EmailMessage{}, false, err
	}
	msgs := []core.EmailMessage{r.core()}
	return msgs[0], true, db.attachAttachments(ctx, mt.tx.SelectContext, msgs)
}

// thread is the thread a filed message joins, locked: one this batch has
// touched, one read from the database, or a new one.
func (mt *mailTx) thread(f core.Filing, m core.EmailMessage) (*core.Thread, error) {
	db, ctx := mt.db, mt.ctx
	if t, ok := mt.threads[f.ThreadID]; ok {
		return t, nil
	}
	t := core.StartThread(f.ThreadID, m)
	if f.NewThread {
		if _, err := mt.tx.ExecContext(ctx, db.q(`INSERT INTO email_threads (id, account_id, identity_id, inbox_id) VALUES (?, ?, ?, ?)`),
			t.ID, t.AccountID, t.IdentityID, t.InboxID); err != nil {
			return nil, err
		}
	} else {
		var r threadRow
		if err := mt.tx.GetContext(ctx, &r, db.q(`SELECT `+threadColumns+` FROM email_threads WHERE id = ?`+db.forUpdate()), f.ThreadID); err != nil {
			return nil, err
		}
		t = r.core()
	}
	mt.threads[t.ID] = &t
	return &t, nil
}
