package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

const domainColumns = `domain, account_id, status, created_at, reason, checks, verified_at, last_checked_at, next_check_at, mta_sts_mode`

type domainRow struct {
	Name          string `db:"domain"`
	AccountID     string `db:"account_id"`
	Status        string `db:"status"`
	CreatedAt     int64  `db:"created_at"`
	Reason        string `db:"reason"`
	Checks        string `db:"checks"`
	VerifiedAt    int64  `db:"verified_at"`
	LastCheckedAt int64  `db:"last_checked_at"`
	NextCheckAt   int64  `db:"next_check_at"`
	MTASTSMode    string `db:"mta_sts_mode"`
}

type dkimKeyRow struct {
	ID         string `db:"id"`
	Domain     string `db:"domain"`
	Selector   string `db:"selector"`
	Algorithm  string `db:"algorithm"`
	PublicKey  string `db:"public_key"`
	PrivateKey []byte `db:"private_key"`
	Active     bool   `db:"active"`
	CreatedAt  int64  `db:"created_at"`
}

func (r dkimKeyRow) stored() ports.StoredDKIMKey {
	return ports.StoredDKIMKey{ID: r.ID, Domain: r.Domain, Private: r.PrivateKey, Key: core.DKIMKey{Selector: r.Selector,
		Algorithm: r.Algorithm, PublicKey: r.PublicKey, Active: r.Active, CreatedAt: fromUS(r.CreatedAt)}}
}

// optionalUS reads a time kept as 0 when absent.
func optionalUS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return fromUS(v)
}

func usOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return us(t)
}

func (r domainRow) core(keys []dkimKeyRow) core.Domain {
	d := core.Domain{Name: r.Name, Type: core.DomainCustom, Status: core.DomainStatus(r.Status), AccountID: r.AccountID,
		Reason: r.Reason, CreatedAt: fromUS(r.CreatedAt), VerifiedAt: optionalUS(r.VerifiedAt),
		LastCheckedAt: optionalUS(r.LastCheckedAt), NextCheckAt: fromUS(r.NextCheckAt), MTASTSMode: core.MTASTSMode(r.MTASTSMode)}
	_ = json.Unmarshal([]byte(r.Checks), &d.Checks)
	for _, k := range keys {
		if k.Domain == r.Name {
			d.Keys = append(d.Keys, k.stored().Key)
		}
	}
	return d
}

func checksJSON(c map[core.RecordPurpose]core.RecordStatus) string {
	if len(c) == 0 {
		return "{}"
	}
	b, _ := json.Marshal(c)
	return string(b)
}

// domainTaken is a clash on the domain's key, reported on "name", the
// field the API calls it.
var domainTaken = &core.Error{Kind: core.KindConflict, Message: "This domain belongs to an account already.",
	Fields: map[string][]string{"name": {"This domain belongs to an account already."}}}

func (db *DB) CreateCustomDomain(ctx context.Context, d core.Domain, key ports.StoredDKIMKey) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		_, err := tx.ExecContext(ctx, db.q(`INSERT INTO custom_domains (`+domainColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			d.Name, d.AccountID, string(d.Status), us(d.CreatedAt), d.Reason, checksJSON(d.Checks),
			usOrZero(d.VerifiedAt), usOrZero(d.LastCheckedAt), us(d.NextCheckAt), string(d.STSMode()))
		if uniqueField(err) != "" {
			return domainTaken
		}
		if err != nil {
			return err
		}
		return db.insertDKIMKey(ctx, tx, key)
	})
}

func (db *DB) insertDKIMKey(ctx context.Context, tx *sqlx.Tx, k ports.StoredDKIMKey) error {
	_, err := tx.ExecContext(ctx, db.q(`INSERT INTO dkim_keys (id, domain, selector, algorithm, public_key, private_key, active, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`), k.ID, k.Domain, k.Key.Selector, k.Key.Algorithm, k.Key.PublicKey, k.Private, k.Key.Active, us(k.Key.CreatedAt))
	return conflictOr(err, map[string]string{"selector": "The domain has a key with this selector already."})
}

