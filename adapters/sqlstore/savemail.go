package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// threadColumnsIn are the columns a new thread is stored with: its ids,
// then its summary as threadSummary gives it (without the id it ends with).
var threadColumnsIn = []column{{"id", "text"}, {"account_id", "uuid"}, {"identity_id", "uuid"}, {"inbox_id", "bigint"},
	{"subject", "text"}, {"preview", "text"}, {"message_count", "bigint"}, {"unread_count", "bigint"},
	{"attachment_names", "text"}, {"participants", "text"}, {"last_message_at", "bigint"}}

// insertThreads is the pipeline's insert of the threads a batch starts;
// insertThreadSQL SQLite's of one.
var (
	insertThreads   = `INSERT INTO email_threads (` + columnNames(threadColumnsIn) + `) SELECT * FROM unnest(` + unnestArrays(threadColumnsIn) + `)`
	insertThreadSQL = `INSERT INTO email_threads (` + columnNames(threadColumnsIn) + `) VALUES (` + placeholders(len(threadColumnsIn)) + `)`
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
		queued[i] = queuedMail{NewMail: nm, claim: claim, source: db.storedSourceOf(nm.Raw), searchDocument: db.searchDocumentOf(nm)}
	}
	return db.mail.do(ctx, queued)
}

// Arriving implements ports.MailArrivals: on SQLite a commit waits, up to
// sqliteArrivalWait, for the deliveries on their way.
func (db *DB) Arriving() (done func()) { return db.mail.arrive() }

// queuedMail is a message of a SaveMail call with the idempotency claim the
// call's context carries: the group commit's transaction runs on a context
// of its own, and records each call's effect on that call's claim. Its
// source and search document are ready to store: making them is the
// caller's work, not the writer's.
type queuedMail struct {
	ports.NewMail
	claim          *ports.IdempotencyClaim
	source         storedSource
	searchDocument string // PostgreSQL's (searchDocumentOf)
}

// storeMail stores mails in one transaction, with the events they make:
// on PostgreSQL pipelined (pipeline.go), a few round trips for the whole
// batch; on SQLite, where a statement costs no round trip, one at a time.
func (db *DB) storeMail(ctx context.Context, mails []queuedMail) (out []core.EmailMessage, err error) {
	if db.dialect == Postgres {
		out, err = db.storeMailPipelined(ctx, mails)
	} else {
		err = db.preparedTx(ctx, func(tx *preparedTx) error {
			out, err = db.saveMail(ctx, tx, mails)
			return err
		})
	}
	if err == nil {
		db.eventsCommitted()
	}
	return out, err
}

// mailTx is the state of one transaction that stores mail.
type mailTx struct {
	db  *DB
	ctx context.Context
	// w takes the writes: at once on SQLite, queued for one round trip on
	// PostgreSQL.
	w txer
	// stored answers what the database holds.
	stored storedMail
	// ids, on PostgreSQL, are the ids the messages get, drawn beforehand.
	ids     []int64
	clocks  map[string]time.Time    // per account: the last creation time given
	threads map[string]*core.Thread // touched threads, written at the end
	// startedThreads are the threads this transaction starts, inserted
	// with their summaries (PostgreSQL's pipeline).
	startedThreads map[string]bool
	// insertedSummaries are the summaries the threads this transaction
	// started were inserted with on SQLite, their first message's.
	insertedSummaries map[string][]any
	events            []core.NewEvent // what the stored messages tell, written at the end
	indexed           []indexedMail   // the stored messages' index rows, written last (writeIndex)
	// stores the transaction's own messages by inbox and Message-ID (the
	// newest), and those received by the same: the database may not hold
	// them yet.
	saved, received map[indexKey]core.EmailMessage
}

// storedMail is what filing mail asks of the database, inside the
// transaction that stores it: core's index of messages, and the threads
// they join, locked.
type storedMail interface {
	core.MessageIndex
	thread(id string) (core.Thread, error)
}

// indexKey finds a message in its inbox, by its Message-ID as stored (cleaned).
type indexKey struct {
	inbox     int64
	messageID string
}

func keyOf(inboxID int64, messageID string) indexKey {
	return indexKey{inboxID, core.CleanText(messageID)}
}

