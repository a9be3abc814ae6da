package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/callsign/callsign/adapters/sqlstore"
	"github.com/callsign/callsign/adapters/sqlstore/sqlstoretest"
)

// The SQLite and PostgreSQL migrations are written twice, differing only in
// type names. This test migrates both dialects and compares what they
// made: tables, columns (type family, nullability, default), primary keys,
// indexes and foreign keys. It runs where PostgreSQL does (always in CI).
func TestMigrationsMakeTheSameSchemaInBothDialects(t *testing.T) {
	if !slices.Contains(sqlstoretest.Dialects(), sqlstore.Postgres) {
		t.Skipf("comparing the dialects needs PostgreSQL (%s)", sqlstoretest.PostgresURLVar)
	}
	lite, pg := migratedSchema(t, sqlstore.SQLite), migratedSchema(t, sqlstore.Postgres)
	if len(lite) < 50 {
		t.Fatalf("the SQLite schema reads as %d lines; the introspection is broken", len(lite))
	}
	var diff []string
	for _, l := range lite {
		if !slices.Contains(pg, l) {
			diff = append(diff, "only in SQLite:     "+l)
		}
	}
	for _, l := range pg {
		if !slices.Contains(lite, l) {
			diff = append(diff, "only in PostgreSQL: "+l)
		}
	}
	if len(diff) > 0 {
		t.Fatalf("the migrations of the two dialects disagree:\n%s", strings.Join(diff, "\n"))
	}
}

