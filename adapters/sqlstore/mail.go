package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// jsonList stores a list of strings as a JSON array.
type jsonList []string

func (l jsonList) text() string {
	if len(l) == 0 {
		return "[]"
	}
	b, _ := json.Marshal([]string(l))
	return string(b)
}

func parseList(s string) []string {
	if s == "[]" { // most lists (cc, bcc, references): no decoding
		return []string{}
	}
	if l, ok := plainList(s); ok {
		return l
	}
	var l []string
	_ = json.Unmarshal([]byte(s), &l)
	return l
}

// plainList reads a list as json.Marshal writes one whose strings need no
// escapes (["a","b"], most addresses), without decoding JSON: a page of
// messages reads fifty lists of recipients. Anything else is not ok.
func plainList(s string) ([]string, bool) {
	needsDecoding := func(r rune) bool { return r == '\\' || r < ' ' || r == utf8.RuneError }
	if len(s) < 4 || s[:2] != `["` || s[len(s)-2:] != `"]` || strings.ContainsFunc(s, needsDecoding) {
		return nil, false
	}
	l := strings.Split(s[2:len(s)-2], `","`)
	for _, item := range l {
		if strings.Contains(item, `"`) {
			return nil, false
		}
	}
	return l, true
}

type messageRow struct {
	ID             int64          `db:"id"`
	AccountID      string         `db:"account_id"`
	IdentityID     string         `db:"identity_id"`
	InboxID        int64          `db:"inbox_id"`
	ThreadID       string         `db:"thread_id"`
	MessageID      string         `db:"message_id"`
	InReplyTo      string         `db:"in_reply_to"`
	Refs           string         `db:"refs"`
	FromEmail      string         `db:"from_email"`
	FromName       string         `db:"from_name"`
	To             string         `db:"to_addrs"`
	Cc             string         `db:"cc_addrs"`
	Bcc            string         `db:"bcc_addrs"`
	Subject        string         `db:"subject"`
	Text           string         `db:"text_body"`
	HTML           string         `db:"html_body"`
	HTMLInSource   bool           `db:"html_in_source"`
	Truncated      bool           `db:"body_truncated"`
	Direction      string         `db:"direction"`
	IsRead         bool           `db:"is_read"`
	DeliveryStatus string         `db:"delivery_status"`
	DeliveryError  string         `db:"delivery_error"`
	AuthSPF        string         `db:"auth_spf"`
	AuthDKIM       string         `db:"auth_dkim"`
	AuthDMARC      string         `db:"auth_dmarc"`
	AuthVerdict    string         `db:"auth_verdict"`
	AuthPolicy     string         `db:"auth_policy"`
	AuthCheckedBy  string         `db:"auth_checked_by"`
	Recipients     string         `db:"recipients"`
	BounceToken    sql.NullString `db:"bounce_token"`
	VerifyCode     string         `db:"verification_code"`
	VerifyLink     string         `db:"verification_link"`
	SourceHash     string         `db:"source_hash"`
	Blocked        bool           `db:"blocked"`
	Spam           sql.NullString `db:"spam"`
	IsSpam         sql.NullBool   `db:"is_spam"`
	CreatedAt      int64          `db:"created_at"`
}

func (r messageRow) core() core.EmailMessage {
	return core.EmailMessage{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID, InboxID: r.InboxID, ThreadID: r.ThreadID,
		Header: core.Header{MessageID: r.MessageID, InReplyTo: r.InReplyTo, References: parseList(r.Refs), FromEmail: r.FromEmail,
			FromName: r.FromName, To: parseList(r.To), Cc: parseList(r.Cc), Subject: r.Subject},
		Bcc: parseList(r.Bcc), Text: r.Text, HTML: r.HTML, Truncated: r.Truncated,
		Direction: core.Direction(r.Direction), IsRead: r.IsRead, DeliveryStatus: core.DeliveryStatus(r.DeliveryStatus),
		DeliveryError: r.DeliveryError, Recipients: parseRecipients(r.Recipients), BounceToken: r.BounceToken.String, SourceHash: r.SourceHash,
		Authentication: authOf(r.AuthSPF, r.AuthDKIM, r.AuthDMARC, r.AuthVerdict, r.AuthPolicy, r.AuthCheckedBy),
		Verification:   core.NewVerification(r.VerifyCode, r.VerifyLink), Blocked: r.Blocked, Spam: parseSpam(r.Spam), IsSpam: r.IsSpam.Bool,
		CreatedAt: fromUS(r.CreatedAt)}
}

// spamJSON is a stored spam verdict.
type spamJSON struct {
	Score   float64          `json:"score"`
	Action  string           `json:"action"`
	Symbols []spamSymbolJSON `json:"symbols"`
}

type spamSymbolJSON struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}

// spamColumns are what a message's spam verdict stores: NULL and NULL
// when no filter judged it.
func spamColumns(v *core.SpamVerdict, isSpam bool) (sql.NullString, sql.NullBool) {
	if v == nil {
		return sql.NullString{}, sql.NullBool{Bool: isSpam, Valid: isSpam}
	}
	j := spamJSON{Score: v.Score, Action: string(v.Action), Symbols: make([]spamSymbolJSON, len(v.Symbols))}
	for i, sym := range v.Symbols {
		j.Symbols[i] = spamSymbolJSON(sym)
	}
	b, _ := json.Marshal(j)
	return sql.NullString{String: string(b), Valid: true}, sql.NullBool{Bool: isSpam, Valid: true}
}