// domains lists the domains a condition on custom_domains (aliased d)
// selects, with their keys.
func (db *DB) domains(ctx context.Context, where string, args ...any) ([]core.Domain, error) {
	var rows []domainRow
	if err := db.sel(ctx, &rows, db.q(`SELECT `+domainColumns+` FROM custom_domains d WHERE `+where+` ORDER BY domain`), args...); err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, nil
	}
	var keys []dkimKeyRow
	if err := db.sel(ctx, &keys, db.q(`SELECT k.id, k.domain, k.selector, k.algorithm, k.public_key, k.private_key, k.active, k.created_at
		FROM dkim_keys k JOIN custom_domains d ON d.domain = k.domain WHERE `+where+` ORDER BY k.active DESC, k.created_at`), args...); err != nil {
		return nil, err
	}
	out := make([]core.Domain, len(rows))
	for i, r := range rows {
		out[i] = r.core(keys)
	}
	return out, nil
}

func (db *DB) one(ctx context.Context, where string, args ...any) (core.Domain, error) {
	list, err := db.domains(ctx, where, args...)
	if err == nil && len(list) == 0 {
		err = sql.ErrNoRows
	}
	if err != nil {
		return core.Domain{}, notFound(err, "Domain")
	}
	return list[0], nil
}

func (db *DB) CustomDomain(ctx context.Context, accountID, name string) (core.Domain, error) {
	return db.one(ctx, `d.account_id = ? AND d.domain = ?`, accountID, name)
}

func (db *DB) CustomDomains(ctx context.Context, accountID string) ([]core.Domain, error) {
	return db.domains(ctx, `d.account_id = ?`, accountID)
}

func (db *DB) DomainByName(ctx context.Context, name string) (core.Domain, error) {
	return db.one(ctx, `d.domain = ?`, name)
}

func (db *DB) SaveDomainCheck(ctx context.Context, d core.Domain, retired string) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, db.q(`UPDATE custom_domains SET status = ?, reason = ?, checks = ?, verified_at = ?,
			last_checked_at = ?, next_check_at = ?, claimed_until = 0 WHERE domain = ? AND account_id = ?`),
			string(d.Status), d.Reason, checksJSON(d.Checks), usOrZero(d.VerifiedAt), usOrZero(d.LastCheckedAt), us(d.NextCheckAt), d.Name, d.AccountID)
		if err := oneRow(res, err, "Domain"); err != nil {
			return err
		}
		if retired != "" {
			if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM dkim_keys WHERE domain = ? AND selector = ?`), d.Name, retired); err != nil {
				return err
			}
		}
		for _, k := range d.Keys {
			if _, err := tx.ExecContext(ctx, db.q(`UPDATE dkim_keys SET active = ? WHERE domain = ? AND selector = ?`), k.Active, d.Name, k.Selector); err != nil {
				return err
			}
		}
		return nil
	})
}

func (db *DB) SetMTASTSMode(ctx context.Context, accountID, name string, mode core.MTASTSMode) error {
	return db.execOne(ctx, "Domain", `UPDATE custom_domains SET mta_sts_mode = ? WHERE account_id = ? AND domain = ?`, string(mode), accountID, name)
}

func (db *DB) AddDKIMKey(ctx context.Context, accountID string, key ports.StoredDKIMKey) error {
	return db.tx(ctx, func(tx *sqlx.Tx) error {
		var owner string
		if err := tx.GetContext(ctx, &owner, db.q(`SELECT account_id FROM custom_domains WHERE domain = ? AND account_id = ?`), key.Domain, accountID); err != nil {
			return notFound(err, "Domain")
		}
		if _, err := tx.ExecContext(ctx, db.q(`DELETE FROM dkim_keys WHERE domain = ? AND active = ?`), key.Domain, false); err != nil {
			return err
		}
		return db.insertDKIMKey(ctx, tx, key)
	})
}

func (db *DB) SigningKey(ctx context.Context, domain string) (ports.StoredDKIMKey, error) {
	var k dkimKeyRow
	err := db.get(ctx, &k, db.q(`SELECT id, domain, selector, algorithm, public_key, private_key, active, created_at FROM dkim_keys
		WHERE domain = ? AND active = ?`), domain, true)
	return k.stored(), notFound(err, "Signing key")
}

func (db *DB) DeleteCustomDomain(ctx context.Context, accountID, name string) error {
	return db.execOne(ctx, "Domain", `DELETE FROM custom_domains WHERE account_id = ? AND domain = ?`, accountID, name)
}

func (db *DB) ClaimDomainChecks(ctx context.Context, now, leaseUntil time.Time, limit int) ([]core.Domain, error) {
	skipLocked := ""
	if db.dialect == Postgres {
		skipLocked = " FOR UPDATE SKIP LOCKED"
	}
	var names []string
	err := db.w.SelectContext(ctx, &names, db.q(`UPDATE custom_domains SET claimed_until = ?
		WHERE domain IN (SELECT domain FROM custom_domains WHERE next_check_at <= ? AND claimed_until <= ?
			ORDER BY next_check_at, domain LIMIT ?`+skipLocked+`)
		RETURNING domain`), us(leaseUntil), us(now), us(now), limit)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	out := make([]core.Domain, 0, len(names))
	for _, n := range names {
		d, err := db.DomainByName(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func (db *DB) InboxesOnDomain(ctx context.Context, domain string, limit int) ([]string, error) {
	var emails []string
	err := db.sel(ctx, &emails, db.q(`SELECT email FROM inboxes WHERE email LIKE ? ESCAPE '\' ORDER BY email LIMIT ?`),
		"%@"+escapeLike(domain), limit)
	return emails, err
}

