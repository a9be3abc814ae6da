package sqlstore

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
)

// SetSpam implements ports.MailStore: the flag and the verification
// change, the thread is folded again (core.Thread.Recount; a thread left
// with no counted message stays, out of lists, for the message's return)
// and core.SpamMoveEvent is written, in one transaction.
func (db *DB) SetSpam(ctx context.Context, accountID string, id int64, spam bool, v *core.Verification) (core.EmailMessage, error) {
	var out core.EmailMessage
	err := db.tx(ctx, func(tx *sqlx.Tx) error {
		if err := db.lockAccount(ctx, tx, accountID, "Message"); err != nil {
			return err
		}
		var r messageRow
		if err := tx.GetContext(ctx, &r, db.q(`SELECT `+messageColumns+` FROM email_messages WHERE id = ? AND account_id = ?`),
			id, accountID); err != nil {
			return notFound(err, "Message")
		}
		wasSpam := r.IsSpam.Bool
		code, link := verificationColumns(v)
		r.IsSpam, r.VerifyCode, r.VerifyLink = sql.NullBool{Bool: spam, Valid: true}, code, link
		if _, err := tx.ExecContext(ctx, db.q(`UPDATE email_messages SET is_spam = ?, verification_code = ?, verification_link = ?
			WHERE id = ?`), r.IsSpam, code, link, id); err != nil {
			return err
		}
		var t threadRow
		if err := tx.GetContext(ctx, &t, db.q(`SELECT `+threadColumns+` FROM email_threads WHERE id = ?`+db.forUpdate()), r.ThreadID); err != nil {
			return err
		}
		thread, err := db.recountThread(ctx, tx, t.core().Recount())
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, db.q(updateThread), threadSummary(thread)...); err != nil {
			return err
		}
		msgs, err := db.wholeMessages(ctx, tx.SelectContext, []messageRow{r})
		if err != nil {
			return err
		}
		out = msgs[0]
		if e, ok := core.SpamMoveEvent(out, wasSpam); ok {
			return db.writeEvents(ctx, tx, []core.NewEvent{e})
		}
		return nil
	})
	return out, err
}