func parseSpam(s sql.NullString) *core.SpamVerdict {
	var j spamJSON
	if !s.Valid || json.Unmarshal([]byte(s.String), &j) != nil {
		return nil
	}
	v := &core.SpamVerdict{Score: j.Score, Action: core.SpamAction(j.Action), Symbols: make([]core.SpamSymbol, len(j.Symbols))}
	for i, sym := range j.Symbols {
		v.Symbols[i] = core.SpamSymbol(sym)
	}
	return v
}

// verificationColumns are what a message's verification stores: its code and link.
func verificationColumns(v *core.Verification) (code, link string) {
	if v == nil {
		return "", ""
	}
	return v.Code, v.Link
}

// authOf reads the stored results; no verdict means no checks ran.
func authOf(spf, dkim, dmarc, verdict, policy, checkedBy string) *core.Authentication {
	if verdict == "" {
		return nil
	}
	return &core.Authentication{SPF: core.AuthResult(spf), DKIM: core.AuthResult(dkim), DMARC: core.AuthResult(dmarc),
		Verdict: core.AuthResult(verdict), Policy: core.DMARCPolicy(policy), Checked: true, CheckedBy: checkedBy}
}

// authColumns are what a message's authentication stores: four results,
// the policy, and who checked.
func authColumns(a *core.Authentication) []any {
	if a == nil {
		return []any{"", "", "", "", "", ""}
	}
	return []any{string(a.SPF), string(a.DKIM), string(a.DMARC), string(a.Verdict), string(a.Policy), a.CheckedBy}
}

type recipientJSON struct {
	Email  string `json:"email"`
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// ProviderID is kept in the same JSON column: no migration needed.
	ProviderID string `json:"provider_id,omitempty"`
}

func parseRecipients(s string) []core.Recipient {
	if s == "[]" {
		return nil
	}
	var rows []recipientJSON
	_ = json.Unmarshal([]byte(s), &rows)
	if len(rows) == 0 {
		return nil
	}
	out := make([]core.Recipient, len(rows))
	for i, r := range rows {
		out[i] = core.Recipient{Email: r.Email, Status: core.RecipientStatus(r.Status), Error: r.Error, ProviderID: r.ProviderID}
	}
	return out
}

func recipientsText(rs []core.Recipient) string {
	rows := make([]recipientJSON, len(rs))
	for i, r := range rs {
		rows[i] = recipientJSON{Email: r.Email, Status: string(r.Status), Error: r.Error, ProviderID: r.ProviderID}
	}
	b, _ := json.Marshal(rows)
	return string(b)
}

// nullToken stores "" as NULL, so that the unique index ignores it.
func nullToken(t string) sql.NullString { return sql.NullString{String: t, Valid: t != ""} }

const messageColumns = `id, account_id, identity_id, inbox_id, thread_id, message_id, in_reply_to, refs, from_email, from_name,
	to_addrs, cc_addrs, bcc_addrs, subject, text_body, html_body, html_in_source, body_truncated, direction, is_read, delivery_status,
	delivery_error, auth_spf, auth_dkim, auth_dmarc, auth_verdict, auth_policy, auth_checked_by, recipients, bounce_token, verification_code,
	verification_link, source_hash, blocked, spam, is_spam, created_at`

// summaryColumns are messageColumns as a list reads them: the head of the
// text body, for the preview (core.EmailMessage.Summary), and no HTML.
var summaryColumns = strings.Replace(messageColumns, "text_body, html_body",
	fmt.Sprintf("substr(text_body, 1, %d) AS text_body, '' AS html_body", core.PreviewHead), 1)

type threadRow struct {
	ID              string `db:"id"`
	AccountID       string `db:"account_id"`
	IdentityID      string `db:"identity_id"`
	InboxID         int64  `db:"inbox_id"`
	Subject         string `db:"subject"`
	Preview         string `db:"preview"`
	MessageCount    int    `db:"message_count"`
	UnreadCount     int    `db:"unread_count"`
	AttachmentNames string `db:"attachment_names"`
	Participants    string `db:"participants"`
	LastMessageAt   int64  `db:"last_message_at"`
}

func (r threadRow) core() core.Thread {
	t := core.Thread{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID, InboxID: r.InboxID, Subject: r.Subject,
		Summary:         core.Summary{MessageCount: r.MessageCount, UnreadCount: r.UnreadCount, Preview: r.Preview},
		AttachmentNames: parseList(r.AttachmentNames), Participants: parseList(r.Participants)}
	if r.LastMessageAt != 0 {
		t.LastMessageAt = fromUS(r.LastMessageAt)
	}
	return t
}

const threadColumns = `id, account_id, identity_id, inbox_id, subject, preview, message_count, unread_count,
	attachment_names, participants, last_message_at`

