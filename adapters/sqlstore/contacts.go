package sqlstore

import (
	"context"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type contactRow struct {
	ID          string `db:"id"`
	AccountID   string `db:"account_id"`
	IdentityID  string `db:"identity_id"`
	Email       string `db:"email"`
	DisplayName string `db:"display_name"`
	Nickname    string `db:"nickname"`
	PhoneNumber string `db:"phone_number"`
	Source      string `db:"source"`
	CreatedAt   int64  `db:"created_at"`
	UpdatedAt   int64  `db:"updated_at"`
}

func (r contactRow) core() core.Contact {
	return core.Contact{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID, Email: r.Email, DisplayName: r.DisplayName,
		Nickname: r.Nickname, PhoneNumber: r.PhoneNumber, Source: core.ContactSource(r.Source),
		CreatedAt: fromUS(r.CreatedAt), UpdatedAt: fromUS(r.UpdatedAt)}
}

const contactColumns = "id, account_id, identity_id, email, display_name, nickname, phone_number, source, created_at, updated_at"

var contactConflicts = map[string]string{
	"email":        "This identity already has a contact with this email.",
	"phone_number": "This identity already has a contact with this phone number.",
}

const insertContact = `INSERT INTO contacts (` + contactColumns + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

func contactArgs(c core.Contact) []any {
	return []any{c.ID, c.AccountID, c.IdentityID, c.Email, c.DisplayName, c.Nickname, c.PhoneNumber, string(c.Source), us(c.CreatedAt), us(c.UpdatedAt)}
}

func (db *DB) CreateContact(ctx context.Context, c core.Contact) error {
	err := db.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, db.q(insertContact), contactArgs(c)...); err != nil {
			return err
		}
		return db.recordEffect(ctx, tx, ports.ClaimOf(ctx), ports.EffectContact, c.ID)
	})
	return conflictOr(err, contactConflicts)
}

func (db *DB) Contact(ctx context.Context, accountID, id string) (core.Contact, error) {
	var r contactRow
	err := db.get(ctx, &r, db.q(`SELECT `+contactColumns+` FROM contacts WHERE id = ? AND account_id = ?`), id, accountID)
	return r.core(), notFound(err, "Contact")
}

// likeContains is a LIKE pattern matching s anywhere, with LIKE's own
// wildcards in s escaped (the queries say ESCAPE '\').
func likeContains(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(s)) + "%"
}

func (db *DB) Contacts(ctx context.Context, f ports.ContactFilter) ([]core.Contact, int, error) {
	if f.Scope.Empty {
		return nil, 0, nil
	}
	if f.Search != nil {
		var w where
		w.scope(f.Scope)
		if f.Source != "" {
			w.add("source = ?", string(f.Source))
		}
		return db.searchContacts(ctx, *f.Search, w, f.Page)
	}
	pattern := ""
	if f.Query != "" {
		pattern = likeContains(f.Query)
	}
	order := "ORDER BY created_at, id"
	if f.NewestFirst {
		order = "ORDER BY created_at DESC, id DESC"
	}
	var rows []contactRow
	total, err := db.selectPage(ctx, &rows, contactColumns, `FROM contacts
		WHERE account_id = ? AND (? = '' OR identity_id = ?)
		AND (? = '' OR source = ?)
		AND (? = '' OR lower(email) = lower(?))
		AND (? = '' OR phone_number = ?)
		AND (? = '' OR lower(email) LIKE ? ESCAPE '\' OR lower(display_name) LIKE ? ESCAPE '\'
			OR lower(nickname) LIKE ? ESCAPE '\' OR phone_number LIKE ? ESCAPE '\')`, order,
		[]any{f.Scope.AccountID, f.Scope.IdentityID, nullString(f.Scope.IdentityID),
			string(f.Source), string(f.Source),
			f.Email, f.Email,
			f.PhoneNumber, f.PhoneNumber,
			pattern, pattern, pattern, pattern, pattern}, f.Page)
	return toCore(rows), total, err
}

func (db *DB) UpdateContact(ctx context.Context, c core.Contact) error {
	err := db.execOne(ctx, "Contact", `UPDATE contacts SET email = ?, display_name = ?, nickname = ?, phone_number = ?, updated_at = ?
		WHERE id = ? AND account_id = ?`,
		c.Email, c.DisplayName, c.Nickname, c.PhoneNumber, us(c.UpdatedAt), c.ID, c.AccountID)
	return conflictOr(err, contactConflicts)
}

func (db *DB) DeleteContact(ctx context.Context, accountID, id string) error {
	return db.execOne(ctx, "Contact", `DELETE FROM contacts WHERE id = ? AND account_id = ?`, id, accountID)
}

// RecordCorrespondent inserts unless a contact with the same email or
// number exists; ON CONFLICT DO NOTHING makes it safe under concurrent
// deliveries from the same new correspondent.
func (db *DB) RecordCorrespondent(ctx context.Context, c core.Contact) (bool, error) {
	res, err := db.w.ExecContext(ctx, db.q(insertContact+` ON CONFLICT DO NOTHING`), contactArgs(c)...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
