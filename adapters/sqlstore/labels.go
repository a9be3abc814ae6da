package sqlstore

import (
	"context"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
)

// LabelMessage implements ports.MailStore: the account is locked first,
// as every writer of events locks it, then the message's labels are read
// and core decides.
func (db *DB) LabelMessage(ctx context.Context, accountID string, id int64, label string, add bool) (core.EmailMessage, error) {
	var m core.EmailMessage
	err := db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		if err := db.lockAccount(ctx, tx, accountID, "Message"); err != nil {
			return nil, err
		}
		var r messageRow
		if err := tx.GetContext(ctx, &r, db.q(`SELECT `+messageColumns+` FROM email_messages WHERE id = ? AND account_id = ?`),
			id, accountID); err != nil {
			return nil, notFound(err, "Message")
		}
		var labels []string
		if err := tx.SelectContext(ctx, &labels, db.q(`SELECT label FROM message_labels WHERE message_id = ? ORDER BY label`), id); err != nil {
			return nil, err
		}
		var changed bool
		var err error
		if add {
			if _, changed, err = core.AddLabel(labels, label); err == nil && changed {
				_, err = tx.ExecContext(ctx, db.q(`INSERT INTO message_labels (account_id, message_id, thread_id, label) VALUES (?, ?, ?, ?)`),
					accountID, id, r.ThreadID, label)
			}
		} else if _, changed = core.RemoveLabel(labels, label); changed {
			_, err = tx.ExecContext(ctx, db.q(`DELETE FROM message_labels WHERE message_id = ? AND label = ?`), id, label)
		}
		if err != nil {
			return nil, err
		}
		msgs, err := db.wholeMessages(ctx, tx.SelectContext, []messageRow{r})
		if err != nil {
			return nil, err
		}
		m = msgs[0]
		if !changed {
			return nil, nil
		}
		return []core.NewEvent{core.LabelEvent(m, label, add)}, nil
	})
	return m, err
}

// labelRow is one label of a message.
type labelRow struct {
	MessageID int64  `db:"message_id"`
	Label     string `db:"label"`
}

// attachLabels fills the labels of msgs in one query.
func (db *DB) attachLabels(ctx context.Context, sel selector, msgs []core.EmailMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	ids := make([]int64, len(msgs))
	at := make(map[int64]int, len(msgs))
	for i, m := range msgs {
		ids[i], at[m.ID] = m.ID, i
	}
	query, args, err := sqlx.In(`SELECT message_id, label FROM message_labels WHERE message_id IN (?) ORDER BY message_id, label`, ids)
	if err != nil {
		return err
	}
	var rows []labelRow
	if err := sel(ctx, &rows, db.q(query), args...); err != nil {
		return err
	}
	for _, r := range rows {
		i := at[r.MessageID]
		msgs[i].Labels = append(msgs[i].Labels, r.Label)
	}
	return nil
}

// attachThreadLabels fills the labels of threads (the union of their
// messages') in one query.
func (db *DB) attachThreadLabels(ctx context.Context, threads []core.Thread) error {
	if len(threads) == 0 {
		return nil
	}
	ids := make([]string, len(threads))
	at := make(map[string]int, len(threads))
	for i, t := range threads {
		ids[i], at[t.ID] = t.ID, i
	}
	query, args, err := sqlx.In(`SELECT DISTINCT thread_id, label FROM message_labels WHERE thread_id IN (?) ORDER BY thread_id, label`, ids)
	if err != nil {
		return err
	}
	var rows []struct {
		ThreadID string `db:"thread_id"`
		Label    string `db:"label"`
	}
	if err := db.sel(ctx, &rows, db.q(query), args...); err != nil {
		return err
	}
	for _, r := range rows {
		i := at[r.ThreadID]
		threads[i].Labels = append(threads[i].Labels, r.Label)
	}
	return nil
}

// labelFilter keeps the rows whose column (a message's id, or a thread's)
// is among those carrying every label of all and none of none, each
// condition answered by message_labels_label alone.
func (w *where) labelFilter(column, owner, accountID string, all, none []string) {
	for _, l := range all {
		w.add(column+" IN (SELECT "+owner+" FROM message_labels WHERE account_id = ? AND label = ?)", accountID, l)
	}
	if len(none) > 0 {
		args := []any{accountID}
		for _, l := range none {
			args = append(args, l)
		}
		w.add(column+" NOT IN (SELECT "+owner+" FROM message_labels WHERE account_id = ? AND label IN (?"+
			strings.Repeat(", ?", len(none)-1)+"))", args...)
	}
}