type attachmentRow struct {
	ID          string        `db:"id"`
	AccountID   string        `db:"account_id"`
	IdentityID  string        `db:"identity_id"`
	MessageID   sql.NullInt64 `db:"message_id"`
	Filename    string        `db:"filename"`
	ContentType string        `db:"content_type"`
	Size        int64         `db:"size"`
	Inline      bool          `db:"inline"`
	ContentID   string        `db:"content_id"`
	CreatedAt   int64         `db:"created_at"`
	Position    int           `db:"position"`
	InSource    bool          `db:"in_source"`
	Content     []byte        `db:"content"`
}

func (r attachmentRow) core() ports.AttachmentContent {
	return ports.AttachmentContent{Attachment: core.Attachment{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID,
		MessageID: r.MessageID.Int64, Filename: r.Filename, ContentType: r.ContentType, Size: r.Size, Inline: r.Inline,
		ContentID: r.ContentID, CreatedAt: fromUS(r.CreatedAt)}, Content: r.Content, InSource: r.InSource, Position: r.Position}
}

const attachmentMeta = "id, account_id, identity_id, message_id, filename, content_type, size, inline, content_id, created_at, position, in_source"

func (db *DB) Message(ctx context.Context, accountID string, id int64) (core.EmailMessage, error) {
	var r messageRow
	if err := db.get(ctx, &r, db.q(`SELECT `+messageColumns+` FROM email_messages WHERE id = ? AND account_id = ?`), id, accountID); err != nil {
		return core.EmailMessage{}, notFound(err, "Message")
	}
	msgs, err := db.wholeMessages(ctx, db.sel, []messageRow{r})
	if err != nil {
		return core.EmailMessage{}, err
	}
	return msgs[0], nil
}

func (db *DB) MessageByMessageID(ctx context.Context, inboxID int64, messageID string) (core.EmailMessage, error) {
	var r messageRow
	if err := db.get(ctx, &r, db.q(`SELECT `+messageColumns+` FROM email_messages
		WHERE inbox_id = ? AND message_id = ? ORDER BY id DESC LIMIT 1`), inboxID, messageID); err != nil {
		return core.EmailMessage{}, notFound(err, "Message")
	}
	msgs, err := db.wholeMessages(ctx, db.sel, []messageRow{r})
	if err != nil {
		return core.EmailMessage{}, err
	}
	return msgs[0], nil
}

// selector runs a rebound query for every row: db.sel, or a transaction's.
type selector func(ctx context.Context, dest any, query string, args ...any) error

// wholeMessages are rows read with messageColumns as one message is shown:
// with their attachments, and the HTML of those that keep it in their
// source read back from it.
func (db *DB) wholeMessages(ctx context.Context, sel selector, rows []messageRow) ([]core.EmailMessage, error) {
	msgs := make([]core.EmailMessage, len(rows))
	var inSource []int64
	at := map[int64]int{}
	for i, r := range rows {
		msgs[i] = r.core()
		if r.HTMLInSource {
			inSource, at[r.ID] = append(inSource, r.ID), i
		}
	}
	if len(inSource) > 0 {
		if db.parser == nil {
			return nil, fmt.Errorf("sqlstore: message %d keeps its HTML in its source, and the store has no parser to read it", inSource[0])
		}
		query, args, err := sqlx.In(`SELECT message_id, raw, compressed FROM email_sources WHERE message_id IN (?)`, inSource)
		if err != nil {
			return nil, err
		}
		var sources []rawRow
		if err := sel(ctx, &sources, db.q(query), args...); err != nil {
			return nil, err
		}
		for _, s := range sources {
			raw, err := s.source()
			if err != nil {
				return nil, err
			}
			parsed, err := db.parser.Describe(raw) // the HTML alone is wanted
			if err != nil {
				return nil, fmt.Errorf("sqlstore: reading message %d's HTML from its source: %w", s.MessageID, err)
			}
			// As the row would have held it: bounded, and cleaned as every
			// stored text is (cleantext.go).
			msgs[at[s.MessageID]].HTML = core.CleanText(core.StoredBody(parsed.HTML))
		}
	}
	if err := db.attachLabels(ctx, sel, msgs); err != nil {
		return nil, err
	}
	return msgs, db.attachAttachments(ctx, sel, msgs)
}

// attachAttachments fills the attachment lists of msgs in one query.
func (db *DB) attachAttachments(ctx context.Context, sel selector, msgs []core.EmailMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	ids := make([]int64, len(msgs))
	at := make(map[int64]int, len(msgs))
	for i, m := range msgs {
		ids[i], at[m.ID] = m.ID, i
	}
	query, args, err := sqlx.In(`SELECT `+attachmentMeta+` FROM attachments WHERE message_id IN (?) ORDER BY message_id, position`, ids)
	if err != nil {
		return err
	}
	var rows []attachmentRow
	if err := sel(ctx, &rows, db.q(query), args...); err != nil {
		return err
	}
	for _, r := range rows {
		i := at[r.MessageID.Int64]
		msgs[i].Attachments = append(msgs[i].Attachments, r.core().Attachment)
	}
	return nil
}

// where collects the conditions of a filtered query.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) scope(s core.Scope) {
	w.add("account_id = ?", s.AccountID)
	if s.IdentityID != "" {
		w.add("identity_id = ?", s.IdentityID)
	}
}

