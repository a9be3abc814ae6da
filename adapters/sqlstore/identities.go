package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type identityRow struct {
	ID        string         `db:"id"`
	AccountID string         `db:"account_id"`
	Name      string         `db:"name"`
	Inbox     sql.NullString `db:"inbox"`
	Phone     sql.NullString `db:"phone"`
	CreatedAt int64          `db:"created_at"`
	UpdatedAt int64          `db:"updated_at"`
}

func (r identityRow) core() core.Identity {
	return core.Identity{ID: r.ID, AccountID: r.AccountID, Name: r.Name, Inbox: r.Inbox.String, Phone: r.Phone.String,
		CreatedAt: fromUS(r.CreatedAt), UpdatedAt: fromUS(r.UpdatedAt)}
}

// identityColumns join an identity's first inbox address and its phone
// number to the identities i.
const identityColumns = `i.id, i.account_id, i.name, i.created_at, i.updated_at,
	(SELECT b.email FROM inboxes b WHERE b.identity_id = i.id ORDER BY b.id LIMIT 1) AS inbox,
	(SELECT p.number FROM phone_numbers p WHERE p.identity_id = i.id) AS phone`

var identityConflicts = map[string]string{
	"name":  "An identity with this name already exists.",
	"email": "This address is already taken.",
}

