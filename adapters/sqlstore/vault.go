package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type passwordRow struct {
	ID         string `db:"id"`
	AccountID  string `db:"account_id"`
	IdentityID string `db:"identity_id"`
	Domain     string `db:"domain"`
	Username   string `db:"username"`
	Password   []byte `db:"password"`
	Notes      []byte `db:"notes"`
	TOTP       []byte `db:"totp"`
	CreatedAt  int64  `db:"created_at"`
	UpdatedAt  int64  `db:"updated_at"`
}

func (r passwordRow) core() ports.StoredPassword {
	return ports.StoredPassword{
		Entry: core.PasswordEntry{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID, Domain: r.Domain, Username: r.Username,
			CreatedAt: fromUS(r.CreatedAt), UpdatedAt: fromUS(r.UpdatedAt)},
		Password: r.Password, Notes: r.Notes, TOTP: r.TOTP,
	}
}

const passwordColumns = "id, account_id, identity_id, domain, username, password, notes, totp, created_at, updated_at"

func (db *DB) CreatePassword(ctx context.Context, p ports.StoredPassword) error {
	e := p.Entry
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO passwords (id, account_id, identity_id, domain, host, username, password, notes, totp, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			e.ID, e.AccountID, e.IdentityID, e.Domain, core.DomainHost(e.Domain), e.Username, p.Password, p.Notes, p.TOTP, us(e.CreatedAt), us(e.UpdatedAt)); err != nil {
			return err
		}
		return db.recordEffect(ctx, tx, ports.ClaimOf(ctx), ports.EffectPassword, e.ID)
	})
}

func (db *DB) Password(ctx context.Context, accountID, id string) (ports.StoredPassword, error) {
	var r passwordRow
	err := db.get(ctx, &r, db.q(`SELECT `+passwordColumns+` FROM passwords WHERE id = ? AND account_id = ?`), id, accountID)
	return r.core(), notFound(err, "Password")
}

func (db *DB) Passwords(ctx context.Context, f ports.PasswordFilter) ([]ports.StoredPassword, int, error) {
	if f.Scope.Empty {
		return nil, 0, nil
	}
	var rows []passwordRow
	// A host matches itself and its subdomains: "github.com" finds "gist.github.com".
	dotted := "." + f.Host
	total, err := db.selectPage(ctx, &rows, passwordColumns, `FROM passwords
		WHERE account_id = ? AND (? = '' OR identity_id = ?)
		AND (? = '' OR host = ? OR substr(host, length(host) - length(?) + 1) = ?)`, `ORDER BY created_at, id`,
		[]any{f.Scope.AccountID, f.Scope.IdentityID, nullString(f.Scope.IdentityID), f.Host, f.Host, dotted, dotted}, f.Page)
	return toCore(rows), total, err
}

func (db *DB) UpdatePassword(ctx context.Context, p ports.StoredPassword) error {
	e := p.Entry
	return db.execOne(ctx, "Password", `UPDATE passwords SET domain = ?, host = ?, username = ?, password = ?, notes = ?, totp = ?, updated_at = ?
		WHERE id = ? AND account_id = ?`,
		e.Domain, core.DomainHost(e.Domain), e.Username, p.Password, p.Notes, p.TOTP, us(e.UpdatedAt), e.ID, e.AccountID)
}

func (db *DB) DeletePassword(ctx context.Context, accountID, id string) error {
	return db.execOne(ctx, "Password", `DELETE FROM passwords WHERE id = ? AND account_id = ?`, id, accountID)
}

type secretRow struct {
	ID         string `db:"id"`
	AccountID  string `db:"account_id"`
	IdentityID string `db:"identity_id"`
	Key        string `db:"key"`
	Value      []byte `db:"value"`
	CreatedAt  int64  `db:"created_at"`
	UpdatedAt  int64  `db:"updated_at"`
}

func (r secretRow) core() ports.StoredSecret {
	return ports.StoredSecret{
		Secret: core.Secret{ID: r.ID, AccountID: r.AccountID, IdentityID: r.IdentityID, Key: r.Key,
			CreatedAt: fromUS(r.CreatedAt), UpdatedAt: fromUS(r.UpdatedAt)},
		Value: r.Value,
	}
}

const secretColumns = "id, account_id, identity_id, key, value, created_at, updated_at"

var secretConflicts = map[string]string{"key": "A secret with this key already exists."}