// mailScope keeps the messages of scope s and, when inboxID is not 0, of
// that inbox, with one condition on one owner column: each of
// account_id, identity_id and inbox_id leads an index (with blocked and
// created_at after it) that then holds everything a plain page filters
// and orders on. That the identity and the inbox are the account's is
// checked once on their own rows instead of on every message's (a
// message's account is its identity's and its inbox's), which kept a
// page's count reading the table for each message it counted.
func (w *where) mailScope(s core.Scope, inboxID int64) {
	switch {
	case inboxID != 0 && s.IdentityID != "":
		w.add("inbox_id = (SELECT id FROM inboxes WHERE id = ? AND account_id = ? AND identity_id = ?)", inboxID, s.AccountID, s.IdentityID)
	case inboxID != 0:
		w.add("inbox_id = (SELECT id FROM inboxes WHERE id = ? AND account_id = ?)", inboxID, s.AccountID)
	case s.IdentityID != "":
		w.add("identity_id = (SELECT id FROM identities WHERE id = ? AND account_id = ?)", s.IdentityID, s.AccountID)
	default:
		w.add("account_id = ?", s.AccountID)
	}
}

func (w *where) sql() string { return " WHERE " + strings.Join(w.conds, " AND ") }

// hasUnread keeps summaries (threads, conversations) with or without unread
// messages; nil keeps all.
func (w *where) hasUnread(want *bool) {
	switch {
	case want == nil:
	case *want:
		w.add("unread_count > 0")
	default:
		w.add("unread_count = 0")
	}
}

func (db *DB) Messages(ctx context.Context, f ports.MessageFilter) ([]core.EmailMessage, int, error) {
	if f.Scope.Empty {
		return nil, 0, nil
	}
	var w where
	w.mailScope(f.Scope, f.InboxID)
	if f.ThreadID != "" {
		w.add("thread_id = ?", f.ThreadID)
	}
	if f.Direction != "" {
		w.add("direction = ?", string(f.Direction))
	}
	if f.FromEmail != "" {
		w.add("lower(from_email) = lower(?)", f.FromEmail)
	}
	if f.IsRead != nil {
		w.add("is_read = ?", *f.IsRead)
	}
	switch {
	case f.Authenticated == nil:
	case *f.Authenticated:
		w.add("auth_verdict = ?", string(core.AuthPass))
	default:
		w.add("auth_verdict <> ?", string(core.AuthPass))
	}
	if f.CreatedAfter != nil {
		w.add("created_at > ?", us(*f.CreatedAfter))
	}
	w.labelFilter("email_messages.id", "message_id", f.Scope.AccountID, f.Labels, f.ExcludeLabels)
	if !f.IncludeBlocked {
		w.add("email_messages.blocked = ?", false)
	}
	if !f.IncludeSpam {
		w.add(isSpamCondition(false, "email_messages."))
	}
	var search searchSQL
	order := "created_at, id"
	if f.Search != nil {
		search = db.messageSearch(*f.Search, &w)
	} else if f.NewestFirst {
		order = "created_at DESC, id DESC"
	}
	from := `FROM email_messages` + search.join + w.sql()
	args := append(search.joinArgs, w.args...)
	total, limit := 0, f.Limit
	if limit <= 0 { // every match: counted first
		var err error
		if total, err = db.count(ctx, from, args, f.CountUpTo, search.newest); err != nil || total <= f.Offset {
			return nil, total, err
		}
		limit = total
	}
	// Pointers: sqlx makes each row anyway, and copying rows of 35 columns
	// into a slice of them took another 28 KB a page.
	var rows []*searchRow
	var ids []int64
	var err error
	window := -1 // see rankedIDs
	read := 0    // rows read: one past the page tells that another follows (pageCount)
	if f.Search == nil {
		err = db.sel(ctx, &rows, db.q(messagePageQuery(from, order, f.Offset)), append(slices.Clip(args), limit+1, f.Offset)...)
		read, rows = len(rows), rows[:min(len(rows), limit)]
	} else if ids, window, err = rankedIDs[int64](ctx, db, mailIndex, search, from, args, f.NewestFirst, f.Offset, limit+1); err == nil {
		read, ids = len(ids), ids[:min(len(ids), limit)]
		rows, err = rowsInOrder(ctx, db, searchColumns, "email_messages", ids, func(r *searchRow) int64 { return r.ID })
	}
	if err == nil && f.Limit > 0 {
		if n, told := windowCount(window, f.CountUpTo); told {
			total = n
		} else {
			total, err = db.pageCount(ctx, from, args, f.CountUpTo, search.newest, f.Offset, f.Limit, read)
		}
	}
	if err != nil {
		return nil, 0, err
	}
	msgs := make([]core.EmailMessage, len(rows))
	for i, r := range rows {
		msgs[i] = r.core().Summary()
		if f.Search != nil {
			msgs[i].Highlights = core.Highlights(*f.Search, core.SearchMail, r.Subject, r.Head)
		}
	}
	if err := db.attachLabels(ctx, db.sel, msgs); err != nil {
		return nil, 0, err
	}
	return msgs, total, db.attachAttachments(ctx, db.sel, msgs)
}

