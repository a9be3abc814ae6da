package sqlstore

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
)

// On SQLite, parsing a statement costs about as much as running a small
// one, so statements are prepared once per connection pool and kept:
// reads on the read pool, writes on the single writing connection, where a
// transaction binds them without preparing again. PostgreSQL's driver
// keeps a cache of its own, so there these caches are not used.

// maxCachedStmts bounds a cache; queries are the code's own, so this only
// guards against an unforeseen variety.
const maxCachedStmts = 512

// stmtCache keeps prepared statements of one pool, by rebound query.
type stmtCache struct {
	pool  *sqlx.DB
	stmts sync.Map // query → *sqlx.Stmt
	size  atomic.Int32
}

// get is query's statement, prepared now if it is new; nil when the cache
// is full or preparing fails (the plain query then reports the error).
// The pool must have a connection free: a transaction on SQLite's single
// writer cannot prepare on its pool (see preparedTx).
func (c *stmtCache) get(ctx context.Context, query string) *sqlx.Stmt {
	if s, ok := c.lookup(query); ok {
		return s
	}
	if c.size.Load() >= maxCachedStmts {
		return nil
	}
	s, err := c.pool.PreparexContext(ctx, query)
	if err != nil {
		return nil
	}
	if prev, loaded := c.stmts.LoadOrStore(query, s); loaded {
		s.Close()
		return prev.(*sqlx.Stmt)
	}
	c.size.Add(1)
	return s
}

// lookup is query's statement if it is prepared already.
func (c *stmtCache) lookup(query string) (*sqlx.Stmt, bool) {
	s, ok := c.stmts.Load(query)
	if !ok {
		return nil, false
	}
	return s.(*sqlx.Stmt), true
}

func (c *stmtCache) close() {
	c.stmts.Range(func(_, s any) bool { s.(*sqlx.Stmt).Close(); return true })
}

// preparedTx runs a transaction's queries through the writer's cached
// statements, bound to the transaction. A query the cache lacks is
// prepared in the transaction and, once the writing connection is free
// again, for good (see DB.preparedTx). Without a cache (PostgreSQL) it
// runs plain queries.
type preparedTx struct {
	tx     *sqlx.Tx
	cache  *stmtCache
	bound  map[string]*sqlx.Stmt
	missed []string // queries prepared in the transaction only
}

func (p *preparedTx) stmt(ctx context.Context, query string) (*sqlx.Stmt, error) {
	if s, ok := p.bound[query]; ok {
		return s, nil
	}
	var s *sqlx.Stmt
	if cached, ok := p.cache.lookup(query); ok {
		s = p.tx.StmtxContext(ctx, cached)
	} else {
		var err error
		if s, err = p.tx.PreparexContext(ctx, query); err != nil {
			return nil, err
		}
		p.missed = append(p.missed, query)
	}
	p.bound[query] = s
	return s, nil
}

// ExecContext runs a rebound query in the transaction.
func (p *preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if p.cache == nil {
		return p.tx.ExecContext(ctx, query, args...)
	}
	s, err := p.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

// GetContext reads one row of a rebound query in the transaction.
func (p *preparedTx) GetContext(ctx context.Context, dest any, query string, args ...any) error {
	if p.cache == nil {
		return p.tx.GetContext(ctx, dest, query, args...)
	}
	s, err := p.stmt(ctx, query)
	if err != nil {
		return err
	}
	return s.GetContext(ctx, dest, args...)
}

// SelectContext reads every row of a rebound query in the transaction,
// unprepared: such queries vary with their arguments (IN lists).
func (p *preparedTx) SelectContext(ctx context.Context, dest any, query string, args ...any) error {
	return p.tx.SelectContext(ctx, dest, query, args...)
}

// selectPrepared is SelectContext for a query that does not vary with its
// arguments, through the statement cache: the mail's transaction reads
// its accounts' webhooks once per batch, which SQLite parsed every time.
func (p *preparedTx) selectPrepared(ctx context.Context, dest any, query string, args ...any) error {
	if p.cache == nil {
		return p.tx.SelectContext(ctx, dest, query, args...)
	}
	s, err := p.stmt(ctx, query)
	if err != nil {
		return err
	}
	return s.SelectContext(ctx, dest, args...)
}

// preparedTx runs f in a transaction whose queries go through the writer's
// statement cache on SQLite, and afterwards prepares for good what the
// transaction had to prepare for itself.
func (db *DB) preparedTx(ctx context.Context, f func(tx *preparedTx) error) error {
	var missed []string
	err := db.tx(ctx, func(tx *sqlx.Tx) error {
		p := &preparedTx{tx: tx, cache: db.writes, bound: map[string]*sqlx.Stmt{}}
		defer func() { missed = p.missed }()
		return f(p)
	})
	for _, q := range missed {
		db.writes.get(ctx, q) // a failure here only costs the next transaction a prepare
	}
	return err
}