func (db *DB) CreateSecret(ctx context.Context, s ports.StoredSecret) error {
	e := s.Secret
	err := db.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO secrets (`+secretColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			e.ID, e.AccountID, e.IdentityID, e.Key, s.Value, us(e.CreatedAt), us(e.UpdatedAt)); err != nil {
			return err
		}
		return db.recordEffect(ctx, tx, ports.ClaimOf(ctx), ports.EffectSecret, e.ID)
	})
	return conflictOr(err, secretConflicts)
}

func (db *DB) Secret(ctx context.Context, accountID, id string) (ports.StoredSecret, error) {
	var r secretRow
	err := db.get(ctx, &r, db.q(`SELECT `+secretColumns+` FROM secrets WHERE id = ? AND account_id = ?`), id, accountID)
	return r.core(), notFound(err, "Secret")
}

func (db *DB) Secrets(ctx context.Context, f ports.SecretFilter) ([]ports.StoredSecret, int, error) {
	if f.Scope.Empty {
		return nil, 0, nil
	}
	var rows []secretRow
	total, err := db.selectPage(ctx, &rows, secretColumns, `FROM secrets
		WHERE account_id = ? AND (? = '' OR identity_id = ?) AND (? = '' OR key = ?)`, `ORDER BY created_at, id`,
		[]any{f.Scope.AccountID, f.Scope.IdentityID, nullString(f.Scope.IdentityID), f.Key, f.Key}, f.Page)
	return toCore(rows), total, err
}

func (db *DB) UpdateSecret(ctx context.Context, s ports.StoredSecret) error {
	e := s.Secret
	err := db.execOne(ctx, "Secret", `UPDATE secrets SET key = ?, value = ?, updated_at = ? WHERE id = ? AND account_id = ?`,
		e.Key, s.Value, us(e.UpdatedAt), e.ID, e.AccountID)
	return conflictOr(err, secretConflicts)
}

func (db *DB) DeleteSecret(ctx context.Context, accountID, id string) error {
	return db.execOne(ctx, "Secret", `DELETE FROM secrets WHERE id = ? AND account_id = ?`, id, accountID)
}

// sealedColumns are every sealed column, for key rotation. A table added
// later with sealed values adds itself here.
var sealedColumns = []struct{ table, field string }{
	{"acme_cache", "value"},
	{"dkim_keys", "private_key"},
	{"mail_sources", "password"},
	{"passwords", "notes"},
	{"passwords", "password"},
	{"passwords", "totp"},
	{"secrets", "value"},
	{"webhooks", "previous_secret"},
	{"webhooks", "secret"},
}

func isSealedColumn(table, field string) bool {
	for _, c := range sealedColumns {
		if c.table == table && c.field == field {
			return true
		}
	}
	return false
}

func (db *DB) SealedValues(ctx context.Context, after ports.SealedValue, limit int) ([]ports.SealedValue, error) {
	parts := make([]string, len(sealedColumns))
	for i, c := range sealedColumns {
		parts[i] = fmt.Sprintf(`SELECT '%s' AS t, CAST(id AS TEXT) AS id, '%s' AS f, %s AS v FROM %s WHERE %s IS NOT NULL`,
			c.table, c.field, c.field, c.table, c.field)
	}
	var rows []struct {
		Table string `db:"t"`
		ID    string `db:"id"`
		Field string `db:"f"`
		Value []byte `db:"v"`
	}
	err := db.sel(ctx, &rows, db.q(`SELECT t, id, f, v FROM (`+strings.Join(parts, " UNION ALL ")+`) sealed
		WHERE t > ? OR (t = ? AND (id > ? OR (id = ? AND f > ?)))
		ORDER BY t, id, f LIMIT ?`),
		after.Table, after.Table, after.ID, after.ID, after.Field, limit)
	out := make([]ports.SealedValue, len(rows))
	for i, r := range rows {
		out[i] = ports.SealedValue{Table: r.Table, ID: r.ID, Field: r.Field, Sealed: r.Value}
	}
	return out, err
}

func (db *DB) ReplaceSealed(ctx context.Context, v ports.SealedValue, replacement []byte) (bool, error) {
	if !isSealedColumn(v.Table, v.Field) {
		return false, fmt.Errorf("%s.%s is not a sealed column", v.Table, v.Field)
	}
	res, err := db.w.ExecContext(ctx, db.q(fmt.Sprintf(`UPDATE %s SET %s = ? WHERE id = ? AND %s = ?`, v.Table, v.Field, v.Field)),
		replacement, v.ID, v.Sealed)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