// messagePageQuery is the statement of a page of messages from from (FROM
// and WHERE clauses, no search) in order, taking LIMIT and OFFSET. A page
// past the first finds its ids before it reads its rows: PostgreSQL works
// out the columns of every row an OFFSET skips, the preview's substr
// detoasting each body, which took 47 ms at offset 5,000 of 1,000,000 where
// the ids alone take 1 ms from the list's index (migration 00033).
func messagePageQuery(from, order string, offset int) string {
	if offset == 0 {
		return `SELECT ` + summaryColumns + ` ` + from + ` ORDER BY ` + order + ` LIMIT ? OFFSET ?`
	}
	return `SELECT ` + summaryColumns + ` FROM email_messages JOIN (SELECT id AS page_id ` + from + ` ORDER BY ` + order +
		` LIMIT ? OFFSET ?) AS page ON id = page_id ORDER BY ` + order
}

func (db *DB) RawMessage(ctx context.Context, accountID string, id int64) ([]byte, error) {
	r := rawRow{MessageID: id}
	err := db.get(ctx, &r, db.q(`SELECT s.raw, s.compressed FROM email_sources s JOIN email_messages m ON m.id = s.message_id
		WHERE s.message_id = ? AND m.account_id = ?`), id, accountID)
	if err != nil {
		return nil, notFound(err, "Message")
	}
	return r.source()
}

func (db *DB) SetRead(ctx context.Context, accountID string, id int64, read bool) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		delta, err := db.flipRead(ctx, tx, "email_messages", accountID, id, read)
		if err != nil || delta == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, db.q(`UPDATE email_threads SET unread_count = unread_count + ?
			WHERE id = (SELECT thread_id FROM email_messages WHERE id = ?)`), delta, id)
		return err
	})
}

// flipRead sets is_read on one message of table (email_messages or
// sms_messages) and returns how the unread count of its thread or
// conversation moves (core.UnreadDelta).
func (db *DB) flipRead(ctx context.Context, tx *sqlx.Tx, table, accountID string, id int64, read bool) (int, error) {
	var m struct {
		IsRead    bool   `db:"is_read"`
		Direction string `db:"direction"`
	}
	if err := tx.GetContext(ctx, &m, db.q(`SELECT is_read, direction FROM `+table+`
		WHERE id = ? AND account_id = ?`+db.forUpdate()), id, accountID); err != nil {
		return 0, notFound(err, "Message")
	}
	if m.IsRead == read {
		return 0, nil
	}
	if _, err := tx.ExecContext(ctx, db.q(`UPDATE `+table+` SET is_read = ? WHERE id = ?`), read, id); err != nil {
		return 0, err
	}
	return core.UnreadDelta(core.Direction(m.Direction), m.IsRead, read), nil
}

