package sqlstore

import (
	"context"
	"reflect"
	"slices"

	"github.com/callsign/callsign/core"
	"github.com/callsign/callsign/ports"
)

// selectPage selects one page of a list into dest (a pointer to a slice),
// in SQL: `SELECT columns from order`, with LIMIT and OFFSET when the page
// has a limit. from is the FROM and WHERE clauses (with args), which also
// count the matches when the page asks for the count (pageCount).
func (db *DB) selectPage(ctx context.Context, dest any, columns, from, order string, args []any, p ports.Page) (int, error) {
	query := `SELECT ` + columns + ` ` + from + ` ` + order
	pageArgs := args
	list := reflect.ValueOf(dest).Elem()
	if p.Limit > 0 {
		// Room for the page and the row past it (up to core.MaxPageLimit):
		// sqlx appends row by row, and doubling a slice of rows from one
		// copies them over and over.
		list.Set(reflect.MakeSlice(list.Type(), 0, min(p.Limit, core.MaxPageLimit)+1))
		// One row past the page tells whether another follows (pageCount).
		query += ` LIMIT ? OFFSET ?`
		pageArgs = append(slices.Clip(args), p.Limit+1, p.Offset)
	}
	if err := db.sel(ctx, dest, db.q(query), pageArgs...); err != nil {
		return 0, err
	}
	read := list.Len()
	if p.Limit > 0 {
		list.SetLen(min(read, p.Limit))
	}
	switch {
	case !p.Count:
		return 0, nil
	case p.Limit <= 0: // every row, read
		return read, nil
	}
	return db.pageCount(ctx, from, args, p.CountUpTo, "", p.Offset, p.Limit, read)
}

// pageCount is the count of a page's envelope, for a page of limit items
// from offset read with one row more (read rows in all): without that row
// the page is the last, and unless it is empty past the end it tells the
// count (offset + read), which saves a statement for the usual poll of
// what is new. A count bounded by upTo that the rows read already reach
// is upTo, which saves a page deep in a list (its bound is the page's end
// plus one, core.CountBound) from counting every row before it again;
// otherwise the matches are counted (count).
func (db *DB) pageCount(ctx context.Context, from string, args []any, upTo int, order string, offset, limit, read int) (int, error) {
	switch {
	case read <= limit && (read > 0 || offset == 0):
		return offset + read, nil
	case upTo > 0 && offset+read >= upTo:
		return upTo, nil
	}
	return db.count(ctx, from, args, upTo, order)
}

// count counts the rows of from (FROM and WHERE clauses, with args), or
// stops at upTo when it is not 0: a bounded count reads at most upTo rows
// where an exact one reads every match. order ("" for any) is the order a
// bounded count reads them in: a search's counts read the newest matches,
// as its page does, rather than the oldest (cold, and at 1,000,000
// messages 50 ms for a common word on PostgreSQL, against 5 ms for the
// page).
func (db *DB) count(ctx context.Context, from string, args []any, upTo int, order string) (int, error) {
	var total int
	if upTo <= 0 {
		return total, db.get(ctx, &total, db.q(`SELECT COUNT(*) `+from), args...)
	}
	if order != "" {
		from += ` ORDER BY ` + order
	}
	return total, db.get(ctx, &total, db.q(`SELECT COUNT(*) FROM (SELECT 1 `+from+` LIMIT ?) AS counted`), append(slices.Clip(args), upTo)...)
}
