package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// Group commit. Every SaveMail call joins a queue; one writer takes
// everything queued, stores it in a single transaction and commits once,
// then answers each caller. With synchronous=FULL a commit costs an fsync,
// so under load many messages share one fsync instead of each paying for
// its own, and no acknowledged message is ever held only in memory.

var errClosed = errors.New("the store is closed")

// maxBatch bounds how many calls share one transaction.
const maxBatch = 128

type saveRequest struct {
	mails []ports.NewMail
	done  chan saveResult
}

type saveResult struct {
	msgs []core.EmailMessage
	err  error
}

// committer owns the queue and the goroutine that drains it.
type committer struct {
	once  sync.Once
	queue chan *saveRequest
	stop  chan struct{}
	wg    sync.WaitGroup
}

func (db *DB) startCommitter() {
	db.saver.once.Do(func() {
		db.saver.queue = make(chan *saveRequest, 4*maxBatch)
		db.saver.stop = make(chan struct{})
		db.saver.wg.Add(1)
		go db.runCommitter()
	})
}

// stopCommitter drains what is queued and stops the writer.
func (db *DB) stopCommitter() {
	if db.saver.stop != nil {
		close(db.saver.stop)
		db.saver.wg.Wait()
	}
}

// SaveMail implements ports.MailStore through the group commit.
func (db *DB) SaveMail(ctx context.Context, mails []ports.NewMail) ([]core.EmailMessage, error) {
	if len(mails) == 0 {
		return nil, nil
	}
	db.startCommitter()
	req := &saveRequest{mails: mails, done: make(chan saveResult, 1)}
	select {
	case db.saver.queue <- req:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-db.saver.stop:
		return nil, errClosed
	}
	// Once queued the request is committed or failed; the caller must hear
	// which even if it stopped waiting, or it could retry a stored message.
	r := <-req.done
	return r.msgs, r.err
}

func (db *DB) runCommitter() {
	defer db.saver.wg.Done()
	for {
		var first *saveRequest
		select {
		case first = <-db.saver.queue:
		case <-db.saver.stop:
			// Commit what was queued before the stop.
			for {
				select {
				case r := <-db.saver.queue:
					db.commit([]*saveRequest{r})
				default:
					return
				}
			}
		}
		batch := []*saveRequest{first}
	gather:
		for len(batch) < maxBatch {
			select {
			case r := <-db.saver.queue:
				batch = append(batch, r)
			default:
				break gather
			}
		}
		db.commit(batch)
	}
}

// commit stores a batch in one transaction. When it fails, each request is
// tried alone, so one bad message fails only its own caller.
func (db *DB) commit(batch []*saveRequest) {
	ctx := context.Background()
	var all []ports.NewMail
	for _, r := range batch {
		all = append(all, r.mails...)
	}
	var stored []core.EmailMessage
	var unprepared []string
	err := db.tx(ctx, func(tx *sqlx.Tx) (err error) {
		stored, unprepared, err = db.saveMail(ctx, tx, all)
		return err
	})
	for _, q := range unprepared {
		_, _ = db.writeStmt(ctx, q) // a failure here only costs the next batch a prepare
	}
	if err == nil {
		if db.onCommit != nil {
			db.onCommit(len(batch))
		}
		for _, r := range batch {
			r.done <- saveResult{msgs: stored[:len(r.mails)]}
			stored = stored[len(r.mails):]
		}
		return
	}
	if len(batch) == 1 {
		batch[0].done <- saveResult{err: err}
		return
	}
	for _, r := range batch {
		db.commit([]*saveRequest{r})
	}
}

// mailTx is the state of one SaveMail transaction.
type mailTx struct {
	db      *DB
	ctx     context.Context
	tx      *sqlx.Tx
	clocks  map[string]time.Time    // per account: the last creation time given
	threads map[string]*core.Thread // touched threads, written at the end
	stmts   map[string]*sqlx.Stmt
	// unprepared are queries this transaction had to prepare itself.
	unprepared []string
}

// stmt is query's statement for this transaction. On SQLite, parsing a
// statement costs about as much as running it, so statements are prepared
// once on the writing connection and bound to each transaction; one not
// prepared yet is prepared in the transaction and, once the connection is
// free again, for good (see commit). PostgreSQL's driver keeps its own cache.
func (mt *mailTx) stmt(query string) (*sqlx.Stmt, error) {
	if s, ok := mt.stmts[query]; ok {
		return s, nil
	}
	var s *sqlx.Stmt
	if prepared, ok := mt.db.writes.Load(query); ok {
		s = mt.tx.StmtxContext(mt.ctx, prepared.(*sqlx.Stmt))
	} else {
		var err error
		if s, err = mt.tx.PreparexContext(mt.ctx, query); err != nil {
			return nil, err
		}
		mt.unprepared = append(mt.unprepared, query)
	}
	mt.stmts[query] = s
	return s, nil
}