// escapeLike makes s match itself in a LIKE pattern.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// oneRow turns an update that touched no row into NotFound.
func oneRow(res sql.Result, err error, what string) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return notFound(sql.ErrNoRows, what)
	}
	return nil
}

type suppressionRow struct {
	AccountID  string `db:"account_id"`
	Email      string `db:"email"`
	IdentityID string `db:"identity_id"`
	Reason     string `db:"reason"`
	CreatedAt  int64  `db:"created_at"`
}

func (r suppressionRow) core() core.Suppression {
	return core.Suppression{AccountID: r.AccountID, Email: r.Email, IdentityID: r.IdentityID, Reason: r.Reason, CreatedAt: fromUS(r.CreatedAt)}
}

func (db *DB) Suppress(ctx context.Context, s core.Suppression) error {
	_, err := db.w.ExecContext(ctx, db.q(`INSERT INTO suppressions (account_id, email, identity_id, reason, created_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (account_id, email) DO UPDATE SET identity_id = excluded.identity_id, reason = excluded.reason, created_at = excluded.created_at`),
		s.AccountID, strings.ToLower(s.Email), s.IdentityID, s.Reason, us(s.CreatedAt))
	return err
}

func (db *DB) Suppressions(ctx context.Context, f ports.SuppressionFilter) ([]core.Suppression, int, error) {
	if f.Scope.Empty {
		return nil, 0, nil
	}
	where, args := []string{"account_id = ?"}, []any{f.Scope.AccountID}
	if f.Scope.IdentityID != "" {
		where, args = append(where, "identity_id = ?"), append(args, f.Scope.IdentityID)
	}
	if f.Email != "" {
		where, args = append(where, "email = ?"), append(args, strings.ToLower(f.Email))
	}
	var rows []suppressionRow
	total, err := db.selectPage(ctx, &rows, `account_id, email, identity_id, reason, created_at`,
		`FROM suppressions WHERE `+strings.Join(where, " AND "), `ORDER BY created_at DESC, email`, args, f.Page)
	return suppressionsOf(rows), total, err
}

func suppressionsOf(rows []suppressionRow) []core.Suppression {
	out := make([]core.Suppression, len(rows))
	for i, r := range rows {
		out[i] = r.core()
	}
	return out
}

func (db *DB) SuppressedAmong(ctx context.Context, accountID string, emails []string) ([]core.Suppression, error) {
	if len(emails) == 0 {
		return nil, nil
	}
	args := []any{accountID}
	for _, e := range emails {
		args = append(args, strings.ToLower(e))
	}
	var rows []suppressionRow
	err := db.sel(ctx, &rows, db.q(`SELECT account_id, email, identity_id, reason, created_at FROM suppressions
		WHERE account_id = ? AND email IN (?`+strings.Repeat(", ?", len(emails)-1)+`) ORDER BY email`), args...)
	return suppressionsOf(rows), err
}

func (db *DB) DeleteSuppression(ctx context.Context, scope core.Scope, email string) error {
	if scope.Empty {
		return notFound(sql.ErrNoRows, "Suppression")
	}
	q, args := `DELETE FROM suppressions WHERE account_id = ? AND email = ?`, []any{scope.AccountID, strings.ToLower(email)}
	if scope.IdentityID != "" {
		q, args = q+` AND identity_id = ?`, append(args, scope.IdentityID)
	}
	return db.execOne(ctx, "Suppression", q, args...)
}