// forUpdate locks the selected rows until the transaction ends, where the
// dialect can (SQLite's writer lock already covers the whole database).
func (db *DB) forUpdate() string {
	if db.dialect == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

func (db *DB) Thread(ctx context.Context, accountID, id string) (core.Thread, error) {
	var r threadRow
	if err := db.get(ctx, &r, db.q(`SELECT `+threadColumns+` FROM email_threads WHERE id = ? AND account_id = ?`), id, accountID); err != nil {
		return core.Thread{}, notFound(err, "Thread")
	}
	t := []core.Thread{r.core()}
	return t[0], db.attachThreadLabels(ctx, t)
}

func (db *DB) Threads(ctx context.Context, f ports.ThreadFilter) ([]core.Thread, int, error) {
	if f.Scope.Empty {
		return nil, 0, nil
	}
	var w where
	w.scope(f.Scope)
	if f.InboxID != 0 {
		w.add("inbox_id = ?", f.InboxID)
	}
	w.hasUnread(f.HasUnread)
	w.labelFilter("id", "thread_id", f.Scope.AccountID, f.Labels, f.ExcludeLabels)
	var matches string
	var matchArgs []any
	if f.Search != nil {
		matches, matchArgs = db.newestMatches(*f.Search, f.Scope)
		w.add("id IN (SELECT thread_id FROM "+matches+")", matchArgs...)
	}
	if a := f.After; a != nil {
		// The first condition alone is a range the index can seek to; the
		// second then tells the threads of the cursor's own time apart.
		w.add("last_message_at <= ? AND (last_message_at < ? OR id > ?)", us(a.LastMessageAt), us(a.LastMessageAt), a.ID)
	}
	w.add("message_count > ?", 0)
	var rows []threadRow
	total, err := db.selectPage(ctx, &rows, threadColumns, `FROM email_threads`+w.sql(), `ORDER BY last_message_at DESC, id`, w.args, f.Page)
	threads := toCore(rows)
	if err == nil {
		err = db.attachThreadLabels(ctx, threads)
	}
	if err != nil || f.Search == nil || len(threads) == 0 {
		return threads, total, err
	}
	return threads, total, db.threadHighlights(ctx, *f.Search, matches, matchArgs, threads)
}

// threadSearchWindow is how many matching messages, the newest, a search
// of the thread list looks through on SQLite: finding every match's thread
// costs as much as the word is common (2 s for a word in 100,000 messages),
// these stay near 20 ms. PostgreSQL's planner finds the threads itself,
// from the GIN index or by checking the newest threads one by one, and a
// LIMIT in the subquery would only hide that choice from it (1.4 s with
// it, 0.1 s without, for the same word).
const threadSearchWindow = 10_000

// newestMatches is a subquery (with its arguments) of the id and thread_id
// of the messages in scope that q matches: on SQLite the newest
// threadSearchWindow of them.
func (db *DB) newestMatches(q core.SearchQuery, scope core.Scope) (string, []any) {
	var m where
	m.scope(scope)
	s := db.messageSearch(q, &m)
	bound := ""
	if db.dialect == SQLite {
		bound = fmt.Sprintf(" ORDER BY %s LIMIT %d", s.newest, threadSearchWindow)
	}
	return `(SELECT email_messages.id, email_messages.thread_id FROM email_messages` + s.join + m.sql() + bound + `) AS matches`,
		append(slices.Clip(s.joinArgs), m.args...)
}

// threadHighlights gives each of threads the highlights of its newest
// message among the matches (newestMatches), found in one query.
func (db *DB) threadHighlights(ctx context.Context, q core.SearchQuery, matches string, args []any, threads []core.Thread) error {
	at := make(map[string]int, len(threads))
	ids := make([]any, len(threads))
	for i, t := range threads {
		at[t.ID], ids[i] = i, t.ID
	}
	var rows []searchRow
	if err := db.sel(ctx, &rows, db.q(`SELECT `+searchColumns+` FROM email_messages WHERE id IN (SELECT MAX(id) FROM `+matches+`
		WHERE thread_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`) GROUP BY thread_id)`), append(slices.Clip(args), ids...)...); err != nil {
		return err
	}
	for _, r := range rows {
		threads[at[r.ThreadID]].Highlights = core.Highlights(q, core.SearchMail, r.Subject, r.Head)
	}
	return nil
}

// insertAttachment stores an attachment; one whose bytes stay in its
// message's source is stored without them.
func (db *DB) insertAttachment(ctx context.Context, tx sqlx.ExecerContext, a ports.AttachmentContent, messageID int64, position int) error {
	msg := sql.NullInt64{Int64: messageID, Valid: messageID != 0}
	content := a.Content
	if a.InSource {
		content = []byte{}
	}
	_, err := tx.ExecContext(ctx, db.q(`INSERT INTO attachments (id, account_id, identity_id, message_id, position, filename,
		content_type, size, inline, content_id, content, created_at, in_source, stored_bytes) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
		a.ID, a.AccountID, a.IdentityID, msg, position, a.Filename, a.ContentType, a.Size, a.Inline, a.ContentID, content, us(a.CreatedAt), a.InSource,
		core.AttachmentStoredBytes(a.Content, a.InSource))
	return err
}

func (db *DB) SaveUpload(ctx context.Context, a ports.AttachmentContent) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		if err := db.insertAttachment(ctx, tx, a, 0, 0); err != nil {
			return err
		}
		return db.recordEffect(ctx, tx, ports.ClaimOf(ctx), ports.EffectAttachment, a.ID)
	})
}

func (db *DB) Attachment(ctx context.Context, accountID, id string) (ports.AttachmentContent, error) {
	var r attachmentRow
	err := db.get(ctx, &r, db.q(`SELECT `+attachmentMeta+`, content FROM attachments WHERE id = ? AND account_id = ?`), id, accountID)
	return r.core(), notFound(err, "Attachment")
}

type outboxRow struct {
	MessageID    int64  `db:"message_id"`
	AccountID    string `db:"account_id"`
	EnvelopeFrom string `db:"envelope_from"`
	Recipients   string `db:"recipients"`
	Failures     string `db:"failures"`
	Attempts     int    `db:"attempts"`
	NextAttempt  int64  `db:"next_attempt_at"`
	GiveUpAt     int64  `db:"give_up_at"`
}

func (r outboxRow) core() ports.OutboxEntry {
	return ports.OutboxEntry{MessageID: r.MessageID, AccountID: r.AccountID, EnvelopeFrom: r.EnvelopeFrom,
		Recipients: parseList(r.Recipients), Failures: parseList(r.Failures), Attempts: r.Attempts,
		NextAttempt: fromUS(r.NextAttempt), GiveUpAt: fromUS(r.GiveUpAt)}
}

// ClaimOutbox leases due entries in one statement. On PostgreSQL, SKIP
// LOCKED lets several instances claim side by side without waiting on or
// taking each other's rows; SQLite has one writer at a time anyway.
func (db *DB) ClaimOutbox(ctx context.Context, now, leaseUntil time.Time, limit int) ([]ports.OutboxEntry, error) {
	skipLocked := ""
	if db.dialect == Postgres {
		skipLocked = " FOR UPDATE SKIP LOCKED"
	}
	var rows []outboxRow
	err := db.w.SelectContext(ctx, &rows, db.q(`UPDATE email_outbox SET claimed_until = ?, attempts = attempts + 1
		WHERE message_id IN (SELECT message_id FROM email_outbox WHERE next_attempt_at <= ? AND claimed_until <= ?
			ORDER BY next_attempt_at, message_id LIMIT ?`+skipLocked+`)
		RETURNING message_id, account_id, envelope_from, recipients, failures, attempts, next_attempt_at, give_up_at`),
		us(leaseUntil), us(now), us(now), limit)
	return toCore(rows), err
}