func newMailTx(ctx context.Context, db *DB, w txer, stored storedMail) *mailTx {
	return &mailTx{db: db, ctx: ctx, w: w, stored: stored, clocks: map[string]time.Time{}, threads: map[string]*core.Thread{},
		startedThreads: map[string]bool{}, insertedSummaries: map[string][]any{}, saved: map[indexKey]core.EmailMessage{}, received: map[indexKey]core.EmailMessage{}}
}

// accountsOf lists the accounts of mails in the order they are locked,
// the same for every writer, so that writers (other instances on
// PostgreSQL) queue on them instead of deadlocking on threads.
func accountsOf(mails []queuedMail) []string {
	var accounts []string
	for _, nm := range mails {
		if !slices.Contains(accounts, nm.Message.AccountID) {
			accounts = append(accounts, nm.Message.AccountID)
		}
	}
	slices.Sort(accounts)
	return accounts
}

// saveMail stores mails in tx (SQLite), account rows locked first.
func (db *DB) saveMail(ctx context.Context, tx *preparedTx, mails []queuedMail) ([]core.EmailMessage, error) {
	mt := newMailTx(ctx, db, tx, &probes{db: db, ctx: ctx, tx: tx, absent: map[indexKey]bool{}})
	for _, a := range accountsOf(mails) {
		var clock int64
		if err := tx.GetContext(ctx, &clock, db.q(`SELECT mail_clock FROM accounts WHERE id = ?`+db.forUpdate()), a); err != nil {
			return nil, notFound(err, "Account")
		}
		mt.clocks[a] = fromUS(clock)
	}
	out, err := mt.saveAll(mails)
	if err != nil {
		return nil, err
	}
	for a, clock := range mt.clocks {
		if _, err := tx.ExecContext(ctx, db.q(`UPDATE accounts SET mail_clock = ? WHERE id = ?`), us(clock), a); err != nil {
			return nil, err
		}
	}
	if err := mt.writeThreads(); err != nil {
		return nil, err
	}
	if err := db.writeEvents(ctx, tx, mt.events); err != nil {
		return nil, err
	}
	return out, mt.writeIndex()
}