// CreateIdentity implements ports.IdentityStore, writing identity.created,
// inbox.created and, with a number, phone.provisioned.
func (db *DB) CreateIdentity(ctx context.Context, ident core.Identity, inbox core.Inbox, phone *core.PhoneNumber) (int64, error) {
	err := db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		if err := db.lockAccount(ctx, tx, ident.AccountID, "Account"); err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO identities (id, account_id, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`),
			ident.ID, ident.AccountID, ident.Name, us(ident.CreatedAt), us(ident.UpdatedAt)); err != nil {
			return nil, err
		}
		var err error
		if inbox.ID, err = db.insertInbox(ctx, tx, inbox); err != nil {
			return nil, err
		}
		ident.Inbox, ident.Phone = inbox.Email, ""
		var provisioned []core.NewEvent
		if phone != nil {
			p := *phone
			if p.ID, err = db.insertPhone(ctx, tx, p); err != nil {
				return nil, err
			}
			ident.Phone = p.Number
			provisioned = append(provisioned, core.PhoneEvent(core.PhoneProvisioned, p))
		}
		if err := db.recordEffect(ctx, tx, ports.ClaimOf(ctx), ports.EffectIdentity, ident.ID); err != nil {
			return nil, err
		}
		return append([]core.NewEvent{core.IdentityEvent(core.IdentityCreated, ident), core.InboxEvent(inbox)}, provisioned...), nil
	})
	return inbox.ID, conflictOr(err, identityConflicts)
}

func (db *DB) insertInbox(ctx context.Context, ext sqlx.ExtContext, in core.Inbox) (int64, error) {
	var id int64
	err := ext.QueryRowxContext(ctx, db.q(`INSERT INTO inboxes (uuid, account_id, identity_id, email, created_at)
		VALUES (?, ?, ?, ?, ?) RETURNING id`), in.UUID, in.AccountID, in.IdentityID, in.Email, us(in.CreatedAt)).Scan(&id)
	return id, err
}

func (db *DB) Identity(ctx context.Context, accountID, id string) (core.Identity, error) {
	var r identityRow
	err := db.get(ctx, &r, db.q(`SELECT `+identityColumns+` FROM identities i WHERE i.id = ? AND i.account_id = ?`), id, accountID)
	return r.core(), notFound(err, "Identity")
}

func (db *DB) Identities(ctx context.Context, scope core.Scope, page ports.Page) ([]core.Identity, int, error) {
	if scope.Empty {
		return nil, 0, nil
	}
	var rows []identityRow
	total, err := db.selectPage(ctx, &rows, identityColumns, `FROM identities i WHERE i.account_id = ? AND (? = '' OR i.id = ?)`,
		`ORDER BY i.created_at, i.id`, []any{scope.AccountID, scope.IdentityID, nullString(scope.IdentityID)}, page)
	return toCore(rows), total, err
}

func (db *DB) UpdateIdentity(ctx context.Context, ident core.Identity) error {
	err := db.execOne(ctx, "Identity", `UPDATE identities SET name = ?, updated_at = ? WHERE id = ? AND account_id = ?`,
		ident.Name, us(ident.UpdatedAt), ident.ID, ident.AccountID)
	return conflictOr(err, identityConflicts)
}

func (db *DB) IdentityNameTaken(ctx context.Context, accountID, name string) (bool, error) {
	var n int
	err := db.get(ctx, &n, db.q(`SELECT COUNT(*) FROM identities WHERE account_id = ? AND name = ?`), accountID, name)
	return n > 0, err
}

type inboxRow struct {
	ID         int64  `db:"id"`
	UUID       string `db:"uuid"`
	AccountID  string `db:"account_id"`
	IdentityID string `db:"identity_id"`
	Email      string `db:"email"`
	CreatedAt  int64  `db:"created_at"`
}

func (r inboxRow) core() core.Inbox {
	return core.Inbox{ID: r.ID, UUID: r.UUID, AccountID: r.AccountID, IdentityID: r.IdentityID, Email: r.Email, CreatedAt: fromUS(r.CreatedAt)}
}

const inboxColumns = "id, uuid, account_id, identity_id, email, created_at"

// CreateInbox implements ports.InboxStore, writing inbox.created.
func (db *DB) CreateInbox(ctx context.Context, in core.Inbox) (int64, error) {
	err := db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		if err := db.lockAccount(ctx, tx, in.AccountID, "Account"); err != nil {
			return nil, err
		}
		var err error
		if in.ID, err = db.insertInbox(ctx, tx, in); err != nil {
			return nil, err
		}
		return []core.NewEvent{core.InboxEvent(in)},
			db.recordEffect(ctx, tx, ports.ClaimOf(ctx), ports.EffectInbox, strconv.FormatInt(in.ID, 10))
	})
	return in.ID, conflictOr(err, identityConflicts)
}

func (db *DB) Inbox(ctx context.Context, id int64) (core.Inbox, error) {
	var r inboxRow
	err := db.get(ctx, &r, db.q(`SELECT `+inboxColumns+` FROM inboxes WHERE id = ?`), id)
	return r.core(), notFound(err, "Inbox")
}

func (db *DB) InboxByEmail(ctx context.Context, email string) (core.Inbox, error) {
	var r inboxRow
	err := db.get(ctx, &r, db.q(`SELECT `+inboxColumns+` FROM inboxes WHERE email = lower(?)`), email)
	return r.core(), notFound(err, "Inbox")
}

func (db *DB) FirstInbox(ctx context.Context, accountID string) (core.Inbox, error) {
	var r inboxRow
	var err error
	if accountID == "" {
		err = db.get(ctx, &r, db.q(`SELECT `+inboxColumns+` FROM inboxes ORDER BY id LIMIT 1`))
	} else {
		err = db.get(ctx, &r, db.q(`SELECT `+inboxColumns+` FROM inboxes WHERE account_id = ? ORDER BY id LIMIT 1`), accountID)
	}
	return r.core(), notFound(err, "Inbox")
}

func (db *DB) Inboxes(ctx context.Context, scope core.Scope, page ports.Page) ([]core.Inbox, int, error) {
	if scope.Empty {
		return nil, 0, nil
	}
	var rows []inboxRow
	total, err := db.selectPage(ctx, &rows, inboxColumns, `FROM inboxes WHERE account_id = ? AND (? = '' OR identity_id = ?)`,
		`ORDER BY id DESC`, []any{scope.AccountID, scope.IdentityID, nullString(scope.IdentityID)}, page)
	return toCore(rows), total, err
}

// lockAccount takes the account's row first, as SaveMail does, so that a
// delete and a delivery queue on it rather than deadlock on what the
// delete cascades to.
func (db *DB) lockAccount(ctx context.Context, tx *sqlx.Tx, accountID, what string) error {
	var clock int64
	err := tx.GetContext(ctx, &clock, db.q(`SELECT mail_clock FROM accounts WHERE id = ?`+db.forUpdate()), accountID)
	return notFound(err, what)
}

// DeleteIdentity implements ports.IdentityStore: what the identity owns
// goes with it by foreign key (ON DELETE CASCADE).
// It writes identity.deleted, and phone.released when it had a number.
func (db *DB) DeleteIdentity(ctx context.Context, accountID, id string) error {
	return db.txEvents(ctx, func(tx *sqlx.Tx) ([]core.NewEvent, error) {
		if err := db.lockAccount(ctx, tx, accountID, "Identity"); err != nil {
			return nil, err
		}
		var ir identityRow
		if err := tx.GetContext(ctx, &ir, db.q(`SELECT `+identityColumns+` FROM identities i WHERE i.id = ? AND i.account_id = ?`),
			id, accountID); err != nil {
			return nil, notFound(err, "Identity")
		}
		var events []core.NewEvent
		var pr phoneRow
		err := tx.GetContext(ctx, &pr, db.q(`SELECT `+phoneColumns+` FROM phone_numbers WHERE identity_id = ?`), id)
		switch {
		case err == nil:
			events = append(events, core.PhoneEvent(core.PhoneReleased, pr.core()))
		case !errors.Is(err, sql.ErrNoRows):
			return nil, err
		}
		events = append(events, core.IdentityEvent(core.IdentityDeleted, ir.core()))
		return events, db.execOneOn(ctx, tx, "Identity", `DELETE FROM identities WHERE id = ? AND account_id = ?`, id, accountID)
	})
}

// DeleteInbox implements ports.InboxStore. The identity's row is locked
// while its inboxes are counted, so two deletes cannot both take what
// would be its last inbox.
func (db *DB) DeleteInbox(ctx context.Context, accountID string, id int64) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		if err := db.lockAccount(ctx, tx, accountID, "Inbox"); err != nil {
			return err
		}
		var identityID string
		if err := tx.GetContext(ctx, &identityID, db.q(`SELECT identity_id FROM inboxes WHERE id = ? AND account_id = ?`),
			id, accountID); err != nil {
			return notFound(err, "Inbox")
		}
		if _, err := tx.ExecContext(ctx, db.q(`SELECT id FROM identities WHERE id = ?`+db.forUpdate()), identityID); err != nil {
			return err
		}
		var inboxes int
		if err := tx.GetContext(ctx, &inboxes, db.q(`SELECT COUNT(*) FROM inboxes WHERE identity_id = ?`), identityID); err != nil {
			return err
		}
		if err := core.InboxMayGo(inboxes); err != nil {
			return err
		}
		return db.execOneOn(ctx, tx, "Inbox", `DELETE FROM inboxes WHERE id = ?`, id)
	})
}