func (db *DB) NextOutboxAttempt(ctx context.Context) (time.Time, bool, error) {
	var next sql.NullInt64
	err := db.get(ctx, &next, db.q(`SELECT MIN(CASE WHEN claimed_until > next_attempt_at THEN claimed_until ELSE next_attempt_at END)
		FROM email_outbox`))
	if err != nil || !next.Valid {
		return time.Time{}, false, err
	}
	return fromUS(next.Int64), true, nil
}

func (db *DB) RetryOutbox(ctx context.Context, e ports.OutboxEntry, lastError string) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, db.q(`UPDATE email_outbox SET recipients = ?, failures = ?, next_attempt_at = ?,
			claimed_until = 0, last_error = ? WHERE message_id = ?`),
			jsonList(e.Recipients).text(), jsonList(e.Failures).text(), us(e.NextAttempt), lastError, e.MessageID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound(sql.ErrNoRows, "Outbox entry")
		}
		_, err = tx.ExecContext(ctx, db.q(`UPDATE email_messages SET delivery_error = ? WHERE id = ?`), lastError, e.MessageID)
		return err
	})
}

// FinishOutbox implements ports.OutboxStore, writing the message's
// core.DeliveryEvent with it.
func (db *DB) FinishOutbox(ctx context.Context, messageID int64, status core.DeliveryStatus, deliveryError string, recipients []core.Recipient) error {
	return db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		var r messageRow
		if err := tx.GetContext(ctx, &r, db.q(`SELECT `+messageColumns+` FROM email_messages WHERE id = ?`), messageID); err != nil {
			return nil, notFound(err, "Message")
		}
		if err := db.lockAccount(ctx, tx, r.AccountID, "Message"); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM email_outbox WHERE message_id = ?`), messageID); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, db.q(`UPDATE email_messages SET delivery_status = ?, delivery_error = ?, recipients = ? WHERE id = ?`),
			string(status), deliveryError, recipientsText(recipients), messageID); err != nil {
			return nil, err
		}
		msgs := []core.EmailMessage{r.core()}
		msgs[0].DeliveryStatus, msgs[0].DeliveryError, msgs[0].Recipients = status, deliveryError, recipients
		if err := db.attachAttachments(ctx, tx.SelectContext, msgs); err != nil {
			return nil, err
		}
		if e, ok := core.DeliveryEvent(msgs[0]); ok {
			return []core.NewEvent{e}, nil
		}
		return nil, nil
	})
}

func (db *DB) SetRecipients(ctx context.Context, messageID int64, recipients []core.Recipient) error {
	return db.execOne(ctx, "Message", `UPDATE email_messages SET recipients = ? WHERE id = ?`, recipientsText(recipients), messageID)
}

func (db *DB) MessageByBounceToken(ctx context.Context, token string) (core.EmailMessage, error) {
	var r messageRow
	if err := db.get(ctx, &r, db.q(`SELECT `+messageColumns+` FROM email_messages WHERE bounce_token = ?`), token); err != nil {
		return core.EmailMessage{}, notFound(err, "Message")
	}
	return r.core(), nil
}

// SentMessageByMessageID implements ports.OutboxStore.
func (db *DB) SentMessageByMessageID(ctx context.Context, messageID string) (core.EmailMessage, error) {
	var r messageRow
	if err := db.get(ctx, &r, db.q(`SELECT `+messageColumns+` FROM email_messages WHERE message_id = ? AND direction = 'outgoing' ORDER BY id LIMIT 1`),
		messageID); err != nil {
		return core.EmailMessage{}, notFound(err, "Message")
	}
	return r.core(), nil
}

// ApplyReport implements ports.MailStore, writing the report's events
// (core.ReportEvents); the account is locked first, as every writer of
// events locks it.
func (db *DB) ApplyReport(ctx context.Context, messageID int64, report []core.DSNRecipient) (core.EmailMessage, []core.DSNRecipient, error) {
	var m core.EmailMessage
	var applied []core.DSNRecipient
	err := db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		var accountID string
		if err := tx.GetContext(ctx, &accountID, db.q(`SELECT account_id FROM email_messages WHERE id = ?`), messageID); err != nil {
			return nil, notFound(err, "Message")
		}
		if err := db.lockAccount(ctx, tx, accountID, "Message"); err != nil {
			return nil, err
		}
		var r messageRow
		if err := tx.GetContext(ctx, &r, db.q(`SELECT `+messageColumns+` FROM email_messages WHERE id = ?`+db.forUpdate()), messageID); err != nil {
			return nil, notFound(err, "Message")
		}
		m = r.core()
		m.Recipients, m.DeliveryStatus, applied = core.ApplyReport(m.Recipients, m.DeliveryStatus, report)
		if _, err := tx.ExecContext(ctx, db.q(`UPDATE email_messages SET recipients = ?, delivery_status = ? WHERE id = ?`),
			recipientsText(m.Recipients), string(m.DeliveryStatus), messageID); err != nil {
			return nil, err
		}
		if len(applied) == 0 {
			return nil, nil
		}
		msgs := []core.EmailMessage{m} // the event shows the message as the other email events do
		if err := db.attachAttachments(ctx, tx.SelectContext, msgs); err != nil {
			return nil, err
		}
		m = msgs[0]
		return core.ReportEvents(m, applied), nil
	})
	return m, applied, err
}

// updateThread writes a thread's summary; threadSummary gives its arguments.
const updateThread = `UPDATE email_threads SET subject = ?, preview = ?, message_count = ?, unread_count = ?,
	attachment_names = ?, participants = ?, last_message_at = ? WHERE id = ?`

func threadSummary(t core.Thread) []any {
	return []any{t.Subject, t.Preview, t.MessageCount, t.UnreadCount, jsonList(t.AttachmentNames).text(),
		jsonList(t.Participants).text(), us(t.LastMessageAt), t.ID}
}

// DeleteMessage implements ports.MailStore. The message's source,
// attachments and outbox entry go with it by foreign key.
func (db *DB) DeleteMessage(ctx context.Context, accountID string, id int64) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		if err := db.lockAccount(ctx, tx, accountID, "Message"); err != nil {
			return err
		}
		var threadID string
		if err := tx.GetContext(ctx, &threadID, db.q(`SELECT thread_id FROM email_messages WHERE id = ? AND account_id = ?`),
			id, accountID); err != nil {
			return notFound(err, "Message")
		}
		var r threadRow
		if err := tx.GetContext(ctx, &r, db.q(`SELECT `+threadColumns+` FROM email_threads WHERE id = ?`+db.forUpdate()), threadID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM email_messages WHERE id = ?`), id); err != nil {
			return err
		}
		t, err := db.recountThread(ctx, tx, r.core().Recount())
		if err != nil {
			return err
		}
		if t.MessageCount == 0 {
			_, err = tx.ExecContext(ctx, db.q(`DELETE FROM email_threads WHERE id = ?`), t.ID)
		} else {
			_, err = tx.ExecContext(ctx, db.q(updateThread), threadSummary(t)...)
		}
		return err
	})
}

