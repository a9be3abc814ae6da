package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type accountRow struct {
	ID                 string `db:"id"`
	Email              string `db:"email"`
	PasswordHash       string `db:"password_hash"`
	SubscriptionActive bool   `db:"subscription_active"`
	CreatedAt          int64  `db:"created_at"`
}

func (r accountRow) core() core.Account {
	return core.Account{ID: r.ID, Email: r.Email, PasswordHash: r.PasswordHash, SubscriptionActive: r.SubscriptionActive, CreatedAt: fromUS(r.CreatedAt)}
}

const accountColumns = "id, email, password_hash, subscription_active, created_at"

func (db *DB) CreateAccount(ctx context.Context, a core.Account) error {
	_, err := db.w.ExecContext(ctx, db.q(`INSERT INTO accounts (`+accountColumns+`) VALUES (?, ?, ?, ?, ?)`),
		a.ID, a.Email, a.PasswordHash, a.SubscriptionActive, us(a.CreatedAt))
	return conflictOr(err, map[string]string{"email": "An account with this email already exists."})
}

func (db *DB) Account(ctx context.Context, id string) (core.Account, error) {
	var r accountRow
	err := db.get(ctx, &r, db.q(`SELECT `+accountColumns+` FROM accounts WHERE id = ?`), id)
	return r.core(), notFound(err, "Account")
}

func (db *DB) AccountByEmail(ctx context.Context, email string) (core.Account, error) {
	var r accountRow
	err := db.get(ctx, &r, db.q(`SELECT `+accountColumns+` FROM accounts WHERE lower(email) = lower(?)`), email)
	return r.core(), notFound(err, "Account")
}

// execOne runs an update or delete that must touch exactly one row.
func (db *DB) execOne(ctx context.Context, what, query string, args ...any) error {
	return db.execOneOn(ctx, db.w, what, query, args...)
}

// execOneOn is execOne through ext (the database or a transaction).
func (db *DB) execOneOn(ctx context.Context, ext sqlx.ExecerContext, what, query string, args ...any) error {
	return execTouching(ctx, ext, notFound(sql.ErrNoRows, what), db.q(query), args...)
}

func (db *DB) SetSubscription(ctx context.Context, id string, active bool) error {
	return db.execOne(ctx, "Account", `UPDATE accounts SET subscription_active = ? WHERE id = ?`, active, id)
}

func (db *DB) SetPasswordHash(ctx context.Context, id, hash string) error {
	return db.execOne(ctx, "Account", `UPDATE accounts SET password_hash = ? WHERE id = ?`, hash, id)
}

// DeleteAccount relies on ON DELETE CASCADE for everything the account owns.
func (db *DB) DeleteAccount(ctx context.Context, id string) error {
	return db.execOne(ctx, "Account", `DELETE FROM accounts WHERE id = ?`, id)
}

type keyRow struct {
	ID           int64          `db:"id"`
	AccountID    string         `db:"account_id"`
	Type         string         `db:"key_type"`
	IdentityID   sql.NullString `db:"identity_id"`
	CanProvision bool           `db:"can_provision"`
	CanSend      bool           `db:"can_send"`
	Name         string         `db:"name"`
	Prefix       string         `db:"prefix"`
	Hash         []byte         `db:"hash"`
	Origin       string         `db:"origin"`
	CreatedAt    int64          `db:"created_at"`
	LastUsedAt   sql.NullInt64  `db:"last_used_at"`
}

func (r keyRow) core() core.APIKey {
	return core.APIKey{ID: r.ID, AccountID: r.AccountID, Type: core.KeyType(r.Type), IdentityID: r.IdentityID.String,
		CanProvision: r.CanProvision, CanSend: r.CanSend, Name: r.Name, Prefix: r.Prefix, Hash: r.Hash,
		Origin: core.KeyOrigin(r.Origin), CreatedAt: fromUS(r.CreatedAt), LastUsedAt: fromNullUS(r.LastUsedAt)}
}

const keyColumns = "id, account_id, key_type, identity_id, can_provision, can_send, name, prefix, hash, origin, created_at, last_used_at"

func (db *DB) CreateKey(ctx context.Context, k core.APIKey) (int64, error) {
	id, err := db.insertKey(ctx, db.w, k)
	return id, conflictOr(err, nil)
}

// insertKey stores k through ext (the database or a transaction) and returns its new id.
func (db *DB) insertKey(ctx context.Context, ext sqlx.ExtContext, k core.APIKey) (int64, error) {
	var id int64
	err := ext.QueryRowxContext(ctx, db.q(`INSERT INTO api_keys (account_id, key_type, identity_id, can_provision, can_send, name, prefix,
		hash, origin, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`),
		k.AccountID, string(k.Type), nullString(k.IdentityID), k.CanProvision, k.CanSend, k.Name, k.Prefix, k.Hash, string(k.Origin),
		us(k.CreatedAt)).Scan(&id)
	return id, err
}

func (db *DB) KeyByHash(ctx context.Context, hash []byte) (core.APIKey, error) {
	var r keyRow
	err := db.get(ctx, &r, db.q(`SELECT `+keyColumns+` FROM api_keys WHERE hash = ?`), hash)
	return r.core(), notFound(err, "Key")
}

func (db *DB) Key(ctx context.Context, accountID string, id int64) (core.APIKey, error) {
	var r keyRow
	err := db.get(ctx, &r, db.q(`SELECT `+keyColumns+` FROM api_keys WHERE id = ? AND account_id = ?`), id, accountID)
	return r.core(), notFound(err, "Key")
}

func (db *DB) Keys(ctx context.Context, accountID string, t core.KeyType, identityID string, page ports.Page) ([]core.APIKey, int, error) {
	var rows []keyRow
	total, err := db.selectPage(ctx, &rows, keyColumns, `FROM api_keys WHERE account_id = ? AND key_type = ? AND (? = '' OR identity_id = ?)`,
		`ORDER BY id`, []any{accountID, string(t), identityID, nullString(identityID)}, page)
	return toCore(rows), total, err
}

// DeleteKey implements ports.KeyStore: core.MayDeleteKey decides, with the
// account's row locked (PostgreSQL; SQLite's write transaction holds the
// whole database), so two deletes of the last two management keys cannot
// both count two.
func (db *DB) DeleteKey(ctx context.Context, accountID string, id int64) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		if err := db.lockAccount(ctx, tx, accountID, "Key"); err != nil {
			return err
		}
		var r keyRow
		if err := tx.GetContext(ctx, &r, db.q(`SELECT `+keyColumns+` FROM api_keys WHERE id = ? AND account_id = ?`), id, accountID); err != nil {
			return notFound(err, "Key")
		}
		var managementKeys int
		if err := tx.GetContext(ctx, &managementKeys, db.q(`SELECT COUNT(*) FROM api_keys WHERE account_id = ? AND key_type = ?`),
			accountID, string(core.KeyManagement)); err != nil {
			return err
		}
		if err := core.MayDeleteKey(r.core(), managementKeys); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, db.q(`DELETE FROM api_keys WHERE id = ?`), id)
		return err
	})
}

func (db *DB) SetKeyCanSend(ctx context.Context, accountID string, id int64, canSend bool) error {
	return db.execOne(ctx, "Key", `UPDATE api_keys SET can_send = ? WHERE id = ? AND account_id = ?`, canSend, id, accountID)
}

func (db *DB) TouchKey(ctx context.Context, id int64, at time.Time) error {
	_, err := db.w.ExecContext(ctx, db.q(`UPDATE api_keys SET last_used_at = ? WHERE id = ?`), us(at), id)
	return err
}
