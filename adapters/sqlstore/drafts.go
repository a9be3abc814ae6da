package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type draftRow struct {
	ID               string         `db:"id"`
	AccountID        string         `db:"account_id"`
	IdentityID       string         `db:"identity_id"`
	InboxID          int64          `db:"inbox_id"`
	Kind             string         `db:"kind"`
	OriginalID       sql.NullInt64  `db:"original_id"`
	To               string         `db:"to_addrs"`
	Cc               string         `db:"cc_addrs"`
	Bcc              string         `db:"bcc_addrs"`
	Subject          sql.NullString `db:"subject"`
	Content          sql.NullString `db:"content"`
	HTML             string         `db:"html"`
	AttachmentIDs    string         `db:"attachment_ids"`
	SendAt           sql.NullInt64  `db:"send_at"`
	AwaitingApproval bool           `db:"awaiting_approval"`
	CreatedAt        int64          `db:"created_at"`
	UpdatedAt        int64          `db:"updated_at"`
}

func fromNullString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

func optNullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

func (r draftRow) core() core.Draft {
	return core.Draft{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID, InboxID: r.InboxID, Kind: core.DraftKind(r.Kind),
		OriginalID: r.OriginalID.Int64, To: parseList(r.To), Cc: parseList(r.Cc), Bcc: parseList(r.Bcc),
		Subject: fromNullString(r.Subject), Content: fromNullString(r.Content), HTML: r.HTML, AttachmentIDs: parseList(r.AttachmentIDs),
		SendAt: fromNullUS(r.SendAt), AwaitingApproval: r.AwaitingApproval, CreatedAt: fromUS(r.CreatedAt), UpdatedAt: fromUS(r.UpdatedAt)}
}

const (
	draftHead    = `id, account_id, identity_id, inbox_id, kind, original_id, to_addrs, cc_addrs, bcc_addrs, subject, `
	draftTail    = `, attachment_ids, send_at, awaiting_approval, created_at, updated_at`
	draftColumns = draftHead + `content, html` + draftTail
)

// draftSummaryColumns are draftColumns as a list reads them: the head of
// the text, for the preview (core.Draft.Summary), and no HTML.
var draftSummaryColumns = draftHead + fmt.Sprintf("substr(content, 1, %d) AS content, '' AS html", core.PreviewHead) + draftTail

func (db *DB) CreateDraft(ctx context.Context, d core.Draft) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO email_drafts (`+draftColumns+`, stored_bytes)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			d.ID, d.AccountID, d.IdentityID, d.InboxID, string(d.Kind), sql.NullInt64{Int64: d.OriginalID, Valid: d.OriginalID != 0},
			jsonList(d.To).text(), jsonList(d.Cc).text(), jsonList(d.Bcc).text(), optNullString(d.Subject), optNullString(d.Content),
			d.HTML, jsonList(d.AttachmentIDs).text(), nullUS(d.SendAt), d.AwaitingApproval, us(d.CreatedAt), us(d.UpdatedAt),
			core.DraftStoredBytes(d)); err != nil {
			return err
		}
		return db.recordEffect(ctx, tx, ports.ClaimOf(ctx), ports.EffectDraft, d.ID)
	})
}

func (db *DB) Draft(ctx context.Context, accountID, id string) (core.Draft, error) {
	var r draftRow
	err := db.get(ctx, &r, db.q(`SELECT `+draftColumns+` FROM email_drafts WHERE id = ? AND account_id = ?`), id, accountID)
	return r.core(), notFound(err, "Draft")
}

func (db *DB) Drafts(ctx context.Context, f ports.DraftFilter) ([]core.Draft, int, error) {
	if f.Scope.Empty {
		return nil, 0, nil
	}
	awaiting, anyApproval := false, f.AwaitingApproval == nil
	if !anyApproval {
		awaiting = *f.AwaitingApproval
	}
	var rows []draftRow
	total, err := db.selectPage(ctx, &rows, draftSummaryColumns,
		`FROM email_drafts WHERE account_id = ? AND (? = '' OR identity_id = ?) AND (? OR awaiting_approval = ?)`,
		`ORDER BY created_at, id`, []any{f.Scope.AccountID, f.Scope.IdentityID, nullString(f.Scope.IdentityID), anyApproval, awaiting}, f.Page)
	list := toCore(rows)
	for i := range list {
		list[i] = list[i].Summary()
	}
	return list, total, err
}

func (db *DB) UpdateDraft(ctx context.Context, d core.Draft) error {
	return db.execOne(ctx, "Draft", `UPDATE email_drafts SET to_addrs = ?, cc_addrs = ?, bcc_addrs = ?, subject = ?, content = ?,
		html = ?, stored_bytes = ?, attachment_ids = ?, send_at = ?, awaiting_approval = ?, updated_at = ? WHERE id = ? AND account_id = ?`,
		jsonList(d.To).text(), jsonList(d.Cc).text(), jsonList(d.Bcc).text(), optNullString(d.Subject), optNullString(d.Content),
		d.HTML, core.DraftStoredBytes(d), jsonList(d.AttachmentIDs).text(), nullUS(d.SendAt), d.AwaitingApproval, us(d.UpdatedAt), d.ID, d.AccountID)
}

func (db *DB) DeleteDraft(ctx context.Context, accountID, id string) error {
	return db.execOne(ctx, "Draft", `DELETE FROM email_drafts WHERE id = ? AND account_id = ?`, id, accountID)
}
