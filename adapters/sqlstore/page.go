package sqlstore

import (
	"context"
	"slices"

	"github.com/callsign/callsign/ports"
)

// selectPage selects one page of a list into dest, in SQL: `SELECT columns
// from order`, with LIMIT and OFFSET when the page has a limit. from is the
// FROM and WHERE clauses (with args), which also count every match when the
// page asks for the count.
func (db *DB) selectPage(ctx context.Context, dest any, columns, from, order string, args []any, p ports.Page) (int, error) {
	total := 0
	if p.Count {
		var err error
		if total, err = db.count(ctx, from, args, p.CountUpTo); err != nil {
			return 0, err
		}
	}
	query := `SELECT ` + columns + ` ` + from + ` ` + order
	if p.Limit > 0 {
		query += ` LIMIT ? OFFSET ?`
		args = append(slices.Clip(args), p.Limit, p.Offset)
	}
	return total, db.sel(ctx, dest, db.q(query), args...)
}

// count counts the rows of from (FROM and WHERE clauses, with args), or
// stops at upTo when it is not 0: a bounded count reads at most upTo index
// entries where an exact one reads every match.
func (db *DB) count(ctx context.Context, from string, args []any, upTo int) (int, error) {
	var total int
	if upTo <= 0 {
		return total, db.get(ctx, &total, db.q(`SELECT COUNT(*) `+from), args...)
	}
	return total, db.get(ctx, &total, db.q(`SELECT COUNT(*) FROM (SELECT 1 `+from+` LIMIT ?) AS counted`), append(slices.Clip(args), upTo)...)
}
