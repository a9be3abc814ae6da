package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/callsign/callsign/core"
)

// Every text value goes to the database through one place: a connector
// that wraps each driver connection and puts every string argument (of
// writes and lookups alike) through core.CleanText, so that a NUL byte or
// invalid UTF-8 from any input (a body, an encoded subject, a form field)
// is stored the same on SQLite and PostgreSQL instead of making
// PostgreSQL refuse the statement. Byte values (a message's raw source)
// pass untouched. What PostgreSQL still refuses as invalid data (SQLSTATE
// class 22) comes back as core.KindInvalid: the caller's input, never a
// reason to retry (451) or an internal error (500).

// cleanDB opens a pool on driverName whose connections clean their arguments.
func cleanDB(driverName, dsn string) (*sql.DB, error) {
	probe, err := sql.Open(driverName, dsn) // finds the driver; connects to nothing
	if err != nil {
		return nil, err
	}
	d := probe.Driver()
	probe.Close()
	var c driver.Connector = dsnConnector{d: d, dsn: dsn}
	if dc, ok := d.(driver.DriverContext); ok {
		if c, err = dc.OpenConnector(dsn); err != nil {
			return nil, err
		}
	}
	return sql.OpenDB(cleanConnector{c}), nil
}

// dsnConnector is a driver without a connector of its own.
type dsnConnector struct {
	d   driver.Driver
	dsn string
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.d }

type cleanConnector struct{ driver.Connector }

func (c cleanConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, unreachable(err)
	}
	return &cleanConn{conn}, nil
}

// cleanConn forwards to the driver's connection what database/sql asks
// of it, with cleaned arguments.
type cleanConn struct{ driver.Conn }

var errNoContext = errors.New("sqlstore: the driver lacks a context-aware method")

func (c *cleanConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	p, ok := c.Conn.(driver.ConnPrepareContext)
	if !ok {
		return nil, errNoContext
	}
	st, err := p.PrepareContext(ctx, query)
	if err != nil {
		return nil, invalidInput(err)
	}
	return &cleanStmt{st}, nil
}

func (c *cleanConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	b, ok := c.Conn.(driver.ConnBeginTx)
	if !ok {
		return nil, errNoContext
	}
	tx, err := b.BeginTx(ctx, opts)
	return tx, unreachable(err)
}

func (c *cleanConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	res, err := e.ExecContext(ctx, query, cleanArgs(args))
	return res, invalidInput(err)
}

func (c *cleanConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	rows, err := q.QueryContext(ctx, query, cleanArgs(args))
	return rows, invalidInput(err)
}

func (c *cleanConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (c *cleanConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *cleanConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *cleanConn) IsValid() bool {
	v, ok := c.Conn.(driver.Validator)
	return !ok || v.IsValid()
}

// cleanStmt is a prepared statement that cleans its arguments.
type cleanStmt struct{ driver.Stmt }

func (s *cleanStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	e, ok := s.Stmt.(driver.StmtExecContext)
	if !ok {
		return nil, errNoContext
	}
	res, err := e.ExecContext(ctx, cleanArgs(args))
	return res, invalidInput(err)
}

func (s *cleanStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.Stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, errNoContext
	}
	rows, err := q.QueryContext(ctx, cleanArgs(args))
	return rows, invalidInput(err)
}

func (s *cleanStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// cleanArgs is args with every text value cleaned; args itself when
// nothing needed it.
func cleanArgs(args []driver.NamedValue) []driver.NamedValue {
	var out []driver.NamedValue
	for i, a := range args {
		clean, changed := cleanValue(a.Value)
		if !changed {
			continue
		}
		if out == nil {
			out = append([]driver.NamedValue(nil), args...)
		}
		out[i].Value = clean
	}
	if out == nil {
		return args
	}
	return out
}

// cleanValue is v cleaned, and whether that changed it: a string through
// core.CleanText. PostgreSQL's driver receives driver.Valuers
// (sql.NullString) as they are, so their text is taken out and cleaned too.
func cleanValue(v any) (any, bool) {
	s, isText := v.(string)
	valued := false
	if valuer, ok := v.(driver.Valuer); ok && !isText {
		inner, err := valuer.Value()
		s, isText = inner.(string)
		valued = err == nil && isText
		isText = valued
	}
	if !isText {
		return v, false
	}
	clean := core.CleanText(s)
	return clean, clean != s || valued
}

// invalidInput turns PostgreSQL's data exceptions (SQLSTATE class 22: a
// value the column cannot hold) into core.KindInvalid. The database's
// wording stays out of the answer.
func invalidInput(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && len(pe.Code) == 5 && pe.Code[:2] == "22" {
		return core.Invalid(core.NonFieldErrors, "A value could not be stored (SQLSTATE %s).", pe.Code)
	}
	return unreachable(err)
}

// errDatabaseDown is what a caller hears while the database cannot be
// reached: 503 with Retry-After over HTTP, 451 over SMTP.
func errDatabaseDown() *core.Error {
	return &core.Error{Kind: core.KindUnavailable, Message: "The database is unavailable; try again shortly.", RetryAfterSeconds: 5}
}

// unreachable marks the failures that mean the database cannot be reached
// (a refused, dropped or timed-out connection; PostgreSQL's connection
// exceptions, SQLSTATE class 08, and its shutdown states) as
// core.KindUnavailable, so no route answers 500 for an outage. The driver's
// error stays joined, for the log and for database/sql, which retries on
// driver.ErrBadConn.
func unreachable(err error) error {
	if err == nil || core.KindOf(err) != core.KindInternal {
		return err
	}
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	var ne net.Error
	down := false
	if errors.As(err, &pe) {
		down = strings.HasPrefix(pe.Code, "08") || slices.Contains([]string{"57P01", "57P02", "57P03", "53300"}, pe.Code)
	} else {
		down = errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, driver.ErrBadConn) ||
			errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) || pgconn.SafeToRetry(err)
	}
	if !down {
		return err
	}
	return errors.Join(errDatabaseDown(), err)
}