// migratedSchema migrates an empty database of the dialect and describes
// it, one sorted line per fact, in terms both dialects share.
func migratedSchema(t *testing.T, d sqlstore.Dialect) []string {
	ctx := context.Background()
	url := sqlstoretest.URL(t, d)
	db, err := sqlstore.Open(ctx, url, sqlstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	driver := "sqlite"
	if d == sqlstore.Postgres {
		driver = "pgx"
	}
	raw, err := sql.Open(driver, url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var lines []string
	describe := describeSQLite
	if d == sqlstore.Postgres {
		describe = describePostgres
	}
	if err := describe(ctx, raw, func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }); err != nil {
		t.Fatalf("%s: %v", d, err)
	}
	slices.Sort(lines)
	return lines
}

// typeFamily maps each dialect's column types onto what they stand for:
// uuids are TEXT in SQLite, integers are 64-bit in both.
var typeFamily = map[string]string{
	"text": "text", "uuid": "text", "integer": "int", "bigint": "int", "blob": "bytes", "bytea": "bytes", "boolean": "bool",
}

var (
	castRe  = regexp.MustCompile(`::[a-z ]+`)
	spaceRe = regexp.MustCompile(`[\s()"]+`)
	fkRe    = regexp.MustCompile(`^FOREIGN KEY \((.+)\) REFERENCES (?:\w+\.)?(\w+)\((.+)\)(?: ON DELETE ([A-Z ]+))?$`)
)

// expr normalizes an SQL expression of either dialect's printing: casts,
// spaces, parentheses and quotes go, case folds.
func expr(s string) string {
	return spaceRe.ReplaceAllString(castRe.ReplaceAllString(strings.ToLower(s), ""), "")
}

// indexParts splits CREATE [UNIQUE] INDEX name ON table [USING x] (cols) [WHERE pred].
func indexParts(def string) (unique bool, cols, where string) {
	unique = strings.Contains(def, "UNIQUE INDEX")
	on := strings.Index(def, " ON ")
	open := strings.Index(def[on:], "(") + on
	depth, end := 0, open
	for i, r := range def[open:] {
		if r == '(' {
			depth++
		} else if r == ')' {
			if depth--; depth == 0 {
				end = open + i
				break
			}
		}
	}
	cols = expr(def[open+1 : end])
	if _, w, ok := strings.Cut(def[end:], " WHERE "); ok {
		where = " where " + expr(w)
	}
	return unique, cols, where
}

func column(add func(string, ...any), table, name, typ string, notNull bool, def sql.NullString) {
	fam, ok := typeFamily[strings.ToLower(typ)]
	if !ok {
		fam = "unknown type " + typ
	}
	null := "null"
	if notNull {
		null = "not null"
	}
	dflt := ""
	if def.Valid {
		dflt = " default " + expr(def.String)
	}
	add("%s: column %s %s %s%s", table, name, fam, null, dflt)
}

// The full-text indexes (email_search, sms_search, contact_search) are left
// out on both sides: they are each dialect's own by nature (an FTS5 virtual
// table and its shadow tables; a tsvector table with a GIN index), written
// by sqlstore/search.go and the triggers of migration 00022.

func describeSQLite(ctx context.Context, db *sql.DB, add func(string, ...any)) error {
	tables, err := strings1(ctx, db, `SELECT name FROM sqlite_master WHERE type = 'table'
		AND name NOT LIKE 'sqlite_%' AND name <> 'goose_db_version' AND name NOT LIKE 'email_search%'
		AND name NOT LIKE 'sms_search%' AND name NOT LIKE 'contact_search%' ORDER BY name`)
	if err != nil {
		return err
	}
	for _, table := range tables {
		add("table %s", table)
		rows, err := db.QueryContext(ctx, `SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?)`, table)
		if err != nil {
			return err
		}
		var pk []string
		for rows.Next() {
			var name, typ string
			var notNull bool
			var def sql.NullString
			var pkPos int
			if err := rows.Scan(&name, &typ, &notNull, &def, &pkPos); err != nil {
				return err
			}
			// SQLite lets a primary key be NULL unless told otherwise; PostgreSQL never does.
			column(add, table, name, typ, notNull || pkPos > 0, def)
			if pkPos > 0 {
				pk = append(pk, name)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		add("%s: primary key %s", table, strings.Join(pk, ","))
		if err := indexes(ctx, db, add, table, `SELECT name, sql FROM sqlite_master
			WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL`); err != nil {
			return err
		}
		rows, err = db.QueryContext(ctx, `SELECT "from", "table", "to", on_delete FROM pragma_foreign_key_list(?)`, table)
		if err != nil {
			return err
		}
		for rows.Next() {
			var from, ref, to, onDelete string
			if err := rows.Scan(&from, &ref, &to, &onDelete); err != nil {
				return err
			}
			add("%s: foreign key %s references %s(%s) on delete %s", table, from, ref, to, strings.ToLower(onDelete))
		}
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

func describePostgres(ctx context.Context, db *sql.DB, add func(string, ...any)) error {
	tables, err := strings1(ctx, db, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()
		AND table_type = 'BASE TABLE' AND table_name <> 'goose_db_version' AND table_name NOT IN ('email_search', 'sms_search', 'contact_search')
		ORDER BY table_name`)
	if err != nil {
		return err
	}
	for _, table := range tables {
		add("table %s", table)
		rows, err := db.QueryContext(ctx, `SELECT column_name, data_type, is_nullable = 'NO', column_default
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1`, table)
		if err != nil {
			return err
		}
		for rows.Next() {
			var name, typ string
			var notNull bool
			var def sql.NullString
			if err := rows.Scan(&name, &typ, &notNull, &def); err != nil {
				return err
			}
			column(add, table, name, typ, notNull, def)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		pk, err := strings1(ctx, db, `SELECT a.attname FROM pg_index i
			JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
			WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)`, table)
		if err != nil {
			return err
		}
		add("%s: primary key %s", table, strings.Join(pk, ","))
		if err := indexes(ctx, db, add, table, `SELECT c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i
			JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = $1::regclass AND NOT i.indisprimary`); err != nil {
			return err
		}
		defs, err := strings1(ctx, db, `SELECT pg_get_constraintdef(oid) FROM pg_constraint
			WHERE conrelid = $1::regclass AND contype = 'f'`, table)
		if err != nil {
			return err
		}
		for _, def := range defs {
			m := fkRe.FindStringSubmatch(def)
			if m == nil {
				return fmt.Errorf("%s: unreadable foreign key %q", table, def)
			}
			onDelete := m[4]
			if onDelete == "" {
				onDelete = "NO ACTION"
			}
			add("%s: foreign key %s references %s(%s) on delete %s", table, m[1], m[2], m[3], strings.ToLower(onDelete))
		}
	}
	return nil
}

// indexes describes the indexes of table, which query lists as (name,
// CREATE INDEX statement) for the table given as its one argument.
func indexes(ctx context.Context, db *sql.DB, add func(string, ...any), table, query string) error {
	rows, err := db.QueryContext(ctx, query, table)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			return err
		}
		unique, cols, where := indexParts(def)
		add("%s: index %s unique=%v on %s%s", table, name, unique, cols, where)
	}
	return rows.Err()
}

// strings1 reads one string column.
func strings1(ctx context.Context, db *sql.DB, query string, args ...any) ([]string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