// saveAll stores each of mails, in order.
func (mt *mailTx) saveAll(mails []queuedMail) ([]core.EmailMessage, error) {
	out := make([]core.EmailMessage, 0, len(mails))
	for _, nm := range mails {
		m, err := mt.save(nm)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// writeThreads writes the summaries of the threads the messages joined.
func (mt *mailTx) writeThreads() error {
	for _, t := range mt.threads {
		if mt.startedThreads[t.ID] {
			summary := threadSummary(*t)
			mt.w.(*pipeline).rows(insertThreads).add(append([]any{t.ID, t.AccountID, t.IdentityID, t.InboxID}, summary[:len(summary)-1]...)...)
			continue
		}
		summary := threadSummary(*t)
		if inserted, ok := mt.insertedSummaries[t.ID]; ok && slices.Equal(inserted, summary) {
			continue // no other message of the batch joined it
		}
		if _, err := mt.w.ExecContext(mt.ctx, mt.db.q(updateThread), summary...); err != nil {
			return err
		}
	}
	return nil
}

// writeIndex writes the full-text index rows of the stored messages, after
// every other write of the transaction. SQLite's FTS5 keeps the rows it is
// given in memory until the commit, but writes them out as a segment of
// its own whenever a later statement opens a savepoint (any statement
// that fires a trigger, as inserting a message does): indexed one by one
// beside their messages, a batch made a segment per message, and the
// merges of those segments (a profile of ingest put them at 12% of the
// server's CPU). Written last, a batch makes one segment.
func (mt *mailTx) writeIndex() error {
	for _, im := range mt.indexed {
		if err := mt.db.indexMessage(mt.ctx, mt.w, im); err != nil {
			return err
		}
	}
	return nil
}

// indexedMail is what a stored message's index row is made of.
type indexedMail struct {
	message    core.EmailMessage
	searchText string
	document   string // PostgreSQL's
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
		if err := db.execOneOn(ctx, mt.w, "Draft", `DELETE FROM email_drafts WHERE id = ? AND account_id = ?`, d.ID, d.AccountID); err != nil {
			return m, err
		}
	}
	m.CreatedAt, m.ThreadID = f.CreatedAt, f.ThreadID
	mt.clocks[m.AccountID] = m.CreatedAt
	// The attachments as stored, which the thread's summary lists; each
	// gets the message's id once it has one.
	m.Attachments = nil
	for _, a := range nm.Attachments {
		m.Attachments = append(m.Attachments, a.Attachment)
	}
	thread, err := mt.thread(f, m)
	if err != nil {
		return m, err
	}
	if m.ID, err = mt.insertMessage(m, core.MessageStoredBytes(nm.Raw), nm.HTMLInRaw && db.parser != nil && m.HTML != ""); err != nil {
		return m, err
	}
	if p, ok := mt.w.(*pipeline); ok {
		p.sourceRows(`INSERT INTO email_sources (message_id, raw, compressed) SELECT * FROM unnest($1::bigint[], $2::bytea[], $3::boolean[])`).
			add(m.ID, nm.source.raw, nm.source.compressed)
	} else if _, err := mt.w.ExecContext(ctx, db.q(`INSERT INTO email_sources (message_id, raw, compressed) VALUES (?, ?, ?)`),
		m.ID, nm.source.raw, nm.source.compressed); err != nil {
		return m, err
	}
	if err := db.recordEffect(ctx, mt.w, nm.claim, ports.EffectMessage, strconv.FormatInt(m.ID, 10)); err != nil {
		return m, err
	}
	for i, a := range nm.Attachments {
		if err := db.insertAttachment(ctx, mt.w, a, m.ID, i); err != nil {
			return m, err
		}
		m.Attachments[i].MessageID = m.ID
	}
	thread.Add(m)
	mt.indexed = append(mt.indexed, indexedMail{m, nm.SearchText, nm.searchDocument})
	if c := nm.Correspondent; c != nil {
		if _, err := mt.w.ExecContext(ctx, db.q(insertContact+` ON CONFLICT DO NOTHING`), contactArgs(*c)...); err != nil {
			return m, err
		}
	}
	if e := nm.Outbox; e != nil {
		if _, err := mt.w.ExecContext(ctx, db.q(`INSERT INTO email_outbox (message_id, account_id, envelope_from, recipients,
			failures, attempts, next_attempt_at, give_up_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?)`),
			m.ID, m.AccountID, e.EnvelopeFrom, jsonList(e.Recipients).text(), jsonList(e.Failures).text(),
			us(e.NextAttempt), us(e.GiveUpAt)); err != nil {
			return m, err
		}
	}
	if e, ok := core.MailEvent(m); ok {
		mt.events = append(mt.events, e)
	}
	k := keyOf(m.InboxID, m.MessageID)
	mt.saved[k] = m
	if m.Direction == core.Incoming {
		mt.received[k] = m
	}
	return m, nil
}

// messageColumnsIn are the columns a new message is stored with, in the
// order insertMessage gives them, with their PostgreSQL types.
var messageColumnsIn = []column{{"account_id", "uuid"}, {"identity_id", "uuid"}, {"inbox_id", "bigint"}, {"thread_id", "text"},
	{"message_id", "text"}, {"in_reply_to", "text"}, {"refs", "text"}, {"from_email", "text"}, {"from_name", "text"},
	{"to_addrs", "text"}, {"cc_addrs", "text"}, {"bcc_addrs", "text"}, {"subject", "text"}, {"text_body", "text"},
	{"html_body", "text"}, {"html_in_source", "boolean"}, {"body_truncated", "boolean"}, {"direction", "text"},
	{"is_read", "boolean"}, {"delivery_status", "text"}, {"delivery_error", "text"}, {"auth_spf", "text"}, {"auth_dkim", "text"},
	{"auth_dmarc", "text"}, {"auth_verdict", "text"}, {"auth_policy", "text"}, {"auth_checked_by", "text"}, {"recipients", "text"},
	{"bounce_token", "text"}, {"verification_code", "text"}, {"verification_link", "text"}, {"source_hash", "text"},
	{"blocked", "boolean"}, {"spam", "text"}, {"is_spam", "boolean"}, {"created_at", "bigint"}, {"stored_bytes", "bigint"}}

// column is a column of a table and its PostgreSQL type.
type column struct{ name, pgType string }

// columnNames lists the names of cs.
func columnNames(cs []column) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// unnestArrays are the arrays, $1 and on, that a multi-row insert of cs
// unnests.
func unnestArrays(cs []column) string {
	arrays := make([]string, len(cs))
	for i, c := range cs {
		arrays[i] = "$" + strconv.Itoa(i+1) + "::" + c.pgType + "[]"
	}
	return strings.Join(arrays, ", ")
}

// insertMessages is the pipeline's insert of a batch's messages, with the
// ids drawn beforehand.
var insertMessages = `INSERT INTO email_messages (id, ` + columnNames(messageColumnsIn) + `) OVERRIDING SYSTEM VALUE
	SELECT * FROM unnest(` + unnestArrays(append([]column{{"id", "bigint"}}, messageColumnsIn...)) + `)`

// insertMessage stores m's row and returns its id: in PostgreSQL's
// pipeline the next of mt.ids, drawn beforehand, else the one it got.
// With htmlInSource the row keeps no HTML: its source has it
// (wholeMessages reads it back).
func (mt *mailTx) insertMessage(m core.EmailMessage, storedBytes int64, htmlInSource bool) (int64, error) {
	code, link := verificationColumns(m.Verification)
	spam, isSpam := spamColumns(m.Spam, m.IsSpam)
	html := m.HTML
	if htmlInSource {
		html = ""
	}
	args := append(append([]any{m.AccountID, m.IdentityID, m.InboxID, m.ThreadID, m.MessageID, m.InReplyTo, jsonList(m.References).text(),
		m.FromEmail, m.FromName, jsonList(m.To).text(), jsonList(m.Cc).text(), jsonList(m.Bcc).text(), m.Subject, m.Text, html, htmlInSource,
		m.Truncated, string(m.Direction), m.IsRead, string(m.DeliveryStatus), m.DeliveryError}, authColumns(m.Authentication)...),
		recipientsText(m.Recipients), nullToken(m.BounceToken), code, link, m.SourceHash, m.Blocked, spam, isSpam, us(m.CreatedAt), storedBytes)
	if p, ok := mt.w.(*pipeline); ok {
		id := mt.ids[0]
		mt.ids = mt.ids[1:]
		p.rows(insertMessages).add(append([]any{id}, args...)...)
		return id, nil
	}
	return mt.db.insertReturningID(mt.ctx, mt.w, insertMessageSQL, args...)
}

// insertMessageSQL is the insert of a message's row (SQLite), built
// once: the query is also its statement's key in the cache, which a query
// built anew for every message made a kilobyte to allocate and hash.
var insertMessageSQL = `INSERT INTO email_messages (` + columnNames(messageColumnsIn) + `) VALUES (` +
	placeholders(len(messageColumnsIn)) + `)`

// placeholders lists n of SQLite's "?".
func placeholders(n int) string { return strings.Repeat("?, ", n-1) + "?" }

// ThreadOf implements core.MessageIndex: the transaction's own messages
// are the newest, then what the database holds.
func (mt *mailTx) ThreadOf(inboxID int64, messageID string) (string, bool, error) {
	if m, ok := mt.saved[keyOf(inboxID, messageID)]; ok {
		return m.ThreadID, true, nil
	}
	return mt.stored.ThreadOf(inboxID, messageID)
}

// Received implements core.MessageIndex, as ThreadOf.
func (mt *mailTx) Received(inboxID int64, messageID string) (core.EmailMessage, bool, error) {
	if m, ok := mt.received[keyOf(inboxID, messageID)]; ok {
		return m, true, nil
	}
	return mt.stored.Received(inboxID, messageID)
}

// thread is the thread a filed message joins, locked: one this batch has
// touched, one the database holds, or a new one.
func (mt *mailTx) thread(f core.Filing, m core.EmailMessage) (*core.Thread, error) {
	if t, ok := mt.threads[f.ThreadID]; ok {
		return t, nil
	}
	t := core.StartThread(f.ThreadID, m)
	if _, ok := mt.w.(*pipeline); ok && f.NewThread {
		// Written once, with the summary it has at the end
		// (writeThreads), instead of an insert and an update.
		mt.startedThreads[t.ID] = true
	} else if f.NewThread {
		// Inserted before m (its messages' foreign key) with the summary
		// it has once m joins: a thread no other message of the batch
		// joins needs no update, which moved its entries in the three
		// indexes on last_message_at.
		first := t
		first.Add(m)
		summary := threadSummary(first)
		if _, err := mt.w.ExecContext(mt.ctx, mt.db.q(insertThreadSQL),
			append([]any{t.ID, t.AccountID, t.IdentityID, t.InboxID}, summary[:len(summary)-1]...)...); err != nil {
			return nil, err
		}
		mt.insertedSummaries[t.ID] = summary
	} else {
		var err error
		if t, err = mt.stored.thread(f.ThreadID); err != nil {
			return nil, err
		}
	}
	mt.threads[t.ID] = &t
	return &t, nil
}

// probes answer storedMail with indexed queries (SQLite).
//
// Their inbox is bound as +? rather than ?: for "column = ?" SQLite
// (3.54) lets the plan depend on whether the bound value is 0 or 1, and
// so prepares the statement again each time the value crosses that line,
// which inbox 1 and any other one, taking turns, did on every message
// (5% of ingest's CPU). The unary plus keeps the same plan (the index on
// inbox_id, message_id) without looking at the value.
type probes struct {
	db  *DB
	ctx context.Context
	tx  *preparedTx
	// absent are the Message-IDs no stored message of the inbox has (as
	// the probes bind them, cleaned): a received message is first asked
	// whether it came before (Received), then which thread its own
	// Message-ID is in (ThreadOf), and nearly always it is new. The
	// transaction's own messages are the mailTx's to answer, and no one
	// else writes while it runs.
	absent map[indexKey]bool
}

func (p *probes) ThreadOf(inboxID int64, messageID string) (string, bool, error) {
	if p.absent[keyOf(inboxID, messageID)] {
		return "", false, nil
	}
	var threadID string
	err := p.tx.GetContext(p.ctx, &threadID, p.db.q(`SELECT thread_id FROM email_messages WHERE inbox_id = +? AND message_id = ?
		ORDER BY id DESC LIMIT 1`), inboxID, messageID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return threadID, err == nil, err
}

// Received is asked about every message received over SMTP, which is
// nearly always new: the newest message under the Message-ID is looked up
// first, and only one found is read whole (a row of every column, even
// none, cost the driver its column names and sqlx its mapping).
func (p *probes) Received(inboxID int64, messageID string) (core.EmailMessage, bool, error) {
	var newest struct {
		ID       int64 `db:"id"`
		Incoming bool  `db:"incoming"`
	}
	err := p.tx.GetContext(p.ctx, &newest, p.db.q(`SELECT id, direction = 'incoming' AS incoming FROM email_messages
		WHERE inbox_id = +? AND message_id = ? ORDER BY id DESC LIMIT 1`), inboxID, messageID)
	if errors.Is(err, sql.ErrNoRows) {
		p.absent[keyOf(inboxID, messageID)] = true
		return core.EmailMessage{}, false, nil
	}
	if err != nil {
		return core.EmailMessage{}, false, err
	}
	id := newest.ID
	if !newest.Incoming { // one we sent under the same Message-ID: the newest received, if any
		err := p.tx.GetContext(p.ctx, &id, p.db.q(`SELECT id FROM email_messages
			WHERE inbox_id = +? AND message_id = ? AND direction = 'incoming' ORDER BY id DESC LIMIT 1`), inboxID, messageID)
		if errors.Is(err, sql.ErrNoRows) {
			return core.EmailMessage{}, false, nil
		}
		if err != nil {
			return core.EmailMessage{}, false, err
		}
	}
	var r messageRow
	if err := p.tx.GetContext(p.ctx, &r, p.db.q(`SELECT `+messageColumns+` FROM email_messages WHERE id = ?`), id); err != nil {
		return core.EmailMessage{}, false, err
	}
	msgs, err := p.db.wholeMessages(p.ctx, p.tx.SelectContext, []messageRow{r})
	if err != nil {
		return core.EmailMessage{}, false, err
	}
	return msgs[0], true, nil
}

func (p *probes) thread(id string) (core.Thread, error) {
	var r threadRow
	err := p.tx.GetContext(p.ctx, &r, p.db.q(`SELECT `+threadColumns+` FROM email_threads WHERE id = ?`+p.db.forUpdate()), id)
	return r.core(), err
}