// ExecContext runs a rebound query in the transaction.
func (mt *mailTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if mt.db.dialect != SQLite {
		return mt.tx.ExecContext(ctx, query, args...)
	}
	s, err := mt.stmt(query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

// GetContext reads one row of a rebound query in the transaction.
func (mt *mailTx) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	if mt.db.dialect != SQLite {
		return mt.tx.GetContext(ctx, dest, query, args...)
	}
	s, err := mt.stmt(query)
	if err != nil {
		return err
	}
	return s.GetContext(ctx, dest, args...)
}

// saveMail stores mails in tx. Account rows are locked first, in a fixed
// order, so that concurrent writers (other instances on PostgreSQL) queue
// on them instead of deadlocking on threads.
func (db *DB) saveMail(ctx context.Context, tx *sqlx.Tx, mails []ports.NewMail) (out []core.EmailMessage, unprepared []string, err error) {
	mt := &mailTx{db: db, ctx: ctx, tx: tx, clocks: map[string]time.Time{}, threads: map[string]*core.Thread{}, stmts: map[string]*sqlx.Stmt{}}
	defer func() { unprepared = mt.unprepared }()
	var accounts []string
	for _, nm := range mails {
		if !slices.Contains(accounts, nm.Message.AccountID) {
			accounts = append(accounts, nm.Message.AccountID)
		}
	}
	slices.Sort(accounts)
	for _, a := range accounts {
		var clock int64
		if err := mt.GetContext(ctx, &clock, db.q(`SELECT mail_clock FROM accounts WHERE id = ?`+db.forUpdate()), a); err != nil {
			return nil, nil, notFound(err, "Account")
		}
		mt.clocks[a] = fromUS(clock)
	}
	out = make([]core.EmailMessage, 0, len(mails))
	for _, nm := range mails {
		m, err := mt.save(nm)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, m)
	}
	for a, clock := range mt.clocks {
		if _, err := mt.ExecContext(ctx, db.q(`UPDATE accounts SET mail_clock = ? WHERE id = ?`), us(clock), a); err != nil {
			return nil, nil, err
		}
	}
	for _, t := range mt.threads {
		if _, err := mt.ExecContext(ctx, db.q(`UPDATE email_threads SET subject = ?, preview = ?, message_count = ?,
			unread_count = ?, attachment_names = ?, participants = ?, last_message_at = ? WHERE id = ?`),
			t.Subject, t.Preview, t.MessageCount, t.UnreadCount, jsonList(t.AttachmentNames).text(),
			jsonList(t.Participants).text(), us(t.LastMessageAt), t.ID); err != nil {
			return nil, nil, err
		}
	}
	return out, nil, nil
}

func (mt *mailTx) save(nm ports.NewMail) (core.EmailMessage, error) {
	db, ctx := mt.db, mt.ctx
	m := nm.Message
	f, err := core.FileMail(m, nm.Dedupe, nm.NewThreadID, mt.clocks[m.AccountID], mt)
	if err != nil {
		return m, err
	}
	if f.Duplicate != nil {
		return *f.Duplicate, nil
	}
	m.CreatedAt, m.ThreadID = f.CreatedAt, f.ThreadID
	mt.clocks[m.AccountID] = m.CreatedAt
	thread, err := mt.thread(f, m)
	if err != nil {
		return m, err
	}
	err = mt.GetContext(ctx, &m.ID, db.q(`INSERT INTO email_messages (account_id, identity_id, inbox_id, thread_id, message_id,
		in_reply_to, refs, from_email, from_name, to_addrs, cc_addrs, bcc_addrs, subject, text_body, html_body, direction,
		is_read, delivery_status, delivery_error, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		RETURNING id`),
		m.AccountID, m.IdentityID, m.InboxID, m.ThreadID, m.MessageID, m.InReplyTo, jsonList(m.References).text(),
		m.FromEmail, m.FromName, jsonList(m.To).text(), jsonList(m.Cc).text(), jsonList(m.Bcc).text(), m.Subject, m.Text, m.HTML,
		string(m.Direction), m.IsRead, string(m.DeliveryStatus), m.DeliveryError, us(m.CreatedAt))
	if err != nil {
		return m, err
	}
	if _, err := mt.ExecContext(ctx, db.q(`INSERT INTO email_sources (message_id, raw) VALUES (?, ?)`), m.ID, nm.Raw); err != nil {
		return m, err
	}
	m.Attachments = nil
	for i, a := range nm.Attachments {
		if err := db.insertAttachment(ctx, mt, a, m.ID, i); err != nil {
			return m, err
		}
		a.MessageID = m.ID
		m.Attachments = append(m.Attachments, a.Attachment)
	}
	thread.Add(m)
	if c := nm.Correspondent; c != nil {
		if _, err := mt.ExecContext(ctx, db.q(insertContact+` ON CONFLICT DO NOTHING`), contactArgs(*c)...); err != nil {
			return m, err
		}
	}
	if e := nm.Outbox; e != nil {
		if _, err := mt.ExecContext(ctx, db.q(`INSERT INTO email_outbox (message_id, account_id, envelope_from, recipients,
			failures, attempts, next_attempt_at, give_up_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?)`),
			m.ID, m.AccountID, e.EnvelopeFrom, jsonList(e.Recipients).text(), jsonList(e.Failures).text(),
			us(e.NextAttempt), us(e.GiveUpAt)); err != nil {
			return m, err
		}
	}
	return m, nil
}

// ThreadOf implements core.MessageIndex: one indexed probe.
func (mt *mailTx) ThreadOf(inboxID int64, messageID string) (string, bool, error) {
	var threadID string
	err := mt.GetContext(mt.ctx, &threadID, mt.db.q(`SELECT thread_id FROM email_messages WHERE inbox_id = ? AND message_id = ?
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
		if _, err := mt.ExecContext(ctx, db.q(`INSERT INTO email_threads (id, account_id, identity_id, inbox_id) VALUES (?, ?, ?, ?)`),
			t.ID, t.AccountID, t.IdentityID, t.InboxID); err != nil {
			return nil, err
		}
	} else {
		var r threadRow
		if err := mt.GetContext(ctx, &r, db.q(`SELECT `+threadColumns+` FROM email_threads WHERE id = ?`+db.forUpdate()), f.ThreadID); err != nil {
			return nil, err
		}
		t = r.core()
	}
	mt.threads[t.ID] = &t
	return &t, nil
}