// recountThread folds a thread's messages into t, oldest first, reading
// them one row at a time (a message with its attachments' names over as
// many rows), and the text of the latest only: memory stays bounded
// whatever the thread holds.
func (db *DB) recountThread(ctx context.Context, tx *sqlx.Tx, t core.Thread) (core.Thread, error) {
	var latest int64
	// The latest message the summary counts (core.Thread.Add) gives the preview.
	err := tx.GetContext(ctx, &latest, db.q(`SELECT id FROM email_messages WHERE thread_id = ? AND blocked = ? AND is_spam IS NOT TRUE
		ORDER BY created_at DESC, id DESC LIMIT 1`), t.ID, false)
	if errors.Is(err, sql.ErrNoRows) {
		return t, nil
	}
	if err != nil {
		return t, err
	}
	rows, err := tx.QueryxContext(ctx, db.q(`SELECT m.id, m.direction, m.is_read, m.blocked, m.is_spam, m.created_at, m.subject, m.from_email, m.to_addrs,
		m.cc_addrs, CASE WHEN m.id = ? THEN substr(m.text_body, 1, `+strconv.Itoa(core.PreviewHead)+`) ELSE '' END AS text_body, a.filename
		FROM email_messages m LEFT JOIN attachments a ON a.message_id = m.id
		WHERE m.thread_id = ? ORDER BY m.created_at, m.id, a.position`), latest, t.ID)
	if err != nil {
		return t, err
	}
	defer rows.Close()
	var m *core.EmailMessage
	for rows.Next() {
		var r struct {
			ID        int64          `db:"id"`
			Direction string         `db:"direction"`
			IsRead    bool           `db:"is_read"`
			Blocked   bool           `db:"blocked"`
			IsSpam    sql.NullBool   `db:"is_spam"`
			CreatedAt int64          `db:"created_at"`
			Subject   string         `db:"subject"`
			FromEmail string         `db:"from_email"`
			To        string         `db:"to_addrs"`
			Cc        string         `db:"cc_addrs"`
			Text      string         `db:"text_body"`
			Filename  sql.NullString `db:"filename"`
		}
		if err := rows.StructScan(&r); err != nil {
			return t, err
		}
		if m == nil || m.ID != r.ID {
			if m != nil {
				t.Add(*m)
			}
			m = &core.EmailMessage{ID: r.ID, Header: core.Header{Subject: r.Subject, FromEmail: r.FromEmail, To: parseList(r.To),
				Cc: parseList(r.Cc)}, Text: r.Text, Direction: core.Direction(r.Direction), IsRead: r.IsRead, Blocked: r.Blocked, IsSpam: r.IsSpam.Bool,
				CreatedAt: fromUS(r.CreatedAt)}
		}
		if r.Filename.Valid {
			m.Attachments = append(m.Attachments, core.Attachment{Filename: r.Filename.String})
		}
	}
	if m != nil {
		t.Add(*m)
	}
	return t, rows.Err()
}
