package sqlstore

import (
	"context"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

type ruleRow struct {
	ID         string  `db:"id"`
	AccountID  string  `db:"account_id"`
	IdentityID *string `db:"identity_id"`
	Channel    string  `db:"channel"`
	Direction  string  `db:"direction"`
	Action     string  `db:"action"`
	Pattern    string  `db:"pattern"`
	CreatedAt  int64   `db:"created_at"`
}

func (r ruleRow) core() core.Rule {
	ru := core.Rule{ID: r.ID, AccountID: r.AccountID, Channel: core.RuleChannel(r.Channel), Direction: core.RuleDirection(r.Direction),
		Action: core.RuleAction(r.Action), Pattern: r.Pattern, CreatedAt: fromUS(r.CreatedAt)}
	if r.IdentityID != nil {
		ru.IdentityID = *r.IdentityID
	}
	return ru
}

const ruleColumns = "id, account_id, identity_id, channel, direction, action, pattern, created_at"

func (db *DB) CreateRule(ctx context.Context, r core.Rule) error {
	_, err := db.w.ExecContext(ctx, db.q(`INSERT INTO rules (`+ruleColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
		r.ID, r.AccountID, nullString(r.IdentityID), string(r.Channel), string(r.Direction), string(r.Action), r.Pattern, us(r.CreatedAt))
	return err
}

func (db *DB) Rules(ctx context.Context, scope core.Scope, page ports.Page) ([]core.Rule, int, error) {
	if scope.Empty {
		return nil, 0, nil
	}
	var rows []ruleRow
	total, err := db.selectPage(ctx, &rows, ruleColumns, `FROM rules WHERE account_id = ? AND (? = '' OR identity_id IS NULL OR identity_id = ?)`,
		`ORDER BY created_at, id`, []any{scope.AccountID, scope.IdentityID, nullString(scope.IdentityID)}, page)
	return toCore(rows), total, err
}

func (db *DB) CountRules(ctx context.Context, accountID string) (int, error) {
	var n int
	err := db.get(ctx, &n, db.q(`SELECT COUNT(*) FROM rules WHERE account_id = ?`), accountID)
	return n, err
}

func (db *DB) DeleteRule(ctx context.Context, accountID, id string) error {
	return db.execOne(ctx, "Rule", `DELETE FROM rules WHERE id = ? AND account_id = ?`, id, accountID)
}

func (db *DB) RulesFor(ctx context.Context, accountID, identityID string, channel core.RuleChannel, direction core.RuleDirection) ([]core.Rule, error) {
	var rows []ruleRow
	err := db.sel(ctx, &rows, db.q(`SELECT `+ruleColumns+` FROM rules WHERE account_id = ? AND channel = ? AND direction = ?
		AND (identity_id IS NULL OR identity_id = ?) ORDER BY created_at, id`), accountID, string(channel), string(direction), identityID)
	return toCore(rows), err
}
